//! The decoder forward graph, built with rlx-ir builders from one layer builder.
//!
//! Inputs: `input_ids` I32 [batch, seq]; `rope_cos`, `rope_sin` F32 [seq, head_dim / 2] from
//! [`super::rope_tables`] for the positions of the seq tokens. Each layer is pre-norm:
//!
//! ```text
//! h = x + o_proj(attention(rope(q_norm?(q_proj(rms(x)))), rope(k_norm?(k_proj(rms(x)))), v_proj(rms(x))))
//! x' = h + down_proj(silu(gate_proj(rms(h))) · up_proj(rms(h)))
//! ```
//!
//! (a Qwen3-MoE layer with experts replaces that MLP by `Graph::moe_swiglu`: `moe.rs`)
//!
//! attention in [batch, seq, heads, head_dim] with grouped K/V heads, a causal (or sliding
//! window) mask and scale 1/√head_dim; rope is NeoX style (transformers' `rotate_half`). Then a
//! final RMSNorm and `lm_head` (the embedding table when tied) give f32 logits.
//!
//! Params carry the Hugging Face tensor names, linear weights `[out, in]` (matmul with
//! `transpose_b`). The (crate-internal) layer builder takes a `KvHook` that sees each layer's new keys and
//! values (after rope) and returns the keys and values to attend to: the full forward passes them
//! through; a decode step will append them to device-resident cache state there. Queries at row
//! i then sit at position i + (Sk − Sq), which the IR's causal masks already assume.

use super::config::DecoderConfig;
mod moe;
mod train;
use super::params::QuantizedWeights;
use crate::common::safetensors::{f16_weights, Precision};
use rlx_ir::{
    AttentionSpec, AttnLayout, DType, Graph, IrError, MaskKind, NodeId, QuantType, RopeStyle, Shape,
};
use rlx_nn::prelude::*;
use std::collections::HashMap;
pub use train::{decoder_logits_given, decoder_weight_shapes};

/// Names of the graph's inputs.
pub const INPUT_IDS: &str = "input_ids";
/// Name of the rope cos table input ([positions, head_dim / 2], F32).
pub const ROPE_COS: &str = "rope_cos";
/// Name of the rope sin table input ([positions, head_dim / 2], F32).
pub const ROPE_SIN: &str = "rope_sin";
/// Input of a [`LogitRows::Selected`] graph: I32 `[batch]`, the row of `[batch · seq]` (flat,
/// `b · seq + position`) whose logits each sequence returns.
pub const LOGIT_ROWS: &str = "logit_rows";

/// Which positions the graph computes logits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LogitRows {
    /// Every position: logits [batch, seq, vocab].
    All,
    /// One row per sequence, picked by the [`LOGIT_ROWS`] input: logits [batch, vocab]. The
    /// `lm_head` matmul runs on those rows only (what a generation step needs).
    Selected,
}

/// Where a layer's keys and values come from; see the module doc.
pub(crate) trait KvHook {
    /// `k`, `v`: this step's keys and values, [batch, seq, kv_heads, head_dim] (rope applied
    /// to k). Returns the keys and values to attend to, in the same layout.
    fn keys_values(
        &mut self,
        g: &mut Graph,
        layer: usize,
        k: NodeId,
        v: NodeId,
    ) -> Result<(NodeId, NodeId), IrError>;

    /// I32 [batch]: how many of the returned keys are valid (attention reads no further); `None`
    /// when all are.
    fn lengths(&self) -> Option<NodeId> {
        None
    }
}

/// No cache: every layer attends to the keys and values of this graph's own tokens.
pub(crate) struct NoCache;

impl KvHook for NoCache {
    fn keys_values(
        &mut self,
        _: &mut Graph,
        _: usize,
        k: NodeId,
        v: NodeId,
    ) -> Result<(NodeId, NodeId), IrError> {
        Ok((k, v))
    }
}

/// The rope operands of one graph: [seq, head_dim / 2] each, shared by every sequence of the
/// batch; or, with `per_row`, [batch · seq, head_dim / 2], one row per token of the batch (a
/// batched decode step, where each sequence sits at its own position).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RopeInputs {
    pub cos: NodeId,
    pub sin: NodeId,
    pub per_row: bool,
}

