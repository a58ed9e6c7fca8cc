//! The elementwise family: `Unary`, `Binary`, `Compare`, `Where` (numpy broadcasting) and the
//! fused `FusedElementwise` program made by rlx-opt. Shape rule (bandwidth-bound: no flop count).

use super::broadcast_shapes;
use super::{arity, attr_err, mismatch, not_in_family, numeric, same_dtype, unary_dtype, want_dtype};
use crate::{DType, IrError, Op, OpFamily, Shape, TensorType};

pub(super) fn infer(op: &Op, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    let name = op.name();
    match op {
        Op::Unary(u) => {
            arity(name, inputs, 1)?;
            unary_dtype(name, *u, 0, inputs[0].dtype)?;
            Ok(inputs[0].clone())
        }
        Op::Binary(_) => {
            arity(name, inputs, 2)?;
            numeric(name, 0, inputs[0].dtype)?;
            same_dtype(name, inputs, 0, 1)?;
            let shape = broadcast_shapes(name, &inputs[0].shape, &inputs[1].shape)?;
            Ok(TensorType::new(shape, inputs[0].dtype))
        }
        Op::Compare(_) => {
            arity(name, inputs, 2)?;
            same_dtype(name, inputs, 0, 1)?;
            let shape = broadcast_shapes(name, &inputs[0].shape, &inputs[1].shape)?;
            Ok(TensorType::new(shape, DType::Bool))
        }
        Op::Where => {
            arity(name, inputs, 3)?;
            want_dtype(name, 0, inputs[0].dtype, DType::Bool)?;
            same_dtype(name, inputs, 1, 2)?;
            let s = broadcast_shapes(name, &inputs[0].shape, &inputs[1].shape)?;
            let s = broadcast_shapes(name, &s, &inputs[2].shape).map_err(|_| {
                mismatch(name, inputs, "cond, a and b must broadcast together; expand or reshape one")
            })?;
            Ok(TensorType::new(s, inputs[1].dtype))
        }
        Op::FusedElementwise(prog) => {
            for (i, t) in inputs.iter().enumerate() {
                if t.dtype != DType::Bool {
                    want_dtype(name, i, t.dtype, DType::F32)?;
                }
            }
            let mut shape = Shape::scalar();
            for t in inputs {
                shape = broadcast_shapes(name, &shape, &t.shape).map_err(|_| {
                    mismatch(name, inputs, "the inputs of a fused elementwise node must broadcast together")
                })?;
            }
            let dtypes: Vec<DType> = inputs.iter().map(|t| t.dtype).collect();
            prog.check(&dtypes).map_err(|reason| attr_err(name, "program", &shape, reason))?;
            Ok(TensorType::new(shape, DType::F32))
        }
        _ => Err(not_in_family(op, inputs, OpFamily::Elementwise)),
    }
}
