//! BERT graphs built with rlx-ir builders; one encoder-layer builder serves all of them.
//!
//! - [`build_graph`]: the sentence-embedding graph for one (batch, seq) shape. Inputs:
//!   `input_ids`, `token_type_ids` and `attention_mask`, each I32 [batch, seq] (mask 1 for a
//!   real token, 0 for padding). Outputs: f32 [batch, hidden], the L2-normalised embeddings,
//!   then the pooled vectors before that normalisation.
//! - [`pooled_embeddings`]: the same encoder and pooling on given input nodes, its weights
//!   either params or nodes the caller made (a fine-tune's weight states, [`WeightSource`]).
//! - [`encoder_layers`]: the post-norm encoder stack (self-attention in [B, S, H, D], output
//!   projection, residual add + LayerNorm, FFN, residual add + LayerNorm) on x [batch·seq,
//!   hidden], added to any graph: the `rlx bench` BERT workload ([`encoder_graph`]), the parity
//!   table's encoder layer and the tests use it.
//!
//! Params carry the HF tensor names (without a `bert.` prefix), linear weights `[out, in]`.

use crate::bert::config::{Activation, BertConfig, Pooling};
use crate::common::safetensors::Precision;
use rlx_ir::{AttentionSpec, AttnLayout, DType, Graph, IrError, MaskKind, NodeId};
use rlx_nn::prelude::*;
use std::collections::HashMap;

/// Names of the graph's inputs.
pub const INPUT_IDS: &str = "input_ids";
/// Name of the token-type-id input (I32 [batch, seq]).
pub const TOKEN_TYPE_IDS: &str = "token_type_ids";
/// Name of the attention-mask input (I32 [batch, seq], 1 = a real token).
pub const ATTENTION_MASK: &str = "attention_mask";

/// sentence-transformers clamps the valid-token count at 1e-9 and the norm at 1e-12
/// (`torch.clamp(sum_mask, min=1e-9)`, `F.normalize(eps=1e-12)`).
const MIN_TOKENS: f32 = 1e-9;
const MIN_NORM: f32 = 1e-12;

/// Where a graph's weights come from.
#[derive(Clone, Copy, Debug)]
pub enum WeightSource<'a> {
    /// Params of the graph, set from a file; f16 params (cast to f32 where used) when the
    /// precision keeps weights f16.
    Params(Precision),
    /// Nodes the caller made, by HF name: a training step's weight states
    /// ([`crate::bert::train`]). Each must be f32 of the param's shape.
    Given(&'a HashMap<String, NodeId>),
}

struct Builder<'a> {
    g: &'a mut Graph,
    weights: WeightSource<'a>,
    cfg: &'a BertConfig,
}