/// Adds decoder params and layers to a graph.
pub(crate) struct DecoderBuilder<'a> {
    pub g: &'a mut Graph,
    cfg: &'a DecoderConfig,
    precision: Precision,
    /// The embedding table param, once made (the tied `lm_head` uses it again).
    embed_table: Option<NodeId>,
    /// Params stored block-quantized (U8 [rows, row_bytes]), by name.
    quant: &'a QuantizedWeights,
    /// `Some`: every weight is the node given here by HF name (a training step's weight
    /// states, f32) instead of a param ([`DecoderBuilder::with_given`]).
    given: Option<&'a HashMap<String, NodeId>>,
}

impl<'a> DecoderBuilder<'a> {
    pub fn new(
        g: &'a mut Graph,
        cfg: &'a DecoderConfig,
        precision: Precision,
        quant: &'a QuantizedWeights,
    ) -> Self {
        DecoderBuilder { g, cfg, precision, embed_table: None, quant, given: None }
    }

    /// A builder whose weights are the f32 nodes in `given` (by HF name), each checked against
    /// the shape the param would have; `quant` must be empty (training is dense).
    pub fn with_given(
        g: &'a mut Graph,
        cfg: &'a DecoderConfig,
        quant: &'a QuantizedWeights,
        given: &'a HashMap<String, NodeId>,
    ) -> Self {
        DecoderBuilder { g, cfg, precision: Precision::F32, embed_table: None, quant, given: Some(given) }
    }

    /// The node given for weight `name` of shape `dims` (see [`DecoderBuilder::with_given`]).
    fn given_weight(
        &self,
        map: &HashMap<String, NodeId>,
        name: &str,
        dims: &[usize],
    ) -> Result<NodeId, IrError> {
        let err = |reason: String| IrError::Attribute {
            op: "decoder",
            attr: "weights",
            shape: Shape::new(dims),
            reason,
        };
        let node = map.get(name).copied().ok_or_else(|| {
            err(format!(
                "no node was given for weight '{name}'; list the weights with `decoder_weight_shapes`"
            ))
        })?;
        let ty = self.g.ty(node)?;
        if ty.shape.dims() != dims || ty.dtype != DType::F32 {
            return Err(err(format!(
                "the node given for weight '{name}' is {} {:?}; expected f32 {dims:?}",
                ty.dtype,
                ty.shape.dims()
            )));
        }
        Ok(node)
    }

    /// A quantized param `name` holding `rows` rows of `cols` elements of `quant`: U8
    /// [rows, row_bytes].
    fn quant_param(
        &mut self,
        name: &str,
        quant: QuantType,
        rows: usize,
        cols: usize,
    ) -> Result<NodeId, IrError> {
        let row_bytes = quant.byte_len(cols).map_err(|e| IrError::Attribute {
            op: "quant_param",
            attr: "weight",
            shape: Shape::new(&[rows, cols]),
            reason: format!("'{name}' cannot be stored as {quant}: {e}"),
        })?;
        self.g.param(name, &[rows, row_bytes], DType::U8)
    }

    fn storage(&self) -> DType {
        if f16_weights(self.precision) {
            DType::F16
        } else {
            DType::F32
        }
    }

    fn widen(&mut self, x: NodeId) -> Result<NodeId, IrError> {
        if self.storage() == DType::F32 {
            Ok(x)
        } else {
            self.g.cast(x, DType::F32)
        }
    }

    /// A weight param, cast to f32 where used when weights are stored f16.
    /// Vectors (norm weights, biases) stay f32 whatever the storage: they are a few KiB, and
    /// an f16 copy would cost a cast launch per vector per run.
    fn weight(&mut self, name: &str, dims: &[usize]) -> Result<NodeId, IrError> {
        if let Some(map) = self.given {
            return self.given_weight(map, name, dims);
        }
        if dims.len() == 1 {
            return self.g.param(name, dims, DType::F32);
        }
        let dtype = self.storage();
        let p = self.g.param(name, dims, dtype)?;
        self.widen(p)
    }

    /// `nn.Linear(inp, out)` on the last axis of x; `prefix.bias` when `bias`.
    fn linear(
        &mut self,
        prefix: &str,
        x: NodeId,
        inp: usize,
        out: usize,
        bias: bool,
    ) -> Result<NodeId, IrError> {
        let name = format!("{prefix}.weight");
        if let Some(&q) = self.quant.get(&name) {
            let w = self.quant_param(&name, q, out, inp)?;
            let y = self.g.quant_matmul(x, w, q)?;
            if !bias {
                return Ok(y);
            }
            let b = self.weight(&format!("{prefix}.bias"), &[out])?;
            return self.g.add(y, b);
        }
        let w = self.weight(&name, &[out, inp])?;
        let b = if bias { Some(self.weight(&format!("{prefix}.bias"), &[out])?) } else { None };
        self.g.linear(x, w, b)
    }

