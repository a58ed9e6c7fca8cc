//! Builder for scaled dot-product attention.

use crate::{AttentionSpec, AttnGradPart, Graph, IrError, NodeId, Op};

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

    /// The gradient of `attention(q, k, v, mask, spec)` without its [B, Hq, Sq, Sk] matrix:
    /// `[dq, dk, dv]` for the forward output `o` and its gradient `dy`, each `Some` where
    /// `want` asks for it (one [`AttnGradPart::Stats`] node, then one node per gradient).
    /// `spec` must pass [`AttentionSpec::flash_grad`].
    pub fn attention_grad(
        &mut self,
        [q, k, v]: [NodeId; 3],
        o: NodeId,
        dy: NodeId,
        mask: Option<NodeId>,
        spec: AttentionSpec,
        want: [bool; 3],
    ) -> Result<[Option<NodeId>; 3], IrError> {
        let mut ins = vec![q, k, v, o, dy];
        ins.extend(mask);
        let stats = self.push(Op::AttentionGrad { spec, part: AttnGradPart::Stats }, &ins)?;
        ins[3] = dy;
        ins[4] = stats;
        let mut out = [None; 3];
        for (i, part) in [AttnGradPart::Q, AttnGradPart::K, AttnGradPart::V].into_iter().enumerate() {
            if want[i] {
                out[i] = Some(self.push(Op::AttentionGrad { spec, part }, &ins)?);
            }
        }
        Ok(out)
    }
}
