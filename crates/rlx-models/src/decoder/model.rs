//! [`Decoder`]: a decoder checkpoint loaded onto one device, giving logits and greedy
//! continuations of one token sequence.
//!
//! [`Decoder::logits`] runs the full causal forward over the whole sequence (generation runs over
//! the device-resident KV cache instead: [`super::generate`]). Sequences
//! are padded on the right to a bucket length (a power of two, at least
//! [`DecoderOptions::min_bucket`], at most `max_position_embeddings`), so a generation
//! compiles a handful of graphs rather than one per length. Padding is exact, not an
//! approximation: under a causal mask no real position attends to a later one, so the rows of
//! the real tokens do not depend on what follows them; the padded rows are dropped.

use super::cached::KvCache;
use super::config::DecoderConfig;
use super::gguf::{decoder_config, GgufWeights};
use super::graph::{decoder_graph_with, LogitRows, INPUT_IDS, LOGIT_ROWS, ROPE_COS, ROPE_SIN};
use super::params::{quantized_weights, ParamData, QuantizedWeights};
use super::rope::{rope_tables, RopeTables};
use crate::common::checkpoint::Checkpoint;
use crate::common::compile_cache::CompileCache;
use crate::common::gguf::{is_gguf, GgufFile};
use crate::common::safetensors::{Precision, WeightData};
use crate::common::tokens::{argmax, check_token_ids};
use crate::common::weights::{load_params, set_weights};
use crate::error::{ModelError, Result};
use rlx_runtime::{CompileOptions, Device, Executable, HostData, Session};
use std::path::Path;

/// How a [`Decoder`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecoderOptions {
    /// Compile precision; [`Precision::F16`] also keeps the weights f16 on the device.
    pub precision: Precision,
    /// Compiled graphs kept (each holds its own copy of the weights on the device); the least
    /// recently used is dropped past this.
    pub max_cached: usize,
    /// Shortest bucket a sequence is padded to.
    pub min_bucket: usize,
    /// Prompt tokens per prefill run of a KV-cache generation: a prompt goes through the
    /// cache in chunks of this many (the last one padded); a smaller chunk compiles a smaller
    /// graph, a larger one fills the GPU better.
    pub prefill_chunk: usize,
    /// The KV cache's dtype (f16 under Mixed and F16 precision, f32 under F32, by default).
    pub kv_cache: KvCache,
}

impl Default for DecoderOptions {
    fn default() -> Self {
        DecoderOptions {
            precision: Precision::F32,
            max_cached: 4,
            min_bucket: 16,
            prefill_chunk: 512,
            kv_cache: KvCache::Auto,
        }
    }
}

/// One compiled bucket: the executable and the rope tables for its positions.
struct Compiled {
    exe: Executable,
    rope: RopeTables,
}

/// A decoder LLM on one device.
pub struct Decoder {
    pub(super) session: Session,
    pub(super) config: DecoderConfig,
    pub(super) weights: Vec<(String, ParamData)>,
    /// The params among `weights` kept block-quantized.
    pub(super) quant: QuantizedWeights,
    cache: CompileCache<(usize, LogitRows), Compiled>,
    pub(super) opts: DecoderOptions,
    /// The KV-cache executables of the last capacity generated at ([`super::generate`]).
    pub(super) generator: Option<super::generate::Generator>,
}

crate::common::debug_model!(Decoder, config, opts);

/// Where the weights come from.
enum Source {
    Hf(Checkpoint),
    Gguf(GgufWeights),
}

impl Decoder {
    /// Opens `device` and loads the model at `path` at `precision`: a Hugging Face checkpoint
    /// directory (config.json and model.safetensors or a sharded
    /// model.safetensors.index.json), or a `.gguf` file ([`is_gguf`]; see [`super::gguf`]).
    pub fn load(path: &Path, device: Device, precision: Precision) -> Result<Decoder> {
        Decoder::with_options(path, device, DecoderOptions { precision, ..Default::default() })
    }

    /// [`Decoder::load`] with every option given.
    pub fn with_options(path: &Path, device: Device, opts: DecoderOptions) -> Result<Decoder> {
        Decoder::with_session(path, Session::new(device)?, opts)
    }