    fn rms_norm(&mut self, name: &str, x: NodeId, dim: usize) -> Result<NodeId, IrError> {
        let gamma = self.weight(name, &[dim])?;
        self.g.rms_norm(x, Some(gamma), -1, self.cfg.rms_norm_eps)
    }

    fn embed_table(&mut self) -> Result<NodeId, IrError> {
        if let Some(t) = self.embed_table {
            return Ok(t);
        }
        const NAME: &str = "model.embed_tokens.weight";
        let (vocab, hidden) = (self.cfg.vocab_size, self.cfg.hidden_size);
        if let Some(map) = self.given {
            let t = self.given_weight(map, NAME, &[vocab, hidden])?;
            self.embed_table = Some(t);
            return Ok(t);
        }
        let t = match self.quant.get(NAME) {
            Some(&q) => self.quant_param(NAME, q, vocab, hidden)?,
            None => {
                let dtype = self.storage();
                self.g.param(NAME, &[vocab, hidden], dtype)?
            }
        };
        self.embed_table = Some(t);
        Ok(t)
    }

    /// Token embeddings of `ids` ([batch, seq] I32), as f32 [batch · seq, hidden].
    pub fn embed(&mut self, ids: NodeId, rows: usize) -> Result<NodeId, IrError> {
        let table = self.embed_table()?;
        if let Some(&q) = self.quant.get("model.embed_tokens.weight") {
            let x = self.g.quant_gather(table, ids, q)?;
            return self.g.reshape(x, &[rows, self.cfg.hidden_size]);
        }
        // Gather first, then widen: only the rows used are cast.
        let x = self.g.embedding(table, ids)?;
        let x = self.widen(x)?;
        self.g.reshape(x, &[rows, self.cfg.hidden_size])
    }

    /// Decoder layer `i` on x [batch · seq, hidden] (f32); returns the same shape.
    pub fn layer(
        &mut self,
        i: usize,
        x: NodeId,
        batch: usize,
        seq: usize,
        rope: RopeInputs,
        kv: &mut dyn KvHook,
    ) -> Result<NodeId, IrError> {
        let cfg = self.cfg;
        let (h, d) = (cfg.hidden_size, cfg.head_dim);
        let (heads, kv_heads) = (cfg.num_attention_heads, cfg.num_key_value_heads);
        let p = |s: &str| format!("model.layers.{i}.{s}");

        let n = self.rms_norm(&p("input_layernorm.weight"), x, h)?;
        let q = self.linear(&p("self_attn.q_proj"), n, h, cfg.q_dim(), cfg.qkv_bias)?;
        let k = self.linear(&p("self_attn.k_proj"), n, h, cfg.kv_dim(), cfg.qkv_bias)?;
        let v = self.linear(&p("self_attn.v_proj"), n, h, cfg.kv_dim(), cfg.qkv_bias)?;
        let mut q = self.g.reshape(q, &[batch, seq, heads, d])?;
        let mut k = self.g.reshape(k, &[batch, seq, kv_heads, d])?;
        let v = self.g.reshape(v, &[batch, seq, kv_heads, d])?;
        if cfg.qk_norm {
            q = self.rms_norm(&p("self_attn.q_norm.weight"), q, d)?;
            k = self.rms_norm(&p("self_attn.k_norm.weight"), k, d)?;
        }
        let q = self.rope(q, rope, [batch, seq, heads, d])?;
        let k = self.rope(k, rope, [batch, seq, kv_heads, d])?;
        let (k, v) = kv.keys_values(self.g, i, k, v)?;
        let mask = match cfg.sliding_window {
            Some(w) => MaskKind::SlidingWindow(w),
            None => MaskKind::Causal,
        };
        let spec = AttentionSpec::new(AttnLayout::Bshd, mask);
        let a = match kv.lengths() {
            Some(lens) => self.g.attention_with_lengths(q, k, v, None, lens, spec)?,
            None => self.g.attention(q, k, v, None, spec)?,
        };
        let a = self.g.reshape(a, &[batch * seq, cfg.q_dim()])?;
        let o = self.linear(&p("self_attn.o_proj"), a, cfg.q_dim(), h, cfg.o_bias)?;
        let x = self.g.add(x, o)?;

        let n = self.rms_norm(&p("post_attention_layernorm.weight"), x, h)?;
        let down = match &cfg.moe {
            Some(moe) if moe.is_sparse(i) => self.experts(i, n, moe)?,
            _ => self.mlp(i, n)?,
        };
        self.g.add(x, down)
    }

