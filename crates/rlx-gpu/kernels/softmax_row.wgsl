// Softmax (or log-softmax) over the last axis of a contiguous f32 [rows, cols] tensor: one
// workgroup per row.
//
// Variant defines: LOG (false: softmax, true: log-softmax). Driver defines: PARAMS.
// Bindings: 0 = x (read), 1 = out (read_write). Params: SoftmaxParams.
//
// Three passes over the row, each thread striding by the workgroup size:
// 1. the row maximum (tree-reduced in shared memory), NaN if any element is NaN;
// 2. Σ exp(x − max), tree-reduced the same way;
// 3. out = exp(x − max) / Σ, or x − max − ln Σ for log-softmax.
// Subtracting the maximum keeps exp ≤ 1, so no row overflows. A row of all −inf gives 0/0 =
// NaN, as the reference does. Rows past p.rows (the tail of a 2-D grid) compute nothing, but
// their threads still reach every barrier, which must be in uniform control flow.

const WG: u32 = 256u;
const LOG: bool = {{LOG}};

struct SoftmaxParams {
    rows: u32,
    cols: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
{{PARAMS}} p: SoftmaxParams;

var<workgroup> red: array<f32, 256>;

fn is_nan(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

// max that propagates NaN (WGSL's max may return either operand).
fn max_nan(u: f32, v: f32) -> f32 {
    if (is_nan(u) || is_nan(v)) {
        return u + v;
    }
    return max(u, v);
}

@compute @workgroup_size(256, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let row = wid.y * nwg.x + wid.x;
    let live = row < p.rows;
    let base = row * p.cols;
    let cols = select(0u, p.cols, live);

    // -3.4e38 (the lowest finite f32) instead of -inf, which WGSL cannot spell as a literal;
    // an all -inf row still ends as 0/0 = NaN in pass 3.
    var m = -3.4028234663852886e38;
    for (var i = lid; i < cols; i += WG) {
        m = max_nan(m, x[base + i]);
    }
    red[lid] = m;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) {
            red[lid] = max_nan(red[lid], red[lid + s]);
        }
        workgroupBarrier();
    }
    let row_max = red[0];
    workgroupBarrier();

    var sum = 0.0;
    for (var i = lid; i < cols; i += WG) {
        sum += exp(x[base + i] - row_max);
    }
    red[lid] = sum;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) {
            red[lid] += red[lid + s];
        }
        workgroupBarrier();
    }
    let total = red[0];

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
