//! The norm family: `LayerNorm`, `RmsNorm`, the fused `AddNorm`, `Softmax` and `LogSoftmax`,
//! all over the last axis. Shape rule (bandwidth-bound: no flop count).

use super::broadcast_shapes;
use super::{arity, attr_err, float, mismatch, not_in_family, same_dtype};
use crate::{IrError, NormKind, Op, OpFamily, Shape, TensorType};

pub(super) fn infer(op: &Op, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    let name = op.name();
    match op {
        Op::LayerNorm { eps } | Op::RmsNorm { eps } => {
            let n_in = if matches!(op, Op::LayerNorm { .. }) { 3 } else { 2 };
            arity(name, inputs, n_in)?;
            check_eps(name, &inputs[0].shape, *eps)?;
            norm_params(name, inputs, 0, 1)?;
            Ok(inputs[0].clone())
        }
        Op::AddNorm { norm, eps } => {
            let n_in = if *norm == NormKind::LayerNorm { 4 } else { 3 };
            arity(name, inputs, n_in)?;
            check_eps(name, &inputs[0].shape, *eps)?;
            same_dtype(name, inputs, 0, 1)?;
            let s = broadcast_shapes(name, &inputs[0].shape, &inputs[1].shape)?;
            let x = TensorType::new(s, inputs[0].dtype);
            let mut rest: Vec<&TensorType> = vec![&x];
            rest.extend_from_slice(&inputs[2..]);
            norm_params(name, &rest, 0, 1).map_err(|e| match e {
                IrError::ShapeMismatch { reason, .. } => mismatch(name, inputs, reason),
                IrError::DType { op, operand, got, expected } => {
                    IrError::DType { op, operand: operand + 1, got, expected }
                }
                other => other,
            })?;
            Ok(x)
        }
        Op::Softmax | Op::LogSoftmax => {
            arity(name, inputs, 1)?;
            float(name, 0, inputs[0].dtype)?;
            if inputs[0].shape.rank() == 0 {
                return Err(attr_err(
                    name,
                    "rank",
                    &inputs[0].shape,
                    "needs rank ≥ 1; reshape the scalar to [1]",
                ));
            }
            Ok(inputs[0].clone())
        }
        _ => Err(not_in_family(op, inputs, OpFamily::Norm)),
    }
}

fn check_eps(name: &'static str, shape: &Shape, eps: f32) -> Result<(), IrError> {
    if !(eps.is_finite() && eps >= 0.0) {
        return Err(attr_err(
            name,
            "eps",
            shape,
            format!("eps = {eps}; use a finite value ≥ 0 such as 1e-5"),
        ));
    }
    Ok(())
}

/// `inputs[x]` is float with rank ≥ 1; every operand after it is 1-D of its last dim, same dtype.
fn norm_params(name: &'static str, inputs: &[&TensorType], x: usize, first: usize) -> Result<(), IrError> {
    let xt = inputs[x];
    float(name, x, xt.dtype)?;
    if xt.shape.rank() == 0 {
        return Err(attr_err(name, "rank", &xt.shape, "needs rank ≥ 1; reshape the scalar to [1]"));
    }
    let last = xt.shape.last();
    for i in first..inputs.len() {
        same_dtype(name, inputs, x, i)?;
        if inputs[i].shape.dims() != [last] {
            return Err(mismatch(
                name,
                inputs,
                format!("gamma/beta must be 1-D [{last}], the size of the normalised last axis"),
            ));
        }
    }
    Ok(())
}
