// Dequantizing tiled matmul in f32 for many rows of x (prefill): out [M, N] = x [M, K] ·
// dequant(w)ᵀ (quant_common.wgsl and one decoder file are appended). The portable rung: every
// device runs it; the cooperative-matrix rung (matmul_quant_coop.wgsl) is faster where it
// exists.
//
// Workgroup: 16×16 invocations own a 64×64 output tile, 4×4 outputs each. Per step of BK = 32
// along K (K is whole 32-element blocks, so there is no K tail): 64 rows × 32 of x go to shared
// memory (two vec4 loads per invocation), and 64 weight rows × 32 are decoded into shared
// memory, one piece of 8 per invocation, so each weight byte is read once per tile. Both
// tiles are stored k-major ([32][64]) so the inner loop reads a vec4 of each. Rows past M and
// weight rows past N are zeros. Grid: x over ⌈N / 64⌉, y over ⌈M / 64⌉.

const BM: u32 = 64u;
const BK: u32 = 32u;

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
// p: QuantParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

var<workgroup> xs: array<vec4<f32>, 512>; // [BK][BM / 4]
var<workgroup> ws: array<vec4<f32>, 512>; // [BK][BM / 4]

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let n0 = wid.x * BM;
    let m0 = wid.y * BM;
    let tx = t % 16u;
    let ty = t / 16u;
    let k4 = p.k / 4u;
    var acc: array<vec4<f32>, 4>;
    for (var i = 0u; i < 4u; i++) {
        acc[i] = vec4<f32>(0.0);
    }
    // The weight row and piece this invocation decodes.
    let wr = t / 4u;
    let wq = t % 4u;
    let w_ok = n0 + wr < p.n;
    let w_row = (n0 + wr) * p.row_bytes;
    for (var k0 = 0u; k0 < p.k; k0 += BK) {
        for (var i = 0u; i < 2u; i++) {
            let idx = t + 256u * i;
            let r = idx / 8u;
            let c4 = idx % 8u;
            var v = vec4<f32>(0.0);
            if (m0 + r < p.m) {
                v = x[(m0 + r) * k4 + k0 / 4u + c4];
            }
            for (var e = 0u; e < 4u; e++) {
                xs[(c4 * 4u + e) * 16u + r / 4u][r % 4u] = v[e];
            }
        }
        var piece = Piece(vec4<f32>(0.0), vec4<f32>(0.0));
        if (w_ok) {
            piece = decode8(w_row, k0 / 8u + wq);
        }
        for (var e = 0u; e < 4u; e++) {
            ws[(wq * 8u + e) * 16u + wr / 4u][wr % 4u] = piece.lo[e];
            ws[(wq * 8u + 4u + e) * 16u + wr / 4u][wr % 4u] = piece.hi[e];
        }
        workgroupBarrier();
        for (var kk = 0u; kk < BK; kk++) {
            let a = xs[kk * 16u + ty];
            let b = ws[kk * 16u + tx];
            acc[0] += a.x * b;
            acc[1] += a.y * b;
            acc[2] += a.z * b;
            acc[3] += a.w * b;
        }
        workgroupBarrier();
    }
    for (var i = 0u; i < 4u; i++) {
        let m = m0 + ty * 4u + i;
        if (m < p.m) {
            for (var e = 0u; e < 4u; e++) {
                let n = n0 + tx * 4u + e;
                if (n < p.n) {
                    out[m * p.n + n] = acc[i][e];
                }
            }
        }
    }
}
