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
mod elementwise;
mod elementwise_edges;
mod fft;
mod grid;
mod grouped;
mod matmul;
mod matmul_edges;
mod matmul_groups;
mod matmul_rungs;
mod models;
mod norm;
mod norm_edges;
mod quant;
mod quant_formats;
mod random;
mod recurrent;
mod reduce;
mod reduce_edges;
mod rope;
mod shape;
mod shape_edges;
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
/// sampling.
pub fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    elementwise::cases(&mut out);
    reduce::cases(&mut out);
    shape::cases(&mut out);
    matmul::cases(&mut out);
    matmul_groups::cases(&mut out);
    matmul_rungs::cases(&mut out);
    quant::cases(&mut out);
    quant_formats::cases(&mut out);
    grouped::cases(&mut out);
    ssm::cases(&mut out);
    ssd::cases(&mut out);
    fft::cases(&mut out);
    norm::cases(&mut out);
    attention::cases(&mut out);
    rope::cases(&mut out);
    attention_rungs::cases(&mut out);
    state::cases(&mut out);
    attention_kv_cache::cases(&mut out);
    conv::cases(&mut out);
    conv_variants::cases(&mut out);
    recurrent::cases(&mut out);
    models::cases(&mut out);
    boundaries::cases(&mut out);
    elementwise_edges::cases(&mut out);
    shape_edges::cases(&mut out);
    reduce_edges::cases(&mut out);
    matmul_edges::cases(&mut out);
    norm_edges::cases(&mut out);
    attention_edges::cases(&mut out);
    rope::edge_cases(&mut out);
    wiring::cases(&mut out);
    grid::cases(&mut out);
    cast::cases(&mut out);
    random::cases(&mut out);
    custom::cases(&mut out);
    out
}

/// The heaviest realistic workload of each op family, kept out of the parity table (too big for
/// CI's CPU reference): `rlx bench --workload ops` times them on a device and
/// `scripts/check_ops_gpu_host.py --bench` times torch on the same data (`parity --bench-cases
/// --dump`). Names start `bench_`.
pub fn bench_cases() -> Vec<Case> {
    let mut out = Vec::new();
    conv::bench_cases(&mut out);
    quant_formats::bench_cases(&mut out);
    fft::bench_cases(&mut out);
    conv_variants::bench_cases(&mut out);
    recurrent::bench_cases(&mut out);
    ssm::bench_cases(&mut out);
    out
}

/// `v` with a NaN at index 1 and then every `period` elements.
pub(crate) fn with_nans(mut v: Vec<f32>, period: usize) -> Vec<f32> {
    for x in v.iter_mut().skip(1).step_by(period.max(1)) {
        *x = f32::NAN;
    }
    v
}
