//! Inference for `Fft`: x F32 `[..., N, 2]` (rows of N complex values as (real, imag) pairs)
//! with N a power of two up to [`FFT_NATIVE_MAX`] → the same type. Messages name the shape and
//! point to `Graph::fft`, which takes every length.

use super::{arity, mismatch, want_dtype};
use crate::{DType, IrError, TensorType, FFT_NATIVE_MAX};

pub(super) fn fft(op: &'static str, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    arity(op, inputs, 1)?;
    let x = inputs[0];
    want_dtype(op, 0, x.dtype, DType::F32)?;
    let dims = x.shape.dims();
    let (Some(&2), Some(&n)) = (dims.last(), dims.len().checked_sub(2).and_then(|i| dims.get(i))) else {
        return Err(mismatch(
            op,
            inputs,
            "x must be [..., N, 2]: rows of N complex values stored as (real, imag) in a last axis \
             of 2 (stack a real signal with zeros, or use Graph::rfft)",
        ));
    };
    if !n.is_power_of_two() || n > FFT_NATIVE_MAX {
        return Err(mismatch(
            op,
            inputs,
            format!(
                "the native op takes a power-of-two length N ≤ {FFT_NATIVE_MAX}, got N = {n}; \
                 Graph::fft builds every other length from it"
            ),
        ));
    }
    Ok(x.clone())
}
