// Softmax (or log-softmax) over the last axis of a contiguous f32 [rows, cols] tensor: one
// workgroup per row.
//
// Variant defines: LOG (false: softmax, true: log-softmax).
// Bindings: 0 = x (read), 1 = out (read_write). Params: SoftmaxParams.
//
// Three passes over the row, each thread striding by the workgroup size:
// 1. the row maximum (the prelude's shared-memory tree), NaN if any element is NaN;
// 2. Σ exp(x − max), tree-reduced the same way;
// 3. out = exp(x − max) / Σ, or x − max − ln Σ for log-softmax.
// Subtracting the maximum keeps exp ≤ 1, so no row overflows. A row of all −inf gives 0/0 =
// NaN, as the reference does. Rows past p.rows (the tail of a 2-D grid) compute nothing, but
// their threads still reach every barrier, which must be in uniform control flow.

const WG: u32 = 256u;
const LOG: bool = {{LOG}};

// p: SoftmaxParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

// One row; the entry point is include/row_main.wgsl.
fn row(lid: u32, base: u32, cols: u32) {

    // -3.4e38 (the lowest finite f32) instead of -inf, which WGSL cannot spell as a literal;
    // an all -inf row still ends as 0/0 = NaN in pass 3.
    var m = -3.4028234663852886e38;
    for (var i = lid; i < cols; i += WG) {
        m = max_nan(m, x[base + i]);
    }
    let row_max = workgroup_max_nan(lid, m);

    var sum = 0.0;
    for (var i = lid; i < cols; i += WG) {
        sum += exp(x[base + i] - row_max);
    }
    let total = workgroup_sum(lid, sum);

    if (LOG) {
        let lse = log(total);
        for (var i = lid; i < cols; i += WG) {
            out[base + i] = (x[base + i] - row_max) - lse;
        }
    } else {
        for (var i = lid; i < cols; i += WG) {
            out[base + i] = exp(x[base + i] - row_max) / total;
        }
    }
}