    /// NeoX rope on x of `dims` [batch, seq, heads, head_dim]. The Rope op takes one table row
    /// per position of the seq axis, shared by the batch; per-row tables (each sequence at its
    /// own position) are the same op on x seen as one sequence of batch · seq tokens (a free
    /// reshape: the layout is the same).
    fn rope(&mut self, x: NodeId, rope: RopeInputs, dims: [usize; 4]) -> Result<NodeId, IrError> {
        let [batch, seq, heads, d] = dims;
        if !rope.per_row || batch == 1 {
            return self.g.rope(x, rope.cos, rope.sin, RopeStyle::NeoX, AttnLayout::Bshd, d);
        }
        let flat = self.g.reshape(x, &[1, batch * seq, heads, d])?;
        let y = self.g.rope(flat, rope.cos, rope.sin, RopeStyle::NeoX, AttnLayout::Bshd, d)?;
        self.g.reshape(y, &dims)
    }

    /// Layer `i`'s dense SiLU-gated MLP on n [rows, hidden].
    fn mlp(&mut self, i: usize, n: NodeId) -> Result<NodeId, IrError> {
        let (h, f) = (self.cfg.hidden_size, self.cfg.intermediate_size);
        let p = |s: &str| format!("model.layers.{i}.{s}");
        let gate = self.linear(&p("mlp.gate_proj"), n, h, f, false)?;
        let up = self.linear(&p("mlp.up_proj"), n, h, f, false)?;
        let gate = self.g.silu(gate)?;
        let m = self.g.mul(gate, up)?;
        self.linear(&p("mlp.down_proj"), m, f, h, false)
    }

    /// Final norm and `lm_head` on x [rows, hidden]: f32 logits [rows, vocab].
    pub fn head(&mut self, x: NodeId) -> Result<NodeId, IrError> {
        let (h, vocab) = (self.cfg.hidden_size, self.cfg.vocab_size);
        let x = self.rms_norm("model.norm.weight", x, h)?;
        if !self.cfg.tie_word_embeddings {
            return self.linear("lm_head", x, h, vocab, false);
        }
        let t = self.embed_table()?;
        if let Some(&q) = self.quant.get("model.embed_tokens.weight") {
            return self.g.quant_matmul(x, t, q);
        }
        let w = self.widen(t)?;
        self.g.linear(x, w, None)
    }
}

/// The full causal forward over `batch` sequences of `seq` tokens with f32 weights: inputs
/// [`INPUT_IDS`], [`ROPE_COS`], [`ROPE_SIN`]; output f32 logits [batch, seq, vocab].
pub fn decoder_graph(cfg: &DecoderConfig, batch: usize, seq: usize) -> Result<Graph, IrError> {
    decoder_graph_with(cfg, batch, seq, Precision::F32, LogitRows::All, &QuantizedWeights::new())
}

/// [`decoder_graph`] with the weights' storage chosen by `precision` (f16 for
/// [`Precision::F16`]) and the logits rows chosen by `rows`; the params named in `quant` are
/// block-quantized U8 params run by `QuantMatMul` / `QuantGather` (expert stacks by
/// `QuantGroupedMatMul`).
pub fn decoder_graph_with(
    cfg: &DecoderConfig,
    batch: usize,
    seq: usize,
    precision: Precision,
    rows: LogitRows,
    quant: &QuantizedWeights,
) -> Result<Graph, IrError> {
    let tag = match rows {
        LogitRows::All => "",
        LogitRows::Selected => "_last",
    };
    let mut g = Graph::new(format!("{}_b{batch}_s{seq}{tag}", cfg.architecture.model_type()));
    let ids = g.input(INPUT_IDS, &[batch, seq], DType::I32)?;
    let half = cfg.head_dim / 2;
    let cos = g.input(ROPE_COS, &[seq, half], DType::F32)?;
    let sin = g.input(ROPE_SIN, &[seq, half], DType::F32)?;
    let picked = match rows {
        LogitRows::All => None,
        LogitRows::Selected => Some(g.input(LOGIT_ROWS, &[batch], DType::I32)?),
    };
    let mut b = DecoderBuilder::new(&mut g, cfg, precision, quant);
    let rope = RopeInputs { cos, sin, per_row: false };
    let mut x = b.embed(ids, batch * seq)?;
    for i in 0..cfg.num_hidden_layers {
        x = b.layer(i, x, batch, seq, rope, &mut NoCache)?;
    }
    let logits = match picked {
        None => {
            let l = b.head(x)?;
            b.g.reshape(l, &[batch, seq, cfg.vocab_size])?
        }
        Some(r) => {
            let x = b.g.gather(x, r, 0)?;
            b.head(x)?
        }
    };
    g.set_outputs(&[logits])?;
    Ok(g)
}

