//! Lowering of the data op family (being written).

use super::LowerCtx;
use crate::schedule::Dispatch;
use crate::GpuError;
use rlx_ir::{Node, NodeId};

pub(super) fn lower(
    cx: &mut LowerCtx,
    id: NodeId,
    _node: &Node,
    _out: &mut Vec<Dispatch>,
) -> Result<(), GpuError> {
    Err(GpuError::Lowering { node: cx.label(id), reason: "no GPU lowering for this op yet".into() })
}

/// A reshape whose memory plan makes it a view needs no step.
pub(super) fn lower_reshape(
    cx: &mut LowerCtx,
    id: NodeId,
    node: &Node,
    out: &mut Vec<Dispatch>,
) -> Result<(), GpuError> {
    if cx.plan.view_of.get(id.index()).copied().flatten().is_some() {
        return Ok(());
    }
    lower(cx, id, node, out)
}
