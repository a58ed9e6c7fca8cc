// Expert-major grouped matmul on a block-quantized expert stack, for many tokens (prefill):
// same op, params and bindings as matmul_grouped_quant_vec.wgsl (out[t, j, :] =
// dequant(w[ids[t, j]]) · x[t, j or 0, :], w U8 [E, N, row_bytes]), with quant_common.wgsl and
// one decoder file appended (see kernels/quant/). Each workgroup owns one expert and one block
// of BN output rows, so each weight tile is decoded once per chunk of up to BM slots that chose
// the expert, and experts no slot chose are never read.
//
// Grid: x over the E experts, y over ⌈N / BN⌉ row blocks. The workgroup scans the ids SCAN slots
// at a time; the slots of its expert are appended to a list in shared memory (a workgroup
// atomic gives each its place, so the list's order varies, but every output element is one dot
// in a fixed K order: results do not depend on it). The list is then computed in chunks of BM
// slots as a small tiled matmul: BM slots × BN rows, K in steps of BK = 16 staged in shared
// memory (K is whole blocks of 32, so there is no K tail): x four elements per invocation, the
// weights one piece of 8 decoded by each of the first 128 invocations; each invocation then
// computes 4 × 4 outputs. Slots whose id is outside [0, E) belong to no expert: the expert-0
// workgroups write their zeros.

const BM: u32 = 64u;
const BN: u32 = 64u;
const BK: u32 = 16u;
const SCAN: u32 = 256u;

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read> ids: array<i32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
// p: GroupedParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

var<workgroup> count: atomic<u32>;
var<workgroup> found_n: u32;
var<workgroup> list: array<u32, SCAN>;
var<workgroup> xs: array<f32, 1024>; // [BM slots][BK]
var<workgroup> ws: array<f32, 1024>; // [BN rows][BK]

fn x_at(i: u32) -> f32 {
    return x[i >> 2u][i & 3u];
}

// The first element of slot's row of x.
fn x_row(slot: u32) -> u32 {
    let tok = slot / p.top;
    return (tok * p.s + select(0u, slot % p.top, p.s != 1u)) * p.k;
}

@compute @workgroup_size(256, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lt: u32,
) {
    let expert = wid.x;
    let n0 = wid.y * BN;
    let slots = p.t * p.top;
    let tx = lt % 16u; // 4 output rows each
    let ty = lt / 16u; // 4 slots each
    for (var base = 0u; base < slots; base += SCAN) {
        if (lt == 0u) {
            atomicStore(&count, 0u);
        }
        workgroupBarrier();
        let slot = base + lt;
        if (slot < slots) {
            let id = ids[slot];
            if (id == i32(expert)) {
                list[atomicAdd(&count, 1u)] = slot;
            } else if (expert == 0u && (id < 0 || u32(max(id, 0)) >= p.e)) {
                for (var c = n0; c < min(n0 + BN, p.n); c++) {
                    out[slot * p.n + c] = 0.0;
                }
            }
        }
        workgroupBarrier();
        if (lt == 0u) {
            found_n = atomicLoad(&count);
        }
        let found = workgroupUniformLoad(&found_n);
        for (var m0 = 0u; m0 < found; m0 += BM) {
            let rows = min(BM, found - m0);
            var acc: array<f32, 16>;
            for (var i = 0u; i < 16u; i++) {
                acc[i] = 0.0;
            }
            for (var k0 = 0u; k0 < p.k; k0 += BK) {
                // 1024 x elements, 4 each; slots past the chunk are 0.
                for (var q = 0u; q < 4u; q++) {
                    let e = lt + q * 256u;
                    let r = e / BK;
                    var xv = 0.0;
                    if (r < rows) {
                        xv = x_at(x_row(list[m0 + r]) + k0 + e % BK);
                    }
                    xs[e] = xv;
                }
                // 64 rows × 2 pieces of 8 weights, one piece each; rows past N are 0.
                if (lt < 2u * BN) {
                    let r = lt / 2u;
                    let hp = lt % 2u;
                    var v = Piece(vec4<f32>(0.0), vec4<f32>(0.0));
                    if (n0 + r < p.n) {
                        v = decode8((expert * p.n + n0 + r) * p.row_bytes, k0 / 8u + hp);
                    }
                    let at = r * BK + hp * 8u;
                    for (var i = 0u; i < 4u; i++) {
                        ws[at + i] = v.lo[i];
                        ws[at + 4u + i] = v.hi[i];
                    }
                }
                workgroupBarrier();
                for (var kk = 0u; kk < BK; kk++) {
                    for (var i = 0u; i < 4u; i++) {
                        let a = xs[(ty * 4u + i) * BK + kk];
                        for (var j = 0u; j < 4u; j++) {
                            acc[i * 4u + j] = fma(a, ws[(tx * 4u + j) * BK + kk], acc[i * 4u + j]);
                        }
                    }
                }
                workgroupBarrier();
            }
            for (var i = 0u; i < 4u; i++) {
                let r = ty * 4u + i;
                if (r < rows) {
                    let slot_out = list[m0 + r] * p.n;
                    for (var j = 0u; j < 4u; j++) {
                        let col = n0 + tx * 4u + j;
                        if (col < p.n) {
                            out[slot_out + col] = acc[i * 4u + j];
                        }
                    }
                }
            }
        }
        // The list is rewritten by the next scan only after every reader is done.
        workgroupBarrier();
    }
}