    /// Loads the model at `path` (as [`Decoder::load`]) onto an opened session. Every weight
    /// is read and checked against the config here, so a bad file fails now rather than at
    /// the first run.
    pub fn with_session(path: &Path, session: Session, opts: DecoderOptions) -> Result<Decoder> {
        let (config, source) = if is_gguf(path) {
            let file = GgufFile::open(path)?;
            let config = decoder_config(&file)?;
            let weights = GgufWeights::new(file, &config);
            (config, Source::Gguf(weights))
        } else {
            (DecoderConfig::from_file(&path.join("config.json"))?, Source::Hf(Checkpoint::open(path)?))
        };
        let weights = load_params(&probe(&config, opts.precision)?, |name, ty| {
            let dims = ty.shape.dims();
            // The graph decides each weight's storage (vectors stay f32).
            let precision = if ty.dtype == rlx_ir::DType::F16 { opts.precision } else { Precision::F32 };
            match &source {
                Source::Hf(c) => Ok(ParamData::Dense(c.load_param(name, dims, precision)?)),
                Source::Gguf(g) => g.load(name, dims, precision),
            }
        })?;
        Ok(Decoder::assemble(session, config, weights, opts))
    }

    /// The dtype this decoder holds its KV cache in (its options' [`KvCache`] on its device).
    pub fn kv_dtype(&self) -> rlx_ir::DType {
        let stores_f16 = self.session.capabilities().dtypes.contains(&rlx_ir::DType::F16);
        self.opts.kv_cache.dtype(self.opts.precision, stores_f16)
    }

    /// The decoder of checked `weights`: options at their minimums, the quantized params
    /// listed, nothing compiled yet.
    fn assemble(
        session: Session,
        config: DecoderConfig,
        weights: Vec<(String, ParamData)>,
        opts: DecoderOptions,
    ) -> Decoder {
        let opts = DecoderOptions {
            max_cached: opts.max_cached.max(1),
            min_bucket: opts.min_bucket.max(1),
            prefill_chunk: opts.prefill_chunk.max(1),
            ..opts
        };
        let quant = quantized_weights(&weights);
        let cache = CompileCache::new(opts.max_cached);
        Decoder { session, config, weights, quant, cache, opts, generator: None }
    }

    /// A decoder of `config` with weights given by name (the params of [`decoder_graph_with`]
    /// at `opts.precision`: f16 data under [`Precision::F16`], f32 otherwise). A missing
    /// weight, or one of the wrong size or dtype, is an error naming it.
    pub fn from_weights(
        session: Session,
        config: DecoderConfig,
        mut given: Vec<(String, WeightData)>,
        opts: DecoderOptions,
    ) -> Result<Decoder> {
        let probe = probe(&config, opts.precision)?;
        let mut weights = Vec::with_capacity(given.len());
        for (name, _, ty) in probe.params() {
            let Some(pos) = given.iter().position(|(n, _)| n == name) else {
                return Err(ModelError::invalid(format!("weight '{name}' ({ty}) is missing")));
            };
            let (n, data) = given.swap_remove(pos);
            let (len, f16) = match &data {
                WeightData::F32(v) => (v.len(), false),
                WeightData::F16(v) => (v.len(), true),
            };
            if len != ty.numel() || f16 != (ty.dtype == rlx_ir::DType::F16) {
                let got = if f16 { "f16" } else { "f32" };
                return Err(ModelError::invalid(format!(
                    "weight '{name}' must be {ty}; got {len} {got} values"
                )));
            }
            weights.push((n, ParamData::Dense(data)));
        }
        if let Some((extra, _)) = given.first() {
            return Err(ModelError::invalid(format!("weight '{extra}' is not a param of this decoder")));
        }
        Ok(Decoder::assemble(session, config, weights, opts))
    }

