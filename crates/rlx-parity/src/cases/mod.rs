//! The parity table, one file per op family (`<family>.rs`, named as in rlx-ir's `OpFamily`),
//! extra files `<family>_<what>.rs` (edges, rungs, variants), composites under their own names
//! (recurrent, ssd) and cross-family files under descriptive ones (boundaries, wiring, grid,
//! models).

mod attention;
mod attention_edges;
mod attention_kv_cache;
mod attention_rungs;
mod boundaries;
mod cast;
mod conv;
mod conv_variants;
mod custom;
mod decode_batch;
mod elementwise;
mod elementwise_edges;
mod fft;
mod fused;
mod grad;
mod grad_attention;
mod grid;
mod grouped;
mod grouped_quant;
mod matmul;
mod matmul_edges;
mod matmul_groups;
mod matmul_rungs;
mod models;
mod norm;
mod norm_edges;
mod optim;
mod quant;
mod quant_formats;
mod random;
mod recurrent;
mod reduce;
mod reduce_edges;
mod rope;
mod shape;
mod shape_edges;
mod shape_scatter;
mod ssd;
mod ssm;
mod state;
mod wiring;

use crate::Case;

pub use custom::{knn_op, KNN_MAX_K};
pub use matmul_rungs::F16_OPERANDS_TOL;

/// Every case, in family order: elementwise, reduce, shape, matmul, norm, attention and rope,
/// vision, convolution variants and resizing, recurrent layers, whole layers, size and rank
/// boundaries, special values and dtype edges per family, graph wiring, launch-grid edges,
/// typed storage (casts between every dtype, f16/bf16/u8 graphs), random numbers and token
/// sampling, custom ops, gradients (forward + backward graphs), losses and optimizer steps.
pub fn cases() -> Vec<Case> {
    gather(&[
        elementwise::cases,
        reduce::cases,
        shape::cases,
        shape_scatter::cases,
        matmul::cases,
        matmul_groups::cases,
        matmul_rungs::cases,
        quant::cases,
        quant_formats::cases,
        grouped::cases,
        grouped_quant::cases,
        ssm::cases,
        ssd::cases,
        fft::cases,
        norm::cases,
        attention::cases,
        rope::cases,
        attention_rungs::cases,
        state::cases,
        attention_kv_cache::cases,
        conv::cases,
        conv_variants::cases,
        recurrent::cases,
        models::cases,
        decode_batch::cases,
        boundaries::cases,
        elementwise_edges::cases,
        fused::cases,
        shape_edges::cases,
        reduce_edges::cases,
        matmul_edges::cases,
        norm_edges::cases,
        attention_edges::cases,
        rope::edge_cases,
        wiring::cases,
        grid::cases,
        cast::cases,
        random::cases,
        custom::cases,
        grad::cases,
        optim::cases,
    ])
}

/// The heaviest realistic workload of each op family, kept out of the parity table (too big for
/// CI's CPU reference): `rlx bench --workload ops` times them on a device and
/// `scripts/check_ops_gpu_host.py --bench` times torch on the same data (`parity --bench-cases
/// --dump`). Names start `bench_`.
pub fn bench_cases() -> Vec<Case> {
    gather(&[
        conv::bench_cases,
        quant_formats::bench_cases,
        fft::bench_cases,
        conv_variants::bench_cases,
        recurrent::bench_cases,
        ssm::bench_cases,
    ])
}

/// The cases that each of `parts` pushes, in order.
fn gather(parts: &[fn(&mut Vec<Case>)]) -> Vec<Case> {
    let mut out = Vec::new();
    for part in parts {
        part(&mut out);
    }
    out
}

/// `v` with a NaN at index 1 and then every `period` elements.
pub(crate) fn with_nans(mut v: Vec<f32>, period: usize) -> Vec<f32> {
    for x in v.iter_mut().skip(1).step_by(period.max(1)) {
        *x = f32::NAN;
    }
    v
}