#[cfg(test)]
pub(crate) mod tests {
    // Test helpers unwrap and panic: a failure is the point.
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use crate::decoder::config::{Architecture, RopeScaling};

    pub(crate) fn tiny(arch: Architecture) -> DecoderConfig {
        DecoderConfig {
            architecture: arch,
            vocab_size: 11,
            hidden_size: 8,
            intermediate_size: 12,
            num_hidden_layers: 2,
            num_attention_heads: 4,
            num_key_value_heads: 2,
            head_dim: 4,
            rms_norm_eps: 1e-6,
            rope_theta: 10000.0,
            rope_scaling: RopeScaling::None,
            max_position_embeddings: 32,
            tie_word_embeddings: false,
            qkv_bias: arch == Architecture::Qwen2,
            o_bias: false,
            qk_norm: arch == Architecture::Qwen3,
            sliding_window: None,
            torch_dtype: None,
            moe: None,
        }
    }

    fn param_names(g: &Graph) -> Vec<String> {
        g.params().iter().map(|(n, _, _)| n.to_string()).collect()
    }

    #[test]
    fn params_follow_the_config() {
        let g = decoder_graph(&tiny(Architecture::Llama), 2, 3).unwrap();
        let names = param_names(&g);
        // embed, 9 per layer (2 norms, q k v o, gate up down), final norm, lm_head.
        assert_eq!(names.len(), 1 + 2 * 9 + 2, "{names:?}");
        assert!(names.contains(&"lm_head.weight".to_string()));
        let out = g.ty(g.outputs()[0]).unwrap();
        assert_eq!((out.shape.dims(), out.dtype), (&[2usize, 3, 11][..], DType::F32));

        let mut tied = tiny(Architecture::Qwen2);
        tied.tie_word_embeddings = true;
        let names = param_names(&decoder_graph(&tied, 1, 4).unwrap());
        assert!(!names.iter().any(|n| n == "lm_head.weight"));
        assert!(names.contains(&"model.layers.1.self_attn.v_proj.bias".to_string()));
        assert!(!names.contains(&"model.layers.1.self_attn.o_proj.bias".to_string()));

        let mut q3 = tiny(Architecture::Qwen3);
        q3.head_dim = 6;
        let g = decoder_graph(&q3, 1, 5).unwrap();
        let shape = |name: &str| {
            g.params().iter().find(|(n, _, _)| *n == name).map(|(_, _, t)| t.shape.dims().to_vec()).unwrap()
        };
        assert_eq!(shape("model.layers.0.self_attn.q_proj.weight"), [24, 8]);
        assert_eq!(shape("model.layers.0.self_attn.k_proj.weight"), [12, 8]);
        assert_eq!(shape("model.layers.0.self_attn.o_proj.weight"), [8, 24]);
        assert_eq!(shape("model.layers.0.self_attn.q_norm.weight"), [6]);
    }

    #[test]
    fn selected_rows_and_f16_weights() {
        let cfg = tiny(Architecture::Mistral);
        let g = decoder_graph_with(&cfg, 3, 4, Precision::F16, LogitRows::Selected, &QuantizedWeights::new())
            .unwrap();
        let out = g.ty(g.outputs()[0]).unwrap();
        assert_eq!((out.shape.dims(), out.dtype), (&[3usize, 11][..], DType::F32));
        // Matrices f16, vectors (norms, biases) f32.
        assert!(g
            .params()
            .iter()
            .all(|(_, _, t)| t.dtype == if t.shape.rank() == 1 { DType::F32 } else { DType::F16 }));
        assert_eq!(g.inputs().len(), 4);
    }
}
