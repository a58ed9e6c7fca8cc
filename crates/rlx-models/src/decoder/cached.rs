//! The decoder forward over a KV cache held on the device: one graph per (steps, capacity).
//!
//! Each layer's keys and values live in [`rlx_ir::Graph::state`]s of shape
//! [1, capacity, kv_heads, head_dim], named by [`cache_names`], in f32 or f16 ([`KvCache`]: a
//! cache in f16 takes half the memory and half the attention's reads; the new rows are rounded
//! once as they are written). A run writes this run's
//! `steps` rows at the run-time `offset` (`write_rows`), then attends over the cache with
//! `offset + steps` valid keys (`attention_with_lengths`), so query row i sits at position
//! `offset + i` under the causal (or sliding-window) mask. The same graph therefore serves every
//! position: a decode step is `steps = 1`; a prompt goes through a `steps = chunk` graph once
//! per chunk, the last chunk padded on the right (the padded rows land after every real
//! position, where the causal mask hides them, and the next step overwrites them).
//!
//! Inputs, all I32: [`INPUT_IDS`] [1, steps], [`POSITIONS`] \[steps\] (the rotary tables are
//! constants of the graph, gathered on the device), [`OFFSET`] \[1\] and [`LOGIT_ROW`] \[1\], the
//! row whose logits the step returns. A step moves these few words in and one token (or one
//! row of logits) out.

use super::config::DecoderConfig;
use super::graph::{DecoderBuilder, KvHook, RopeInputs, INPUT_IDS};
use super::params::QuantizedWeights;
use super::rope::rope_tables;
use crate::common::safetensors::Precision;
use rlx_ir::{BinaryOp, CompareOp, DType, Graph, IrError, NodeId, Tensor};
use rlx_nn::prelude::*;

/// I32 \[steps\]: the position of each row (offset, offset + 1, …).
pub const POSITIONS: &str = "positions";
/// I32 \[1\]: where this run's rows go in the cache (the position of its first row).
pub const OFFSET: &str = "offset";
/// I32 \[1\]: the row (0..steps) whose logits the run returns.
pub const LOGIT_ROW: &str = "logit_row";
/// U32 \[2\] of a [`StepOutput::Sample`] graph: `[seed, offset]` of the random draw
/// (`Graph::rng_key`); a generation passes its seed and the index of the token being drawn.
pub const RNG_KEY: &str = "rng_key";
/// I32 [1, capacity] of a sampling graph with a repetition penalty: the tokens so far (prompt
/// and generated), −1 past them.
pub const PREV_TOKENS: &str = "prev_tokens";

/// The token a [`StepOutput::Token`] or [`StepOutput::Sample`] step returns when the logits it
/// chose from hold a NaN or an infinity.
pub const NON_FINITE_TOKEN: i32 = -1;

/// What a cached step returns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StepOutput {
    /// The greedy token, I32 \[1\]: the argmax of the logits on the device (the first index on
    /// ties; NaN counts as the largest, as torch.argmax).
    Token,
    /// The f32 logits of the chosen row, [1, vocab].
    Logits,
    /// A token drawn on the device by `Graph::sample_tokens` with this spec, I32 \[1\].
    Sample(rlx_nn::SamplingSpec),
}

impl StepOutput {
    /// Whether the graph takes [`PREV_TOKENS`].
    pub fn penalised(&self) -> bool {
        matches!(self, StepOutput::Sample(s) if s.repetition_penalty != 1.0)
    }
}

/// The dtype a decoder holds its KV cache in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KvCache {
    /// f16 where the compile already rounds attention's operands to f16
    /// ([`Precision::Mixed`] and [`Precision::F16`]: the tensor-core attention reads k and v
    /// as f16 anyway), f32 at [`Precision::F32`], which stays the exact reference.
    #[default]
    Auto,
    /// Keys and values in f32.
    F32,
    /// Keys and values rounded to f16 as they are written: half the memory, and the GPU's
    /// attention reads them as stored.
    F16,
}

impl KvCache {
    /// The cache's dtype under `precision` on a device that stores f16 tensors or not (`Auto`
    /// keeps f32 where it does not, such as a GPU without shader f16; an explicit `F16` there
    /// is the compile's error naming the missing feature).
    pub fn dtype(self, precision: Precision, stores_f16: bool) -> DType {
        match self {
            KvCache::Auto if precision.f16_operands() && stores_f16 => DType::F16,
            KvCache::Auto | KvCache::F32 => DType::F32,
            KvCache::F16 => DType::F16,
        }
    }
}

impl std::str::FromStr for KvCache {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "auto" => Ok(KvCache::Auto),
            "f32" => Ok(KvCache::F32),
            "f16" => Ok(KvCache::F16),
            _ => Err(format!("unknown KV cache dtype {s:?}: expected auto, f32 or f16")),
        }
    }
}

