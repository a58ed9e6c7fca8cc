//! The random family, `Random`: one U32 [2] key in, F32 of the requested shape out.

use super::{arity, mismatch, not_in_family, want_dtype};
use crate::{DType, IrError, Op, OpFamily, TensorType};

pub(super) fn infer(op: &Op, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    let Op::Random { shape, .. } = op else { return Err(not_in_family(op, inputs, OpFamily::Random)) };
    let name = op.name();
    arity(name, inputs, 1)?;
    want_dtype(name, 0, inputs[0].dtype, DType::U32)?;
    if inputs[0].shape.dims() != [2] {
        return Err(mismatch(
            name,
            inputs,
            "the key must be U32 [2] = [seed, offset]; pass a new offset per run for a new draw",
        ));
    }
    Ok(TensorType::new(shape.clone(), DType::F32))
}
