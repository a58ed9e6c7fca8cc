//! Builder of `GroupedMatMul`, the experts of a mixture-of-experts layer.

use crate::{Graph, IrError, NodeId, Op};

impl Graph {
    /// `out[t, j, :] = w[ids[t, j]] · x[t, j or 0, :]`: x [T, S, K] with S = 1 (one row per
    /// token, shared by its k experts) or S = k (one row per chosen expert), w [E, N, K] (each
    /// expert's matrix out × in, like an `nn.Linear` weight, in x's dtype), ids I32 [T, k].
    /// The result is [T, k, N] in x's dtype. An id outside [0, E) gives a row of zeros. Errors
    /// name the three shapes.
    pub fn grouped_matmul(&mut self, x: NodeId, w: NodeId, ids: NodeId) -> Result<NodeId, IrError> {
        self.push(Op::GroupedMatMul, &[x, w, ids])
    }
}
