//! The parity table, one file per op family.

mod attention;
mod boundaries;
mod elementwise;
mod grid;
mod matmul;
mod models;
mod norm;
mod reduce;
mod shape;
mod vision;
mod wiring;

use crate::Case;

/// Every case, in family order: elementwise, reduce, shape, matmul, norm, attention and rope,
/// vision, whole layers, size and rank boundaries, graph wiring, launch-grid edges.
pub fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    elementwise::cases(&mut out);
    reduce::cases(&mut out);
    shape::cases(&mut out);
    matmul::cases(&mut out);
    norm::cases(&mut out);
    attention::cases(&mut out);
    vision::cases(&mut out);
    models::cases(&mut out);
    boundaries::cases(&mut out);
    wiring::cases(&mut out);
    grid::cases(&mut out);
    out
}

/// `v` with a NaN at index 1 and then every `period` elements.
pub(crate) fn with_nans(mut v: Vec<f32>, period: usize) -> Vec<f32> {
    for x in v.iter_mut().skip(1).step_by(period.max(1)) {
        *x = f32::NAN;
    }
    v
}
