//! The node a family lowering is asked for ([`Site`]): its id, the node, the label its steps
//! and errors carry ("%12 layer_norm"), the steps and errors that name it. [`super::lower_node`]
//! builds one per node and hands it to the family's `lower`.

use super::LowerCtx;
use crate::schedule::{Dispatch, Operand};
use crate::{GpuError, KernelKey};
use rlx_ir::{Node, NodeId, TensorType};

/// One node being lowered.
pub struct Site<'g> {
    pub id: NodeId,
    pub node: &'g Node,
    /// The label of the node's steps ([`LowerCtx::label`]).
    pub label: String,
}

impl<'g> Site<'g> {
    pub fn new(cx: &LowerCtx, id: NodeId, node: &'g Node) -> Self {
        Site { id, node, label: cx.label(id) }
    }

    /// The node's output type.
    pub fn ty(&self) -> &'g TensorType {
        &self.node.ty
    }

    /// A step of this node: kernel `key` on `operands` with `params`, `workgroups` launched.
    pub fn step<P: bytemuck::Pod>(
        &self,
        key: KernelKey,
        operands: Vec<Operand>,
        params: &P,
        workgroups: [u32; 3],
    ) -> Dispatch {
        Dispatch::new(key, self.label.clone(), operands, params, workgroups)
    }

    /// A lowering error naming this node.
    pub fn bad(&self, reason: impl Into<String>) -> GpuError {
        GpuError::Lowering { node: self.label.clone(), reason: reason.into() }
    }

    /// The node's first input; `missing` is the error's reason when it has none.
    pub fn first_input(&self, missing: &str) -> Result<NodeId, GpuError> {
        self.node.inputs.first().copied().ok_or_else(|| self.bad(missing))
    }

    /// A kernel-level shape error with the node named; limits (`TooLarge`) and errors that
    /// already name a node stay as they are, so a driver can still report limits as limits.
    pub fn named(&self, e: GpuError) -> GpuError {
        match e {
            GpuError::TooLarge { .. } | GpuError::Lowering { .. } => e,
            other => self.bad(other.to_string()),
        }
    }
}
