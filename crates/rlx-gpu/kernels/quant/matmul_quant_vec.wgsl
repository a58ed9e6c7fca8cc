// Dequantizing matrix-vector product for few rows of x (decode steps): out [M, N] =
// x [M, K] · dequant(w)ᵀ, w U8 [N, row_bytes] of quantized blocks (quant_common.wgsl and one
// decoder file are appended). Memory bound: every weight byte is read once, decoded in
// registers and used for up to MMAX rows of x.
//
// Workgroup: 256 invocations, COLS = 4 weight rows (output columns) of T = 64 invocations
// each. Invocation j of a column decodes pieces j, j + T, … (8 weights each; consecutive
// invocations read consecutive bytes of the row) and keeps one partial sum per row of x; the
// column's 64 partial sums then add up in shared memory in a fixed tree, so the result does
// not depend on timing. Grid: x, y over ⌈N / COLS⌉ (linear), z over ⌈M / MMAX⌉ row chunks.

const COLS: u32 = 4u;
const T: u32 = 64u;
const MMAX: u32 = 8u;

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
// p: QuantParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

var<workgroup> red: array<f32, 2048>; // [256 invocations][MMAX]

@compute @workgroup_size(256, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let col = (wid.y * groups.x + wid.x) * COLS + t / T;
    let j = t % T;
    let row0 = wid.z * MMAX;
    let rows = min(MMAX, p.m - row0);
    let k4 = p.k / 4u;
    var acc: array<f32, MMAX>;
    for (var m = 0u; m < MMAX; m++) {
        acc[m] = 0.0;
    }
    if (col < p.n) {
        let rb = col * p.row_bytes;
        let pieces = p.k / 8u;
        for (var pc = j; pc < pieces; pc += T) {
            let v = decode8(rb, pc);
            for (var m = 0u; m < MMAX; m++) {
                if (m < rows) {
                    let xi = (row0 + m) * k4 + 2u * pc;
                    acc[m] += dot(v.lo, x[xi]) + dot(v.hi, x[xi + 1u]);
                }
            }
        }
    }
    for (var m = 0u; m < MMAX; m++) {
        if (m < rows) {
            red[t * MMAX + m] = acc[m];
        }
    }
    workgroupBarrier();
    for (var s = T / 2u; s > 0u; s = s / 2u) {
        if (j < s) {
            for (var m = 0u; m < MMAX; m++) {
                if (m < rows) {
                    red[t * MMAX + m] += red[(t + s) * MMAX + m];
                }
            }
        }
        workgroupBarrier();
    }
    if (col < p.n && j < rows) {
        out[(row0 + j) * p.n + col] = red[(t - j) * MMAX + j];
    }
}
