//! Lowering of state writes: `WriteRows` becomes one `write_rows.wgsl` launch that writes the
//! rows into the state's own leaf buffer. The node's value *is* that buffer (the memory plan
//! aliases it, like a view), so every later reader sees the write, and the dependency analysis
//! orders them after it because they read the range it wrote.

use super::shape::split_at_axis;
use super::{LowerCtx, Site};
use crate::catalog::state::params::WriteRowsParams;
use crate::catalog::state::StateKernel;
use crate::schedule::Dispatch;
use crate::{GpuError, KernelKey};
use rlx_ir::Op;

pub(super) fn lower(cx: &mut LowerCtx, at: &Site, out: &mut Vec<Dispatch>) -> Result<(), GpuError> {
    let (Op::WriteRows { axis }, &[state, rows, offset]) = (&at.node.op, at.node.inputs.as_slice()) else {
        return Err(at.bad("not a 3-operand write_rows"));
    };
    let dims = cx.ty(state)?.shape.dims();
    let (outer, cap, inner) = split_at_axis(dims, *axis);
    let n = cx.ty(rows)?.shape.dims().get(*axis).copied().unwrap_or(0);
    let Some(rows_op) = cx.operand(rows)? else {
        return Ok(()); // nothing to write
    };
    // The verifier allows an offset of one entry or one per outer block.
    let per_block = outer != 1 && cx.ty(offset)?.shape.numel() == outer;
    let (params, grid) = WriteRowsParams::new(outer, cap, inner, n, per_block)?;
    let operands = vec![rows_op, cx.operand_nonempty(offset)?, cx.operand_nonempty(at.id)?];
    out.push(at.step(KernelKey::State(StateKernel::WriteRows), operands, &params, grid));
    Ok(())
}
