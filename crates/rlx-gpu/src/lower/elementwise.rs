//! Lowering of the elementwise op family (being written).

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
