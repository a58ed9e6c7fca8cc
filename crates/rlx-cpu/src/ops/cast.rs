//! `Cast` between any two dtypes, through f64 (which holds every dtype's values exactly).

use crate::elem::tensor;
use rlx_backend::BackendError;
use rlx_ir::{Tensor, TensorData, TensorType};

/// Conversion to `out.dtype`: floats round to nearest, ties to even (once, however narrow the
/// target), integers truncate toward zero and saturate (NaN → 0; u8 to 0..=255), bool is
/// `x != 0`, and bool → number is 0/1. Every dtype widens to f64 exactly, so going through it
/// rounds only once.
pub fn cast(x: &Tensor, out: &TensorType) -> Result<Tensor, BackendError> {
    if x.dtype() == out.dtype {
        return tensor(&out.shape, x.data().clone());
    }
    tensor(&out.shape, TensorData::from_f64(out.dtype, &x.to_f64_vec()))
}
