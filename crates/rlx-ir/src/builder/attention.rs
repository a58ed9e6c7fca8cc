//! Builder for scaled dot-product attention.

use crate::{AttentionSpec, Graph, IrError, NodeId, Op};

impl Graph {
    /// Scaled dot-product attention; `mask` is required for Padding/Bias masks and refused
    /// otherwise.
    pub fn attention(
        &mut self,
        q: NodeId,
        k: NodeId,
        v: NodeId,
        mask: Option<NodeId>,
        spec: AttentionSpec,
    ) -> Result<NodeId, IrError> {
        let mut ins = vec![q, k, v];
        ins.extend(mask);
        self.push(Op::Attention(spec), &ins)
    }
}
