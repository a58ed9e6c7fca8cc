//! Builders of the recurrences of [`crate::ssm`]: the native `SelectiveScan` and
//! `GatedDeltaRule` ops. The composites that add the elementwise parts around them (delta
//! bias, skip term, gate, q/k normalisation) are rlx-nn's.

use crate::{Graph, IrError, NodeId, Op, ScanOutput};

impl Graph {
    /// The native selective scan (see [`crate::ssm`]): u, delta [B, D, L], a [D, N], b and c
    /// [B, G, N, L] (F32, G divides D) → y [B, D, L] for [`ScanOutput::Y`], or the state after
    /// the last step [B, D, N] for [`ScanOutput::LastState`]. Errors name every shape.
    #[allow(clippy::too_many_arguments)]
    pub fn selective_scan_op(
        &mut self,
        u: NodeId,
        delta: NodeId,
        a: NodeId,
        b: NodeId,
        c: NodeId,
        delta_softplus: bool,
        output: ScanOutput,
    ) -> Result<NodeId, IrError> {
        self.push(Op::SelectiveScan { delta_softplus, output }, &[u, delta, a, b, c])
    }

    /// The native gated delta rule (see [`crate::ssm`]): q, k [B, L, H, K], v [B, L, H, V],
    /// g (log decay) and beta [B, L, H], all F32, q multiplied by `scale` → o [B, L, H, V] for
    /// [`ScanOutput::Y`], the last state [B, H, K, V] for [`ScanOutput::LastState`].
    #[allow(clippy::too_many_arguments)]
    pub fn gated_delta_rule_op(
        &mut self,
        q: NodeId,
        k: NodeId,
        v: NodeId,
        g: NodeId,
        beta: NodeId,
        scale: f32,
        output: ScanOutput,
    ) -> Result<NodeId, IrError> {
        self.push(Op::GatedDeltaRule { scale, output }, &[q, k, v, g, beta])
    }
}
