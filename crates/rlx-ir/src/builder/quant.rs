//! Builders of the ops on block-quantized weights (see [`crate::QuantType`]).

use crate::{Graph, IrError, NodeId, Op, QuantType};

impl Graph {
    /// `x · dequant(w)ᵀ`: a linear layer whose weight `w` is U8 [N, K / block_elems ·
    /// block_bytes], each row K elements of `quant` blocks (GGUF's layout of a [N, K] weight).
    /// `x` is [..., K] (F32, F16 or BF16); the result is F32 [..., N]. Errors name both shapes
    /// and the weight's byte width K needs.
    pub fn quant_matmul(&mut self, x: NodeId, w: NodeId, quant: QuantType) -> Result<NodeId, IrError> {
        self.push(Op::QuantMatMul { quant }, &[x, w])
    }

    /// Rows `ids` of a quantized table (U8 [V, row_bytes] of `quant` blocks), decoded: F32
    /// [ids.shape..., K]. An id outside [0, V) gives a row of zeros.
    pub fn quant_gather(&mut self, table: NodeId, ids: NodeId, quant: QuantType) -> Result<NodeId, IrError> {
        self.push(Op::QuantGather { quant }, &[table, ids])
    }
}