/// The state names of layer `i`'s keys and values.
pub fn cache_names(i: usize) -> (String, String) {
    (format!("kv_cache.{i}.keys"), format!("kv_cache.{i}.values"))
}

/// Writes each layer's new keys and values into its cache states: the single-sequence cache
/// here ([`cache_names`], offset I32 \[1\]) and the batched decoder's slots
/// (`batched::batch_cache_names`, one offset per slot).
pub(super) struct CacheHook {
    /// The state names of a layer's keys and values.
    pub names: fn(usize) -> (String, String),
    /// Each state's dims: [sequences, capacity, kv_heads, head_dim].
    pub dims: [usize; 4],
    /// I32 \[1\] or one per sequence: where this run's rows go.
    pub offset: NodeId,
    /// I32 per sequence: the valid keys after the write.
    pub lens: NodeId,
    /// The states' dtype (the new rows are cast to it before the write).
    pub dtype: DType,
}

impl KvHook for CacheHook {
    fn keys_values(
        &mut self,
        g: &mut Graph,
        layer: usize,
        k: NodeId,
        v: NodeId,
    ) -> Result<(NodeId, NodeId), IrError> {
        let (kn, vn) = (self.names)(layer);
        let ks = g.state(&kn, &self.dims, self.dtype)?;
        let vs = g.state(&vn, &self.dims, self.dtype)?;
        let (k, v) = match g.ty(k)?.dtype == self.dtype {
            true => (k, v),
            false => (g.cast(k, self.dtype)?, g.cast(v, self.dtype)?),
        };
        let k = g.write_rows(ks, k, self.offset, 1)?;
        let v = g.write_rows(vs, v, self.offset, 1)?;
        Ok((k, v))
    }

    fn lengths(&self) -> Option<NodeId> {
        Some(self.lens)
    }
}

/// The cached forward of `steps` tokens over a cache of `capacity` positions in `kv` (see the
/// module doc); weights stored as `precision` says and the ones in `quant` block-quantized,
/// like [`super::decoder_graph_with`].
pub fn cached_decoder_graph(
    cfg: &DecoderConfig,
    steps: usize,
    capacity: usize,
    precision: Precision,
    kv: DType,
    output: StepOutput,
    quant: &QuantizedWeights,
) -> Result<Graph, IrError> {
    let tag = match output {
        StepOutput::Token => "token",
        StepOutput::Logits => "logits",
        StepOutput::Sample(_) => "sample",
    };
    let name = format!("{}_cached_t{steps}_c{capacity}_{tag}", cfg.architecture.model_type());
    let mut g = Graph::new(name);
    let ids = g.input(INPUT_IDS, &[1, steps], DType::I32)?;
    let positions = g.input(POSITIONS, &[steps], DType::I32)?;
    let offset = g.input(OFFSET, &[1], DType::I32)?;
    let row = g.input(LOGIT_ROW, &[1], DType::I32)?;
    let steps_i32 = i32::try_from(steps).unwrap_or(i32::MAX);
    let width = g.constant(Tensor::from_i32([1], vec![steps_i32])?)?;
    let lens = g.add(offset, width)?;
    // Positions past the capacity (padding of a last chunk) gather zeros: those rows are
    // dropped by the cache write and never reach a real row.
    let all: Vec<usize> = (0..capacity).collect();
    let tables = rope_tables(cfg, &all);
    let cos_table = g.constant(Tensor::from_f32([capacity, tables.half], tables.cos)?)?;
    let sin_table = g.constant(Tensor::from_f32([capacity, tables.half], tables.sin)?)?;
    let cos = g.gather(cos_table, positions, 0)?;
    let sin = g.gather(sin_table, positions, 0)?;

    let mut hook = CacheHook {
        names: cache_names,
        dims: [1, capacity, cfg.num_key_value_heads, cfg.head_dim],
        offset,
        lens,
        dtype: kv,
    };
    let mut b = DecoderBuilder::new(&mut g, cfg, precision, quant);
    let rope = RopeInputs { cos, sin, per_row: false };
    let mut x = b.embed(ids, steps)?;
    for i in 0..cfg.num_hidden_layers {
        x = b.layer(i, x, 1, steps, rope, &mut hook)?;
    }
    let x = b.g.gather(x, row, 0)?;
    let logits = b.head(x)?;
    let out = match output {
        StepOutput::Token => b.g.argmax(logits, 1, false)?,
        StepOutput::Logits => logits,
        StepOutput::Sample(spec) => {
            let key = b.g.rng_key(RNG_KEY)?;
            let prev = match output.penalised() {
                true => Some(b.g.input(PREV_TOKENS, &[1, capacity], DType::I32)?),
                false => None,
            };
            b.g.sample_tokens(logits, key, &spec, prev)?
        }
    };
    let out = match output {
        StepOutput::Logits => out,
        StepOutput::Token | StepOutput::Sample(_) => finite_or_minus_one(&mut g, logits, out)?,
    };
    g.set_outputs(&[out])?;
    Ok(g)
}