impl Builder<'_> {
    /// A weight, as a param or as the node the caller gave for it.
    fn param(&mut self, name: &str, dims: &[usize]) -> Result<NodeId, IrError> {
        match self.weights {
            WeightSource::Params(precision) if crate::common::safetensors::f16_weights(precision) => {
                let p = self.g.param(name, dims, DType::F16)?;
                self.g.cast(p, DType::F32)
            }
            WeightSource::Params(_) => self.g.param(name, dims, DType::F32),
            WeightSource::Given(map) => map.get(name).copied().ok_or_else(|| IrError::Attribute {
                op: "bert",
                attr: "weights",
                shape: rlx_ir::Shape::new(dims),
                reason: format!(
                    "no node was given for weight '{name}'; list the weights with `weight_shapes`"
                ),
            }),
        }
    }

    fn linear(&mut self, prefix: &str, x: NodeId, inp: usize, out: usize) -> Result<NodeId, IrError> {
        let w = self.param(&format!("{prefix}.weight"), &[out, inp])?;
        let b = self.param(&format!("{prefix}.bias"), &[out])?;
        self.g.linear(x, w, Some(b))
    }

    fn layer_norm(&mut self, prefix: &str, x: NodeId) -> Result<NodeId, IrError> {
        let h = self.cfg.hidden_size;
        let gamma = self.param(&format!("{prefix}.weight"), &[h])?;
        let beta = self.param(&format!("{prefix}.bias"), &[h])?;
        self.g.layer_norm(x, Some(gamma), Some(beta), -1, self.cfg.layer_norm_eps)
    }

    fn activation(&mut self, x: NodeId) -> Result<NodeId, IrError> {
        match self.cfg.activation {
            Activation::Gelu => self.g.gelu(x),
            Activation::GeluTanh => self.g.gelu_tanh(x),
            Activation::Relu => self.g.relu(x),
        }
    }

    /// One post-norm encoder layer on x [batch·seq, hidden]; `mask` is a [batch, seq] padding
    /// mask (any dtype the attention takes), or none.
    fn layer(
        &mut self,
        i: usize,
        x: NodeId,
        mask: Option<NodeId>,
        batch: usize,
        seq: usize,
    ) -> Result<NodeId, IrError> {
        let cfg = self.cfg;
        let (h, f) = (cfg.hidden_size, cfg.intermediate_size);
        let p = |s: &str| format!("encoder.layer.{i}.{s}");
        let heads = [batch, seq, cfg.num_attention_heads, cfg.head_dim()];
        let q = self.linear(&p("attention.self.query"), x, h, h)?;
        let k = self.linear(&p("attention.self.key"), x, h, h)?;
        let v = self.linear(&p("attention.self.value"), x, h, h)?;
        let (q, k, v) = (self.g.reshape(q, &heads)?, self.g.reshape(k, &heads)?, self.g.reshape(v, &heads)?);
        let kind = if mask.is_some() { MaskKind::Padding } else { MaskKind::None };
        let spec = AttentionSpec::new(AttnLayout::Bshd, kind);
        let a = self.g.attention(q, k, v, mask, spec)?;
        let a = self.g.reshape(a, &[batch * seq, h])?;
        let o = self.linear(&p("attention.output.dense"), a, h, h)?;
        let r1 = self.g.add(o, x)?;
        let x1 = self.layer_norm(&p("attention.output.LayerNorm"), r1)?;
        let up = self.linear(&p("intermediate.dense"), x1, h, f)?;
        let up = self.activation(up)?;
        let down = self.linear(&p("output.dense"), up, f, h)?;
        let r2 = self.g.add(down, x1)?;
        self.layer_norm(&p("output.LayerNorm"), r2)
    }
}

/// Builds the embedding graph for `batch` sentences padded to `seq` tokens. Outputs: the
/// L2-normalised embeddings [batch, hidden], then the pooled vectors before that normalisation
/// (for callers that ask for `normalize = false`).
pub fn build_graph(
    cfg: &BertConfig,
    pooling: Pooling,
    batch: usize,
    seq: usize,
    precision: Precision,
) -> Result<Graph, IrError> {
    let mut g = Graph::new(format!("bert_embed_b{batch}_s{seq}"));
    let ids = g.input(INPUT_IDS, &[batch, seq], DType::I32)?;
    let types = g.input(TOKEN_TYPE_IDS, &[batch, seq], DType::I32)?;
    let mask = g.input(ATTENTION_MASK, &[batch, seq], DType::I32)?;
    let pooled =
        pooled_embeddings(&mut g, cfg, pooling, [ids, types, mask], WeightSource::Params(precision))?;
    let sq = g.square(pooled)?;
    let ss = g.sum(sq, &[-1], true)?;
    let norm = g.sqrt(ss)?;
    let floor = g.scalar(MIN_NORM)?;
    let norm = g.maximum(norm, floor)?;
    let out = g.div(pooled, norm)?;
    g.set_outputs(&[out, pooled])?;
    Ok(g)
}

