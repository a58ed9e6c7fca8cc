//! The fft family, `Fft`. Shape rule: x F32 `[..., N, 2]` (rows of N complex values as (real, imag) pairs)
//! with N a power of two up to [`FFT_NATIVE_MAX`] → the same type. Messages name the shape and
//! point to `Graph::fft`, which takes every length. And its flop count.

use super::{arity, dims, mismatch, not_in_family, want_dtype};
use crate::{DType, IrError, Op, OpFamily, TensorType, FFT_NATIVE_MAX};

pub(super) fn infer(op: &Op, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    if !matches!(op, Op::Fft { .. }) {
        return Err(not_in_family(op, inputs, OpFamily::Fft));
    }
    let op = op.name();
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

/// A radix-2 FFT of N points: 5·N·log₂N flops per row; out holds 2·N floats per row.
pub(super) fn flops(op: &Op, inputs: &[&TensorType], out: &TensorType) -> f64 {
    let Op::Fft { .. } = op else { return 0.0 };
    let n = dims(inputs, 0).iter().rev().nth(1).copied().unwrap_or(1).max(1) as f64;
    2.5 * out.shape.numel() as f64 * n.log2()
}
