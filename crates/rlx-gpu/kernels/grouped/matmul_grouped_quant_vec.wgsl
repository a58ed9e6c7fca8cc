// Grouped matrix-vector products on a block-quantized expert stack (decode steps): for every
// slot (token t, choice j), out[t, j, :] = dequant(w[ids[t, j]]) · x[t, j or 0, :], x [T, S, K]
// (S = 1: one row per token shared by its k choices; S = k: one row per choice), w U8
// [E, N, row_bytes] (each expert's N rows of K elements of blocks, GGUF's layout), ids I32
// [T, k]. quant_common.wgsl and one decoder file are appended (see kernels/quant/). The expert
// id is read here, on the device: only the chosen experts' rows are read, and each byte of them
// is decoded in registers, never stored wide. An id outside [0, E) writes zeros and reads no
// weight.
//
// Workgroup: 256 invocations, COLS = 4 weight rows (output columns) of T = 64 invocations each,
// for one slot. Invocation j of a row decodes pieces j, j + T, … (8 weights each; consecutive
// invocations read consecutive bytes of the row) against x's matching two vec4 (K is whole
// blocks, so a multiple of 32 and every x row starts on a vec4); the row's 64 partial sums add
// up in shared memory in a fixed tree, so the result does not depend on timing. Grid: x over
// ⌈N / COLS⌉ row blocks, y · z over the T · k slots (slot = wid.z · groups.y + wid.y).

const COLS: u32 = 4u;
const T: u32 = 64u;

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read> ids: array<i32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
// p: GroupedParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

var<workgroup> red: array<f32, 256>;

@compute @workgroup_size(256, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lt: u32,
) {
    let slot = wid.z * groups.y + wid.y;
    // Uniform per workgroup: a whole workgroup past the last slot leaves before any barrier.
    if (slot >= p.t * p.top) {
        return;
    }
    let col = wid.x * COLS + lt / T;
    let j = lt % T;
    let id = ids[slot];
    let valid = id >= 0 && u32(max(id, 0)) < p.e;
    let tok = slot / p.top;
    let x4 = ((tok * p.s + select(0u, slot % p.top, p.s != 1u)) * p.k) >> 2u;
    var acc = 0.0;
    if (valid && col < p.n) {
        let rb = (u32(id) * p.n + col) * p.row_bytes;
        let pieces = p.k / 8u;
        for (var pc = j; pc < pieces; pc += T) {
            let v = decode8(rb, pc);
            acc += dot(v.lo, x[x4 + 2u * pc]) + dot(v.hi, x[x4 + 2u * pc + 1u]);
        }
    }
    red[lt] = acc;
    workgroupBarrier();
    for (var s = T / 2u; s > 0u; s = s / 2u) {
        if (j < s) {
            red[lt] += red[lt + s];
        }
        workgroupBarrier();
    }
    if (j == 0u && col < p.n) {
        out[slot * p.n + col] = red[lt];
    }
}