    /// [`Decoder::random`] with every matrix whose rows are whole blocks of `quant` (the
    /// linear weights and the embedding table, rows of `in_features` elements) stored as random
    /// valid blocks (`rlx_models::random::quant_blocks`, scales ±0.01) and kept quantized on
    /// the device; the rest as [`Decoder::random`] makes them. The weights of a quantized
    /// checkpoint's shape, for benchmarks.
    pub fn random_quantized(
        session: Session,
        config: DecoderConfig,
        opts: DecoderOptions,
        seed: u64,
        quant: rlx_ir::QuantType,
    ) -> Result<Decoder> {
        let mut dec = Decoder::random(session, config, opts, seed)?;
        for (i, (name, data)) in dec.weights.iter_mut().enumerate() {
            let numel = match data {
                ParamData::Dense(WeightData::F32(v)) => v.len(),
                ParamData::Dense(WeightData::F16(v)) => v.len(),
                ParamData::Quant { .. } => continue,
            };
            let Some(cols) = matrix_cols(&dec.config, name) else { continue };
            let Ok(row_bytes) = quant.byte_len(cols) else { continue };
            let rows = numel / cols;
            let bytes =
                crate::random::quant_blocks(quant, rows * row_bytes, seed.wrapping_add(1000 + i as u64));
            *data = ParamData::Quant { quant, bytes };
        }
        dec.quant = quantized_weights(&dec.weights);
        Ok(dec)
    }

    /// A decoder of `config` with random weights (`rlx_models::random::param_value`, the i-th
    /// param seeded `seed + i`): a real model's shape without its file, for benchmarks.
    pub fn random(
        session: Session,
        config: DecoderConfig,
        opts: DecoderOptions,
        seed: u64,
    ) -> Result<Decoder> {
        let mut i = 0u64;
        let weights = load_params(&probe(&config, opts.precision)?, |name, ty| {
            let v = crate::random::param_value(name, ty, seed.wrapping_add(i));
            i += 1;
            Ok(if ty.dtype == rlx_ir::DType::F16 {
                WeightData::F16(v.into_iter().map(half::f16::from_f32).collect())
            } else {
                WeightData::F32(v)
            })
        })?;
        Decoder::from_weights(session, config, weights, opts)
    }

    /// The model's configuration.
    pub fn config(&self) -> &DecoderConfig {
        &self.config
    }

    /// The device the model runs on.
    pub fn device(&self) -> Device {
        self.session.device()
    }

    /// The session the model runs on (its device's live objects, for soak runs).
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The options the decoder was loaded with.
    pub fn options(&self) -> &DecoderOptions {
        &self.opts
    }

    /// The params kept block-quantized on the device (Hugging Face names), with their format.
    pub fn quantized(&self) -> &QuantizedWeights {
        &self.quant
    }

    /// The padded length a sequence of `len` tokens runs at.
    pub fn bucket(&self, len: usize) -> usize {
        len.max(self.opts.min_bucket).next_power_of_two().min(self.config.max_position_embeddings).max(len)
    }

    /// The compiled (bucket length, logit rows) graphs cached now, least recently used first.
    pub fn compiled(&self) -> Vec<(usize, LogitRows)> {
        self.cache.keys()
    }

    /// Refuses an empty sequence, ids outside the vocabulary and sequences longer than
    /// `max_position_embeddings`.
    /// [`Decoder::check`] for a prompt that `n` new tokens follow: the prompt and the n − 1
    /// tokens fed back must fit `max_position_embeddings`. Returns how many positions that is.
    pub(super) fn check_room(&self, prompt: &[i32], n: usize) -> Result<usize> {
        self.check(prompt)?;
        let max = self.config.max_position_embeddings;
        // The last token is never fed back.
        let used = prompt.len() + n.saturating_sub(1);
        if used > max {
            return Err(ModelError::invalid(format!(
                "a prompt of {} tokens leaves room for {} new ones within max_position_embeddings {max}, not {n}",
                prompt.len(),
                max + 1 - prompt.len()
            )));
        }
        Ok(used)
    }

    pub(super) fn check(&self, ids: &[i32]) -> Result<()> {
        check_token_ids(ids, self.config.vocab_size)?;
        let max = self.config.max_position_embeddings;
        if ids.len() > max {
            return Err(ModelError::invalid(format!(
                "{} tokens are more than the model's max_position_embeddings {max}",
                ids.len()
            )));
        }
        Ok(())
    }

    /// Logits of every position of `ids`: row-major [ids.len(), vocab], row i predicting the
    /// token after `ids[..=i]`.
    pub fn logits(&mut self, ids: &[i32]) -> Result<Vec<f32>> {
        self.check(ids)?;
        let mut v = self.run(ids, LogitRows::All)?;
        v.truncate(ids.len() * self.config.vocab_size);
        Ok(v)
    }

