// What the matrix-vector kernels share (matmul_vec.wgsl, one product; matmul_vec_multi.wgsl,
// several weights times one A in one launch): the workgroup layout, one output column's dot
// products with A's rows, and the fixed-order reduction. Appended to both; each defines `p`
// (with fields m, k, a_stride_m, a_stride_k), a4_at / a1_at (A's values: four from a vec4
// index and element k, or one by element index and k) and b4_at / b1_at (the B_LOAD define).
//
// Workgroup: 256 invocations, cols() output columns of col_threads() invocations each: 16 when
// K ≤ 2048 (16 columns), else 64 (4 columns). Invocation j of a column walks K in vec4 steps
// j, j + T, ... (the 16-byte path: K, the row starts and the bases multiples of 4) or element
// by element otherwise, keeping one partial sum per row of A; the column's T partial sums then
// add up in shared memory (a tree: fixed order, so the result does not depend on timing).
// Why two widths: with 64 invocations a column, a K of 896 (Qwen2.5-0.5B's hidden size) left
// each invocation 3.5 loads and the launch spent its time in the six-level reduction; the
// H200 streamed gate and up weights at 1.7 TB/s.

{{B_LOAD}}

const MMAX: u32 = 8u;

// Invocations per output column (T above); the host computes the same (`vec_col_threads`).
fn col_threads() -> u32 {
    return select(64u, 16u, p.k <= 2048u);
}

// Output columns per workgroup.
fn cols() -> u32 {
    return 256u / col_threads();
}

var<workgroup> red: array<f32, 2048>; // [256 invocations][MMAX]

// Invocation j's partial dot products of the weight row starting at element `row` with each
// row of A (A's rows start at a_base, a_base + a_stride_m, ...).
fn row_partials(row: u32, a_base: u32, j: u32) -> array<f32, MMAX> {
    let T = col_threads();
    var acc: array<f32, MMAX>;
    for (var m = 0u; m < MMAX; m++) {
        acc[m] = 0.0;
    }
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
                    acc[m] += dot(w0, a4_at(ar, q)) + dot(w1, a4_at(ar, q + T)) + dot(w2, a4_at(ar, q + 2u * T))
                        + dot(w3, a4_at(ar, q + 3u * T));
                }
            }
        }
        for (; q < k4; q += T) {
            let w = b4_at(b4 + q);
            for (var m = 0u; m < MMAX; m++) {
                if (m < p.m) {
                    acc[m] += dot(w, a4_at((a_base + m * p.a_stride_m) >> 2u, q));
                }
            }
        }
    } else {
        for (var k = j; k < p.k; k += T) {
            let w = b1_at(row + k);
            for (var m = 0u; m < MMAX; m++) {
                if (m < p.m) {
                    let ai = a_base + m * p.a_stride_m + k * p.a_stride_k;
                    acc[m] = fma(w, a1_at(ai, k), acc[m]);
                }
            }
        }
    }
    return acc;
}

// Adds up each column's T partial sums (invocation t = column · T + j holds `acc`); afterwards
// column c's sum for A row m is red[c * T * MMAX + m], that is red[(t - j) * MMAX + m] for
// each invocation of the column. Call in uniform control flow.
fn reduce_columns(t: u32, j: u32, acc: array<f32, MMAX>) {
    let T = col_threads();
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
}
