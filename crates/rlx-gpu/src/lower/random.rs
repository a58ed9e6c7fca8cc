//! Lowering of `Op::Random`: one step of `random_philox.wgsl` reading the key and writing every
//! element (see the kernel for the recipe, shared with rlx-cpu).

use super::LowerCtx;
use crate::catalog::random::RandomParams;
use crate::schedule::Dispatch;
use crate::{GpuError, KernelKey};
use rlx_ir::{Node, NodeId, Op};

pub(super) fn lower(
    cx: &mut LowerCtx,
    id: NodeId,
    node: &Node,
    out: &mut Vec<Dispatch>,
) -> Result<(), GpuError> {
    let label = cx.label(id);
    let Op::Random { dist, .. } = &node.op else {
        return Err(GpuError::Lowering { node: label, reason: format!("{} is not random", node.op.name()) });
    };
    let key = *node.inputs.first().ok_or_else(|| GpuError::Lowering {
        node: label.clone(),
        reason: "the node has no key input".into(),
    })?;
    let dst = cx.operand_nonempty(id)?;
    let (p, grid) = RandomParams::new(cx.ty(id)?.numel())?;
    out.push(Dispatch::new(KernelKey::Random(*dist), label, vec![cx.operand_nonempty(key)?, dst], &p, grid));
    Ok(())
}