    /// Logits of the last position of `ids` only: `[vocab]`. Cheaper than [`Decoder::logits`]:
    /// `lm_head` runs on one row and only that row is read back.
    pub fn last_logits(&mut self, ids: &[i32]) -> Result<Vec<f32>> {
        self.check(ids)?;
        self.run(ids, LogitRows::Selected)
    }

    /// Greedy continuation: `n` new tokens, each the argmax of the logits after the prompt and
    /// the tokens chosen so far (the first index on ties, as torch.argmax). Returns the new
    /// tokens only. No end-of-sequence stop. Runs over the device-resident KV cache
    /// ([`Decoder::generate`]).
    pub fn generate_greedy(&mut self, prompt: &[i32], n: usize) -> Result<Vec<i32>> {
        self.generate(prompt, n, |_| true)
    }

    /// [`Decoder::generate_greedy`] without the cache: every step recomputes the whole
    /// sequence through the full forward. Slow; a reference for the cached path.
    pub fn generate_greedy_recompute(&mut self, prompt: &[i32], n: usize) -> Result<Vec<i32>> {
        self.check_room(prompt, n)?;
        let mut ids = prompt.to_vec();
        let mut out = Vec::new();
        for _ in 0..n {
            let logits = self.last_logits(&ids)?;
            let token = argmax(&logits);
            out.push(token);
            ids.push(token);
        }
        Ok(out)
    }

    /// One run over `ids` (checked) padded to its bucket; the values of the whole output.
    fn run(&mut self, ids: &[i32], rows: LogitRows) -> Result<Vec<f32>> {
        let len = ids.len();
        let bucket = self.bucket(len);
        let vocab = self.config.vocab_size;
        let mut padded = ids.to_vec();
        padded.resize(bucket, 0);
        let last = [(len - 1) as i32];
        let c = self.compiled_for(bucket, rows)?;
        let mut inputs: Vec<(&str, &dyn HostData)> =
            vec![(INPUT_IDS, &padded), (ROPE_COS, &c.rope.cos), (ROPE_SIN, &c.rope.sin)];
        if rows == LogitRows::Selected {
            inputs.push((LOGIT_ROWS, &last));
        }
        let out = c.exe.run(&inputs)?;
        let values = out.first().map(|t| t.to_f32_vec()).unwrap_or_default();
        let rows_out = if rows == LogitRows::All { bucket } else { 1 };
        if values.len() != rows_out * vocab {
            return Err(ModelError::OutputSize { batch: rows_out, dim: vocab, got: values.len() });
        }
        Ok(values)
    }

    /// The executable for (bucket, rows): from the cache, or compiled with every weight set.
    fn compiled_for(&mut self, bucket: usize, rows: LogitRows) -> Result<&mut Compiled> {
        self.cache.get_or_insert_with((bucket, rows), || {
            let g = decoder_graph_with(&self.config, 1, bucket, self.opts.precision, rows, &self.quant)?;
            let opts = CompileOptions { precision: self.opts.precision, ..Default::default() };
            let mut exe = self.session.compile_with(&g, &opts)?;
            set_weights(&mut exe, &self.weights)?;
            let positions: Vec<usize> = (0..bucket).collect();
            let rope = rope_tables(&self.config, &positions);
            Ok(Compiled { exe, rope })
        })
    }
}

/// The params every graph of `config` has (they do not depend on the shape; a one-token graph
/// lists them), all listed dense: the loaded data says which stay quantized.
fn probe(config: &DecoderConfig, precision: Precision) -> Result<rlx_ir::Graph> {
    Ok(decoder_graph_with(config, 1, 1, precision, LogitRows::All, &QuantizedWeights::new())?)
}

/// The row length (in features) of the decoder matrix `name`, `None` for vectors.
fn matrix_cols(cfg: &DecoderConfig, name: &str) -> Option<usize> {
    // The MoE router stays f32 (its scores pick the experts).
    if !name.ends_with(".weight") || name.contains("norm") || name.contains("mlp.gate.") {
        return None;
    }
    if name.contains("down_proj") {
        Some(cfg.intermediate_size)
    } else if name.contains("o_proj") {
        Some(cfg.q_dim())
    } else {
        Some(cfg.hidden_size)
    }
}
