//! The mixture-of-experts MLP of a Qwen3-MoE layer: the router `mlp.gate.weight` [E, hidden]
//! (kept f32 at every precision: its scores pick the experts), then `Graph::moe_swiglu` over the
//! fused expert params `mlp.experts.gate_up_proj` [E, 2·I, hidden] and `mlp.experts.down_proj`
//! [E, hidden, I] (transformers 5's names; `checkpoint_moe.rs` stacks transformers 4's
//! per-expert tensors into them). The experts run as two `GroupedMatMul`s whose expert ids come
//! from the router's top-k on the device, in the recomputing and the KV-cache graphs alike.
//! Block-quantized expert stacks (GGUF files) stay packed: they run as `QuantGroupedMatMul`s,
//! which read and decode only the blocks of the experts the router chose (`expert_stack`).

use super::DecoderBuilder;
use crate::decoder::checkpoint_moe::{DOWN, GATE_UP};
use crate::decoder::config::MoeConfig;
use rlx_ir::{DType, IrError, NodeId};
use rlx_nn::prelude::*;

impl DecoderBuilder<'_> {
    /// Layer `i`'s experts on n [rows, hidden] (f32): [rows, hidden].
    pub(super) fn experts(&mut self, i: usize, n: NodeId, moe: &MoeConfig) -> Result<NodeId, IrError> {
        let h = self.cfg.hidden_size;
        let (e, inter) = (moe.num_experts, moe.intermediate_size);
        let p = |s: &str| format!("model.layers.{i}.{s}");
        let router = self.g.param(&p("mlp.gate.weight"), &[e, h], DType::F32)?;
        let gate_up = self.expert_stack(&p(GATE_UP), e, 2 * inter, h)?;
        let down = self.expert_stack(&p(DOWN), e, h, inter)?;
        self.g.moe_swiglu_stacks(n, router, gate_up, down, moe.top_k, moe.norm_topk_prob)
    }

    /// The expert stack `name` [e, rows, cols]: f32 (widened from its storage dtype), or, for a
    /// block-quantized stack (a GGUF file's experts), the U8 param [e · rows, row_bytes] as the
    /// loader stores it, viewed as [e, rows, row_bytes] and read packed by the grouped matmul.
    fn expert_stack(
        &mut self,
        name: &str,
        e: usize,
        rows: usize,
        cols: usize,
    ) -> Result<ExpertStack, IrError> {
        let Some(&q) = self.quant.get(name) else {
            return Ok(ExpertStack::float(self.weight(name, &[e, rows, cols])?));
        };
        let table = self.quant_param(name, q, e * rows, cols)?;
        let row_bytes = self.g.ty(table)?.shape.dims().get(1).copied().unwrap_or(0);
        let stack = self.g.reshape(table, &[e, rows, row_bytes])?;
        Ok(ExpertStack::quantized(stack, q))
    }
}
