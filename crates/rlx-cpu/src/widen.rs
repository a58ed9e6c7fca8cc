//! U8 arithmetic: computed in i32, saturated back to 0..=255.
//!
//! The rule: an op that computes new values from u8 operands (add, sum, cumsum, …) casts them
//! to i32, runs the i32 op (wrapping, x / 0 = 0, as every i32 op does) and casts the result
//! back with the saturating cast. On 0..=255 operands add, sub, mul, div, max and min cannot
//! wrap in i32, so they are exact and then clamped (200 + 100 = 255, 3 − 5 = 0); sums, products
//! and powers that wrap in i32 keep the wrapped value's clamp. It is the same graph rewrite that
//! rlx-opt applies for GPUs (whose kernels compute in 32-bit words), written once here so that
//! the reference and the devices agree by construction.
//!
//! Ops that only move or pick values (shape ops, gather, where, compare, arg-reduce, top-k) and
//! the cast run on u8 directly.

use crate::eval::compute;
use crate::ops::cast::cast;
use rlx_backend::BackendError;
use rlx_ir::{DType, Op, Tensor, TensorType};
use std::borrow::Cow;

/// Whether `op` on these operands computes through i32 (see the module doc).
pub(crate) fn through_i32(op: &Op, inputs: &[&Tensor], out: &TensorType) -> bool {
    let moves_values = op.is_leaf()
        || matches!(
            op,
            Op::Cast(_)
                | Op::Reshape(_)
                | Op::Permute(_)
                | Op::Slice { .. }
                | Op::Concat { .. }
                | Op::Expand(_)
                | Op::Gather { .. }
                | Op::Pad { .. }
                | Op::Reverse { .. }
                | Op::Upsample2x
                | Op::Where
                | Op::Compare(_)
                | Op::ArgReduce { .. }
                | Op::TopK { .. }
        );
    // Packed quantized blocks (U8) are decoded by the op itself, never widened.
    let packed = op.packed_operand();
    !moves_values
        && (out.dtype == DType::U8
            || inputs.iter().enumerate().any(|(j, t)| Some(j) != packed && t.dtype() == DType::U8))
}

/// `op` computed with every u8 operand widened to i32 and a u8 result cast back.
pub(crate) fn compute_through_i32(
    op: &Op,
    inputs: &[&Tensor],
    out: &TensorType,
) -> Result<Tensor, BackendError> {
    let wide: Vec<Cow<'_, Tensor>> = inputs
        .iter()
        .map(|&t| match t.dtype() {
            DType::U8 => cast(t, &TensorType::new(t.shape().clone(), DType::I32)).map(Cow::Owned),
            _ => Ok(Cow::Borrowed(t)),
        })
        .collect::<Result<_, _>>()?;
    let refs: Vec<&Tensor> = wide.iter().map(|t| t.as_ref()).collect();
    if out.dtype != DType::U8 {
        return compute(op, &refs, out);
    }
    let r = compute(op, &refs, &TensorType::new(out.shape.clone(), DType::I32))?;
    cast(&r, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rlx_ir::{BinaryOp, ReduceOp};

    fn u8s(v: &[u8]) -> Tensor {
        Tensor::from_u8([v.len()], v.to_vec()).unwrap()
    }

    #[test]
    fn u8_arithmetic_saturates() {
        let (a, b) = (u8s(&[200, 3, 7, 255, 9]), u8s(&[100, 5, 2, 255, 0]));
        let ty = TensorType::new([5], DType::U8);
        let run = |op| compute(&Op::Binary(op), &[&a, &b], &ty).unwrap().into_data();
        assert_eq!(run(BinaryOp::Add), rlx_ir::TensorData::U8(vec![255, 8, 9, 255, 9]));
        assert_eq!(run(BinaryOp::Sub), rlx_ir::TensorData::U8(vec![100, 0, 5, 0, 9]));
        assert_eq!(run(BinaryOp::Mul), rlx_ir::TensorData::U8(vec![255, 15, 14, 255, 0]));
        assert_eq!(run(BinaryOp::Div), rlx_ir::TensorData::U8(vec![2, 0, 3, 1, 0]));
        let sum = Op::Reduce { op: ReduceOp::Sum, axes: vec![0], keepdim: false };
        let s = compute(&sum, &[&a], &TensorType::new([0usize; 0], DType::U8)).unwrap();
        assert_eq!(s.into_data(), rlx_ir::TensorData::U8(vec![255]));
    }

    #[test]
    fn only_value_computing_ops_widen() {
        let a = u8s(&[1, 2]);
        let ty = TensorType::new([2], DType::U8);
        assert!(through_i32(&Op::Binary(BinaryOp::Add), &[&a, &a], &ty));
        assert!(!through_i32(&Op::Reverse { axes: vec![0] }, &[&a], &ty));
        assert!(!through_i32(&Op::Cast(DType::U8), &[&a], &ty));
        let f = Tensor::from_f32([2], vec![1.0, 2.0]).unwrap();
        assert!(!through_i32(&Op::Binary(BinaryOp::Add), &[&f, &f], &TensorType::new([2], DType::F32)));
    }
}
