{{ENABLE_F16}}
// Grouped matrix-vector products: the experts of a mixture-of-experts layer. For every slot
// (token t, choice j): out[t, j, :] = w[ids[t, j]] · x[t, j or 0, :], x [T, S, K] (S = 1: one
// row per token shared by its k choices; S = k: one row per choice), w [E, N, K] (each expert's
// matrix out × in), ids I32 [T, k]. The expert id is read here, on the device: the host never
// sees the router's choice. An id outside [0, E) writes zeros and reads no weight.
//
// Workgroup: 256 invocations, COLS = 4 output rows of T = 64 invocations each, for one slot.
// Invocation j of a row walks K in vec4 steps j, j + T, … (K a multiple of 4, so every row and
// x row starts on a vec4) or element by element otherwise; the row's 64 partial sums add up in
// shared memory in a fixed tree, so the result does not depend on timing. Grid: x over
// ⌈N / COLS⌉ row blocks, y · z over the T · k slots (slot = wid.z · groups.y + wid.y).
//
// The params, bindings and weight loads (b4_at, b1_at) are in include/grouped_common.wgsl.


const COLS: u32 = 4u;
const T: u32 = 64u;


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
    let xrow = (tok * p.s + select(0u, slot % p.top, p.s != 1u)) * p.k;
    var acc = 0.0;
    if (valid && col < p.n) {
        let row = (u32(id) * p.n + col) * p.k;
        if (p.k % 4u == 0u) {
            let w4 = row >> 2u;
            let x4 = xrow >> 2u;
            let k4 = p.k / 4u;
            // Two 16-byte weight loads in flight per invocation, then the tail.
            var q = j;
            for (; q + T < k4; q += 2u * T) {
                let a = b4_at(w4 + q);
                let b = b4_at(w4 + q + T);
                acc += dot(a, x[x4 + q]) + dot(b, x[x4 + q + T]);
            }
            for (; q < k4; q += T) {
                acc += dot(b4_at(w4 + q), x[x4 + q]);
            }
        } else {
            for (var kk = j; kk < p.k; kk += T) {
                let xi = xrow + kk;
                acc = fma(b1_at(row + kk), x[xi >> 2u][xi & 3u], acc);
            }
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
