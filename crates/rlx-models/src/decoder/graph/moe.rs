//! The mixture-of-experts MLP of a Qwen3-MoE layer: the router `mlp.gate.weight` [E, hidden]
//! (kept f32 at every precision: its scores pick the experts), then `Graph::moe_swiglu` over the
//! fused expert params `mlp.experts.gate_up_proj` [E, 2·I, hidden] and `mlp.experts.down_proj`
//! [E, hidden, I] (transformers 5's names; `checkpoint_moe.rs` stacks transformers 4's
//! per-expert tensors into them). The experts run as two `GroupedMatMul`s whose expert ids come
//! from the router's top-k on the device, in the recomputing and the KV-cache graphs alike.
//! Block-quantized expert stacks (GGUF files) are decoded on the device into f32 stacks first
//! (`expert_stack`): the blocks never widen on the host, but each run decodes every expert;
//! a grouped matmul that reads blocks directly would avoid that.

use super::DecoderBuilder;
use crate::decoder::checkpoint_moe::{DOWN, GATE_UP};
use crate::decoder::config::MoeConfig;
use rlx_ir::{DType, IrError, NodeId, Tensor};
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
        self.g.moe_swiglu(n, router, gate_up, down, moe.top_k, moe.norm_topk_prob)
    }

    /// The expert stack `name` [e, rows, cols] as f32. A block-quantized stack (a GGUF file's
    /// experts) is a U8 param [e · rows, row_bytes] decoded on the device by a `QuantGather`
    /// of every row; `GroupedMatMul` then reads the decoded stack.
    fn expert_stack(&mut self, name: &str, e: usize, rows: usize, cols: usize) -> Result<NodeId, IrError> {
        let Some(&q) = self.quant.get(name) else {
            return self.weight(name, &[e, rows, cols]);
        };
        let all = e * rows;
        let table = self.quant_param(name, q, all, cols)?;
        let ids: Vec<f64> = (0..all).map(|r| r as f64).collect();
        let ids = self.g.constant(Tensor::from_f64(&[all][..], DType::I32, &ids)?)?;
        let stack = self.g.quant_gather(table, ids, q)?;
        self.g.reshape(stack, &[e, rows, cols])
    }
}