/// The pooled sentence vectors [batch, hidden] (before normalisation) of the I32 [batch, seq]
/// nodes `[input_ids, token_type_ids, attention_mask]`, with weights from `weights`.
pub fn pooled_embeddings(
    g: &mut Graph,
    cfg: &BertConfig,
    pooling: Pooling,
    [ids, types, mask]: [NodeId; 3],
    weights: WeightSource<'_>,
) -> Result<NodeId, IrError> {
    let (batch, seq) = match g.ty(ids)?.shape.dims() {
        [b, s] => (*b, *s),
        _ => {
            return Err(IrError::Attribute {
                op: "bert",
                attr: "input_ids",
                shape: g.ty(ids)?.shape.clone(),
                reason: "token ids must be [batch, seq]".into(),
            })
        }
    };
    let h = cfg.hidden_size;
    let mut b = Builder { g, weights, cfg };
    let word_table = b.param("embeddings.word_embeddings.weight", &[cfg.vocab_size, h])?;
    let pos_table = b.param("embeddings.position_embeddings.weight", &[cfg.max_position_embeddings, h])?;
    let type_table = b.param("embeddings.token_type_embeddings.weight", &[cfg.type_vocab_size, h])?;
    let words = b.g.embedding(word_table, ids)?;
    let types = b.g.embedding(type_table, types)?;
    // Positions are 0..seq for every sentence (padding is on the right), so the first `seq`
    // rows of the table broadcast over the batch.
    let positions = b.g.narrow(pos_table, 0, 0, seq)?;
    let e = b.g.add(words, types)?;
    let e = b.g.add(e, positions)?;
    let e = b.layer_norm("embeddings.LayerNorm", e)?;
    let mut x = b.g.reshape(e, &[batch * seq, h])?;
    for i in 0..cfg.num_hidden_layers {
        x = b.layer(i, x, Some(mask), batch, seq)?;
    }
    let tokens = b.g.reshape(x, &[batch, seq, h])?;

    match pooling {
        Pooling::Mean => {
            let m = b.g.cast(mask, DType::F32)?;
            let m = b.g.reshape(m, &[batch, seq, 1])?;
            let masked = b.g.mul(tokens, m)?;
            let sum = b.g.sum(masked, &[1], false)?;
            let count = b.g.sum(m, &[1], false)?;
            let floor = b.g.scalar(MIN_TOKENS)?;
            let count = b.g.maximum(count, floor)?;
            b.g.div(sum, count)
        }
        Pooling::Cls => {
            let first = b.g.narrow(tokens, 1, 0, 1)?;
            b.g.reshape(first, &[batch, h])
        }
    }
}

/// Every weight the embedding graph reads, `(HF name, dims)` in graph order (the f32 shapes
/// a fine-tune trains).
pub fn weight_shapes(cfg: &BertConfig, pooling: Pooling) -> Result<Vec<(String, Vec<usize>)>, IrError> {
    let probe = build_graph(cfg, pooling, 1, 1, Precision::F32)?;
    Ok(probe.params().iter().map(|(name, _, ty)| (name.to_string(), ty.shape.dims().to_vec())).collect())
}

/// Adds `cfg.num_hidden_layers` encoder layers (f32 params named
/// `encoder.layer.{i}.…`) on x [batch·seq, hidden] to `g` and returns their output, of x's
/// shape. `mask` is a [batch, seq] padding mask or `None` (every key attended).
pub fn encoder_layers(
    g: &mut Graph,
    cfg: &BertConfig,
    x: NodeId,
    mask: Option<NodeId>,
    batch: usize,
    seq: usize,
) -> Result<NodeId, IrError> {
    let mut b = Builder { g, weights: WeightSource::Params(Precision::F32), cfg };
    let mut x = x;
    for i in 0..cfg.num_hidden_layers {
        x = b.layer(i, x, mask, batch, seq)?;
    }
    Ok(x)
}

/// Name of [`encoder_graph`]'s input.
pub const ENCODER_INPUT: &str = "x";

/// The encoder stack alone, unmasked: input `x` f32 [batch·seq, hidden], one output of the
/// same shape (DESIGN.md's BERT benchmark workload).
pub fn encoder_graph(cfg: &BertConfig, batch: usize, seq: usize) -> Result<Graph, IrError> {
    let mut g = Graph::new(format!("bert_{}l_b{batch}_s{seq}", cfg.num_hidden_layers));
    let x = g.input(ENCODER_INPUT, &[batch * seq, cfg.hidden_size], DType::F32)?;
    let out = encoder_layers(&mut g, cfg, x, None, batch, seq)?;
    g.set_outputs(&[out])?;
    Ok(g)
}
