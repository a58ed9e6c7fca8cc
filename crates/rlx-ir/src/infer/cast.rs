//! The cast family: `Cast` to any dtype, shape unchanged.

use super::{arity, not_in_family};
use crate::{IrError, Op, OpFamily, TensorType};

pub(super) fn infer(op: &Op, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    let name = op.name();
    match op {
        Op::Cast(d) => {
            arity(name, inputs, 1)?;
            Ok(TensorType::new(inputs[0].shape.clone(), *d))
        }
        _ => Err(not_in_family(op, inputs, OpFamily::Cast)),
    }
}
