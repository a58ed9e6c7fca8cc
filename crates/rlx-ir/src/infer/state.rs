//! The state family: `State` leaves and the op writing them, [`Op::WriteRows`]. That its first operand is a `State`
//! nobody else reads is a whole-graph fact, checked by the verifier (`check_state_write`).

use super::{arity, check_axis, leaf_type, mismatch, want_dtype};
use crate::{DType, IrError, Op, TensorType};

/// A `State` leaf carries its own type; `WriteRows` gets its state's.
pub(super) fn infer(op: &Op, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    match op {
        Op::WriteRows { axis } => write_rows(op.name(), *axis, inputs),
        _ => Err(leaf_type(op.name())),
    }
}

/// `write_rows(state, rows, offset)` along `axis`: the state's type.
fn write_rows(name: &'static str, axis: usize, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    arity(name, inputs, 3)?;
    let (state, rows, offset) = (inputs[0], inputs[1], inputs[2]);
    check_axis(name, &state.shape, axis)?;
    want_dtype(name, 1, rows.dtype, state.dtype)?;
    want_dtype(name, 2, offset.dtype, DType::I32)?;
    let (s, r) = (state.shape.dims(), rows.shape.dims());
    // One offset for every row block, or one per outer index (the dims before `axis`): a
    // batched KV cache [B, C, H, D] written along axis 1 takes offsets [B], one per sequence.
    let outer: usize = s.iter().take(axis).product();
    if offset.shape.rank() != 1 || (offset.numel() != 1 && offset.numel() != outer) {
        return Err(mismatch(
            name,
            inputs,
            format!(
                "the offset must be I32 [1] (one first row for every block) or I32 [{outer}] (one \
                 per index of the dims before axis {axis}, {:?})",
                &s[..axis.min(s.len())]
            ),
        ));
    }
    let fits = s.len() == r.len()
        && s.iter().zip(r).enumerate().all(|(i, (&a, &b))| if i == axis { b <= a } else { a == b });
    if !fits {
        return Err(mismatch(
            name,
            inputs,
            format!(
                "rows must match the state in every dim but axis {axis}, and have at most {} there",
                s.get(axis).copied().unwrap_or(0)
            ),
        ));
    }
    Ok(state.clone())
}
