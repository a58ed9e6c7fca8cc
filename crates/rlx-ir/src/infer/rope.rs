//! The rope family: rotary position embedding (`Rope`) of a `[B, S, H, D]` operand by cos and
//! sin tables. Shape rule (bandwidth-bound: no flop count).

use super::attention::rank4;
use super::{arity, attr_err, float, mismatch, not_in_family, want_dtype};
use crate::{DType, IrError, Op, OpFamily, TensorType};

pub(super) fn infer(op: &Op, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    let name = op.name();
    match op {
        Op::Rope { layout, rotary_dims, .. } => {
            arity(name, inputs, 3)?;
            let x = inputs[0];
            float(name, 0, x.dtype)?;
            let [_, s, _, d] = rank4(name, "x", x, *layout)?;
            if *rotary_dims == 0 || rotary_dims % 2 != 0 || *rotary_dims > d {
                return Err(attr_err(
                    name,
                    "rotary_dims",
                    &x.shape,
                    format!("rotary_dims = {rotary_dims}; it must be even, ≥ 2 and ≤ head dim {d}"),
                ));
            }
            for i in 1..3 {
                want_dtype(name, i, inputs[i].dtype, DType::F32)?;
                if inputs[i].shape.dims() != [s, rotary_dims / 2] {
                    return Err(mismatch(
                        name,
                        inputs,
                        format!("cos and sin must be [{s}, {}] ([seq, rotary_dims / 2])", rotary_dims / 2),
                    ));
                }
            }
            Ok(x.clone())
        }
        _ => Err(not_in_family(op, inputs, OpFamily::Rope)),
    }
}
