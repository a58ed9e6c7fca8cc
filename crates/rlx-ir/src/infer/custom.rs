//! The custom family: a user-defined op ([`crate::CustomOp`]) answers with its own shape rule.

use super::{not_in_family, shape_list};
use crate::{IrError, Op, OpFamily, TensorType};

pub(super) fn infer(op: &Op, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    match op {
        Op::Custom(call) => call.op().infer(inputs).map_err(|reason| IrError::Custom {
            op: call.op().name().to_string(),
            shapes: shape_list(inputs),
            reason,
        }),
        _ => Err(not_in_family(op, inputs, OpFamily::Custom)),
    }
}