/// `token` (I32 \[rows\], one per row of `logits` [rows, vocab]) where every logit of its row is
/// finite, [`NON_FINITE_TOKEN`] otherwise (row by row: one row's NaN never touches another's
/// token): the sum of the logits minus itself is 0 exactly when no logit is NaN or infinite. Without it a
/// model whose weights give NaN would emit the argmax's pick of a NaN (token 0 when all are)
/// forever; one reduction over the row costs far less than a step.
pub(super) fn finite_or_minus_one(g: &mut Graph, logits: NodeId, token: NodeId) -> Result<NodeId, IrError> {
    let total = g.sum(logits, &[1], false)?;
    let probe = g.binary(BinaryOp::Sub, total, total)?;
    let zero = g.constant(Tensor::from_f64([1], DType::F32, &[0.0])?)?;
    let finite = g.compare(CompareOp::Eq, probe, zero)?;
    let flag = g.constant(Tensor::from_f64([1], DType::I32, &[f64::from(NON_FINITE_TOKEN)])?)?;
    g.where_(finite, token, flag)
}

#[cfg(test)]
mod tests {
    // Test helpers unwrap and panic: a failure is the point.
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use crate::decoder::config::Architecture;
    use crate::decoder::graph::tests::tiny;

    #[test]
    fn one_cache_state_pair_per_layer_and_a_token_out() {
        let cfg = tiny(Architecture::Qwen2);
        let q = QuantizedWeights::new();
        let g = cached_decoder_graph(&cfg, 4, 16, Precision::F32, DType::F32, StepOutput::Token, &q).unwrap();
        let states: Vec<String> = g.states().iter().map(|(n, _, _)| n.to_string()).collect();
        assert_eq!(states, ["kv_cache.0.keys", "kv_cache.0.values", "kv_cache.1.keys", "kv_cache.1.values"]);
        let (_, _, ty) = g.states()[0];
        assert_eq!(ty.shape.dims(), [1, 16, 2, 4]);
        let out = g.ty(g.outputs()[0]).unwrap();
        assert_eq!((out.shape.dims(), out.dtype), (&[1usize][..], DType::I32));
        let inputs: Vec<&str> = g.inputs().iter().map(|(n, _, _)| *n).collect();
        assert_eq!(inputs, [INPUT_IDS, POSITIONS, OFFSET, LOGIT_ROW]);
        let logits =
            cached_decoder_graph(&cfg, 1, 16, Precision::F32, DType::F32, StepOutput::Logits, &q).unwrap();
        let out = logits.ty(logits.outputs()[0]).unwrap();
        assert_eq!(out.shape.dims(), [1, 11]);
        // Same params as the full forward: one set of weights serves both.
        let full = crate::decoder::decoder_graph(&cfg, 1, 3).unwrap();
        let names = |g: &Graph| g.params().iter().map(|(n, _, _)| n.to_string()).collect::<Vec<_>>();
        assert_eq!(names(&g), names(&full));
        // An f16 cache: f16 states, the new rows cast once before each write.
        let half =
            cached_decoder_graph(&cfg, 4, 16, Precision::F32, DType::F16, StepOutput::Token, &q).unwrap();
        assert!(half.states().iter().all(|(_, _, t)| t.dtype == DType::F16));
        let casts = half.nodes().iter().filter(|n| matches!(n.op, rlx_ir::Op::Cast(DType::F16))).count();
        assert_eq!(casts, 4, "k and v of each of the two layers");
    }

    #[test]
    fn the_cache_follows_the_precision_unless_told() {
        assert_eq!(KvCache::Auto.dtype(Precision::F32, true), DType::F32);
        assert_eq!(KvCache::Auto.dtype(Precision::Mixed, true), DType::F16);
        assert_eq!(KvCache::Auto.dtype(Precision::F16, true), DType::F16);
        // A device without f16 storage keeps the f32 cache unless told otherwise.
        assert_eq!(KvCache::Auto.dtype(Precision::F16, false), DType::F32);
        assert_eq!(KvCache::F16.dtype(Precision::F32, false), DType::F16);
        assert_eq!(KvCache::F32.dtype(Precision::F16, true), DType::F32);
        assert_eq!("f16".parse::<KvCache>(), Ok(KvCache::F16));
        assert!("q8".parse::<KvCache>().unwrap_err().contains("auto, f32 or f16"));
    }
}
