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

impl Graph {
    /// `global_scale · (x · dequant(w)ᵀ)` for an [`QuantType::NvFp4`] weight: the quantized
    /// matmul followed by the per-tensor scale that nvfp4 keeps outside its blocks (as
    /// [`crate::quantize_nvfp4`] returns it). Shapes as [`Graph::quant_matmul`]; a scale of
    /// exactly 1 adds no node.
    pub fn nvfp4_matmul(&mut self, x: NodeId, w: NodeId, global_scale: f32) -> Result<NodeId, IrError> {
        self.atomically(|g| {
            let y = g.quant_matmul(x, w, QuantType::NvFp4)?;
            if global_scale == 1.0 {
                return Ok(y);
            }
            let s = g.scalar(global_scale)?;
            g.mul(y, s)
        })
    }
}
