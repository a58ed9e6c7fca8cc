//! Lowering of Rope: one elementwise launch (both styles, both layouts, partial rotary dims).

use super::{LowerCtx, Site};
use crate::catalog::rope::{RopeKernel, RopeParams};
use crate::schedule::Dispatch;
use crate::{GpuError, KernelKey};
use rlx_ir::Op;

pub(super) fn lower(cx: &mut LowerCtx, at: &Site, out: &mut Vec<Dispatch>) -> Result<(), GpuError> {
    let (Op::Rope { style, layout, rotary_dims }, &[x, cos, sin]) = (&at.node.op, at.node.inputs.as_slice())
    else {
        return Err(at.bad("not a rope op with x, cos, sin"));
    };
    let (params, grid) =
        RopeParams::new(*style, *layout, *rotary_dims, cx.ty(x)?.shape.dims()).map_err(|e| at.named(e))?;
    // rotary_dims ≥ 2 (checked by the IR) and S > 0 (the output is non-empty), so cos and sin
    // are non-empty.
    let ops = vec![
        cx.operand_nonempty(x)?,
        cx.operand_nonempty(cos)?,
        cx.operand_nonempty(sin)?,
        cx.operand_nonempty(at.id)?,
    ];
    out.push(at.step(KernelKey::Rope(RopeKernel::F32), ops, &params, grid));
    Ok(())
}
