//! Device-resident state: `WriteRows`, rows written into a state at a run-time offset.

use crate::elem::{elems, invalid, tensor, with_elem, Elem};
use crate::index::split_at_axis;
use rlx_backend::BackendError;
use rlx_ir::Tensor;

/// `state` with `rows` written from position `offset[0]` along `axis` (row block `o` of the dims
/// before `axis` from `offset[o]` when the offset has one entry per block); rows that land
/// outside `[0, state.dims[axis])` are dropped (the GPU kernels drop them too).
pub fn write_rows(
    axis: usize,
    state: &Tensor,
    rows: &Tensor,
    offset: &Tensor,
) -> Result<Tensor, BackendError> {
    const OP: &str = "write_rows";
    let offsets = elems::<i32>(offset, OP)?;
    let (outer, cap, inner) = split_at_axis(state.dims(), axis);
    // One offset for all blocks, or one per block (the verifier allows nothing else).
    let per_block = offsets.len() == outer && outer != 1;
    let n = rows.dims().get(axis).copied().unwrap_or(0);
    if rows.dtype() != state.dtype() || rows.numel() != outer * n * inner {
        return Err(invalid(OP, format!("rows {} do not fit state {}", rows.shape(), state.shape())));
    }
    with_elem!(state.dtype(), T => {
        let mut data = elems::<T>(state, OP)?.to_vec();
        let src = elems::<T>(rows, OP)?;
        for o in 0..outer {
            let at = offsets.get(if per_block { o } else { 0 }).copied().map_or(0, i64::from);
            for t in 0..n {
                let Ok(pos) = usize::try_from(at + t as i64) else { continue };
                if pos >= cap {
                    continue;
                }
                let from = (o * n + t) * inner;
                let to = (o * cap + pos) * inner;
                data[to..to + inner].copy_from_slice(&src[from..from + inner]);
            }
        }
        tensor(state.shape(), T::wrap(data))
    })
}
