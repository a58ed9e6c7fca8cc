//! Builders for matrix products.

use crate::{Graph, IrError, NodeId, Op};

impl Graph {
    /// `a @ b` with batch broadcasting; both operands rank ≥ 2.
    pub fn matmul(&mut self, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
        self.matmul_t(a, b, false, false)
    }

    /// `op(a) @ op(b)` where `op` transposes the last two dims when asked.
    pub fn matmul_t(
        &mut self,
        a: NodeId,
        b: NodeId,
        transpose_a: bool,
        transpose_b: bool,
    ) -> Result<NodeId, IrError> {
        self.push(Op::MatMul { transpose_a, transpose_b }, &[a, b])
    }
}
