//! Builders of `GroupedMatMul` and `QuantGroupedMatMul`, the experts of a mixture-of-experts
//! layer (on float or block-quantized expert stacks).

use crate::{Graph, IrError, NodeId, Op, QuantType};

impl Graph {
    /// `out[t, j, :] = w[ids[t, j]] · x[t, j or 0, :]`: x [T, S, K] with S = 1 (one row per
    /// token, shared by its k experts) or S = k (one row per chosen expert), w [E, N, K] (each
    /// expert's matrix out × in, like an `nn.Linear` weight, in x's dtype), ids I32 [T, k].
    /// The result is [T, k, N] in x's dtype. An id outside [0, E) gives a row of zeros. Errors
    /// name the three shapes.
    pub fn grouped_matmul(&mut self, x: NodeId, w: NodeId, ids: NodeId) -> Result<NodeId, IrError> {
        self.push(Op::GroupedMatMul, &[x, w, ids])
    }

    /// [`Graph::grouped_matmul`] on a block-quantized expert stack: `w` is U8 [E, N, K /
    /// block_elems · block_bytes], each expert's N rows of K elements of `quant` blocks (a GGUF
    /// stack stored as [E · N, row_bytes] reshapes to it as a view). x [T, S, K] (F32, F16 or
    /// BF16), ids I32 [T, k]; the result is F32 [T, k, N]. Backends decode only the rows of the
    /// experts the ids pick. Errors name the three shapes and the byte width K needs.
    pub fn quant_grouped_matmul(
        &mut self,
        x: NodeId,
        w: NodeId,
        ids: NodeId,
        quant: QuantType,
    ) -> Result<NodeId, IrError> {
        self.push(Op::QuantGroupedMatMul { quant }, &[x, w, ids])
    }
}
