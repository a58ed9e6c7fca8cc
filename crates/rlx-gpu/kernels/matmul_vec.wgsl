// Matrix-vector products for small M (decode steps, batch-1 heads): C [M, N] = A [M, K] · Bᵀ
// where B is stored [N, K] (b_stride_k = 1, as every linear layer's weight), M ≤ MMAX. Each
// weight row is read once, in 16-byte loads along K, so the launch streams B at memory speed
// instead of spending a 64×64 output tile on a handful of rows. Same params, bindings, batch
// addressing (one batch) and fused epilogue as the other matmul kernels (matmul_common.wgsl and
// matmul_epilogue.wgsl are appended).
//
// Workgroup: 256 invocations, COLS = 4 output columns of T = 64 invocations each. Invocation j
// of a column walks K in vec4 steps j, j + T, ... (the 16-byte path: K, the row starts and the
// bases multiples of 4) or element by element otherwise, keeping one partial sum per row of A;
// the column's 64 partial sums then add up in shared memory (a tree: fixed order, so the result
// does not depend on timing). The grid is 1-D over ⌈N / COLS⌉ workgroups (x, then y).
//
// Variant define B_LOAD: the functions b4_at (four weights from one B element) and b1_at (one
// weight by element index). B is vec4<f32> (f32 weights) or vec2<u32> holding four f16 weights
// (f16 weights, read as they are stored: half the bytes of f32 and no cast launch before).

{{B_LOAD}}

const COLS: u32 = 4u;
const T: u32 = 64u;
const MMAX: u32 = 8u;

var<workgroup> red: array<f32, 2048>; // [256 invocations][MMAX]

@compute @workgroup_size(256, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let bases = batch_bases(0u);
    let a_base = bases.x;
    let b_base = bases.y;
    let c_base = bases.z;
    let col = (wid.y * groups.x + wid.x) * COLS + t / T;
    let j = t % T;
    var acc: array<f32, MMAX>;
    for (var m = 0u; m < MMAX; m++) {
        acc[m] = 0.0;
    }
    if (col < p.n) {
        let row = b_base + col * p.b_stride_n;
        let vec_ok = p.k % 4u == 0u && row % 4u == 0u && p.a_stride_k == 1u && a_base % 4u == 0u
            && p.a_stride_m % 4u == 0u;
        if (vec_ok) {
            let k4 = p.k / 4u;
            let b4 = row >> 2u;
            // Four 16-byte weight loads in flight per invocation, then the tail one at a time.
            var q = j;
            for (; q + 3u * T < k4; q += 4u * T) {
                let w0 = b4_at(b4 + q);
                let w1 = b4_at(b4 + q + T);
                let w2 = b4_at(b4 + q + 2u * T);
                let w3 = b4_at(b4 + q + 3u * T);
                for (var m = 0u; m < MMAX; m++) {
                    if (m < p.m) {
                        let ar = (a_base + m * p.a_stride_m) >> 2u;
                        acc[m] += dot(w0, a[ar + q]) + dot(w1, a[ar + q + T]) + dot(w2, a[ar + q + 2u * T])
                            + dot(w3, a[ar + q + 3u * T]);
                    }
                }
            }
            for (; q < k4; q += T) {
                let w = b4_at(b4 + q);
                for (var m = 0u; m < MMAX; m++) {
                    if (m < p.m) {
                        acc[m] += dot(w, a[((a_base + m * p.a_stride_m) >> 2u) + q]);
                    }
                }
            }
        } else {
            for (var k = j; k < p.k; k += T) {
                let bi = row + k;
                let w = b1_at(bi);
                for (var m = 0u; m < MMAX; m++) {
                    if (m < p.m) {
                        let ai = a_base + m * p.a_stride_m + k * p.a_stride_k;
                        acc[m] = fma(w, a[ai >> 2u][ai & 3u], acc[m]);
                    }
                }
            }
        }
    }
    // Only the rows A has: with one row (a decode step) the tree moves one value per step.
    for (var m = 0u; m < MMAX; m++) {
        if (m < p.m) {
            red[t * MMAX + m] = acc[m];
        }
    }
    workgroupBarrier();
    for (var s = T / 2u; s > 0u; s = s / 2u) {
        if (j < s) {
            for (var m = 0u; m < MMAX; m++) {
                if (m < p.m) {
                    red[t * MMAX + m] += red[(t + s) * MMAX + m];
                }
            }
        }
        workgroupBarrier();
    }
    if (col < p.n && j < p.m) {
        c[c_base + j * p.n + col] = epilogue(red[(t - j) * MMAX + j], col);
    }
}
