// Layer norm or RMS norm over the last axis of a contiguous f32 [rows, cols] tensor, of x or of
// x + residual: one workgroup per row.
//
// Variant defines: ADD (true: normalise x + residual), LAYER (true: layer norm with beta,
// false: RMS norm), and the lines that differ with them: RES_DECL and BETA_DECL (a binding's
// declaration, or empty), RES_AT and BETA_AT (bodies of residual_at and beta_at), G_BINDING and
// OUT_BINDING (binding indices).
// Bindings: 0 = x, [residual], gamma, [beta] (read; gamma and beta [cols]), then out
// (read_write). Params: NormParams.
//
// Layer norm, three passes over the row, each thread striding by the workgroup size and every
// sum tree-reduced in shared memory (the prelude's workgroup_sum):
// 1. m0 = Σv / n;
// 2. with d = v − m0: c = Σd / n and var = Σd² / n − c² (the corrected two-pass algorithm:
//    c cancels the rounding error of m0, so a row with a large mean and a small spread keeps
//    its accuracy, which the reference's f64 sums have);
// 3. out = ((v − m0) − c) · 1/sqrt(var + eps) · gamma + beta.
// RMS norm: one reduction, Σv² / n, then out = v · 1/sqrt(ms + eps) · gamma.
// The residual add rounds to f32 before anything else, as the unfused add would. A NaN
// anywhere in a row makes the whole row NaN, as in the reference. Rows past p.rows (the tail
// of a 2-D grid) compute nothing, but their threads still reach every barrier.

const WG: u32 = 256u;
const ADD: bool = {{ADD}};
const LAYER: bool = {{LAYER}};

// p: NormParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

@group(0) @binding(0) var<storage, read> x: array<f32>;
{{RES_DECL}}
@group(0) @binding({{G_BINDING}}) var<storage, read> gamma: array<f32>;
{{BETA_DECL}}
@group(0) @binding({{OUT_BINDING}}) var<storage, read_write> out: array<f32>;

fn residual_at(i: u32) -> f32 {
    {{RES_AT}}
}

fn beta_at(j: u32) -> f32 {
    {{BETA_AT}}
}

fn value(i: u32) -> f32 {
    if (ADD) {
        return x[i] + residual_at(i);
    }
    return x[i];
}

// One row; the entry point is include/row_main.wgsl.
fn row(lid: u32, base: u32, cols: u32) {
    let n = f32(p.cols);

    if (LAYER) {
        var s = 0.0;
        for (var i = lid; i < cols; i += WG) {
            s += value(base + i);
        }
        let m0 = workgroup_sum(lid, s) / n;

        var acc = vec2<f32>(0.0);
        for (var i = lid; i < cols; i += WG) {
            let d = value(base + i) - m0;
            acc += vec2<f32>(d, d * d);
        }
        let sums = workgroup_sum2(lid, acc);
        let c = sums.x / n;
        let var_ = max(sums.y / n - c * c, 0.0);
        let inv = 1.0 / sqrt(var_ + p.eps);
        for (var i = lid; i < cols; i += WG) {
            let d = (value(base + i) - m0) - c;
            out[base + i] = d * inv * gamma[i] + beta_at(i);
        }
    } else {
        var s = 0.0;
        for (var i = lid; i < cols; i += WG) {
            let v = value(base + i);
            s += v * v;
        }
        let ms = workgroup_sum(lid, s) / n;
        let inv = 1.0 / sqrt(ms + p.eps);
        for (var i = lid; i < cols; i += WG) {
            out[base + i] = value(base + i) * inv * gamma[i];
        }
    }
}
