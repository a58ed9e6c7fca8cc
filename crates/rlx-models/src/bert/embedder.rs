//! [`Embedder`]: a model directory loaded onto one device, turning sentences into normalised
//! embeddings. Graphs are compiled per (batch, seq) shape and kept in a small LRU cache.
//!
//! The work is async at its core (`embed_async` and below), so it runs on the web, where a GPU
//! answers on the browser's event loop; the sync methods (native only) wait for it with
//! pollster. On a backend that never waits (the CPU, native Vulkan) the futures are ready at
//! once.

use crate::bert::config::{read_model_config, ModelConfig};
use crate::bert::graph::{build_graph, ATTENTION_MASK, INPUT_IDS, TOKEN_TYPE_IDS};
use crate::bert::tokenizer::{SentenceTokenizer, TokenBatch};
use crate::common::compile_cache::CompileCache;
use crate::common::safetensors::{Precision, SafetensorsFile, WeightData};
use crate::common::weights::{load_params, set_weights_async};
use crate::error::{ModelError, Result};
use rlx_runtime::{CompileOptions, Device, Executable, HostData, Session};
use std::path::Path;

/// Files a model directory must hold.
pub const REQUIRED_FILES: [&str; 3] = ["config.json", "model.safetensors", "tokenizer.json"];

/// How an [`Embedder`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EmbedderOptions {
    /// Sentences per model run in [`Embedder::embed`].
    pub batch_size: usize,
    /// Compile precision; [`Precision::F16`] also keeps the weights f16 on the device.
    pub precision: Precision,
    /// Compiled shapes kept; the least recently used is dropped past this.
    pub max_cached: usize,
}

impl Default for EmbedderOptions {
    fn default() -> Self {
        EmbedderOptions { batch_size: 32, precision: Precision::F32, max_cached: 8 }
    }
}

/// A sentence-embedding model on one device.
pub struct Embedder {
    session: Session,
    config: ModelConfig,
    tokenizer: SentenceTokenizer,
    weights: Vec<(String, WeightData)>,
    cache: CompileCache<(usize, usize), Executable>,
    opts: EmbedderOptions,
}

crate::common::debug_model!(Embedder, config, opts);

/// Files of [`REQUIRED_FILES`] missing from `dir`, comma-separated; `None` when all are there.
pub fn missing_files(dir: &Path) -> Option<String> {
    let missing: Vec<&str> = REQUIRED_FILES.iter().copied().filter(|f| !dir.join(f).is_file()).collect();
    (!missing.is_empty()).then(|| missing.join(", "))
}

impl Embedder {
    /// Opens `device` and loads the model in `dir`.
    pub fn load(dir: &Path, device: Device, opts: EmbedderOptions) -> Result<Embedder> {
        Embedder::with_session(dir, Session::new(device)?, opts)
    }

    /// Loads the model in `dir` onto an already opened session. Every weight is read and
    /// checked against the config here, so a bad file fails now rather than at the first run.
    pub fn with_session(dir: &Path, session: Session, opts: EmbedderOptions) -> Result<Embedder> {
        if opts.batch_size == 0 {
            return Err(ModelError::ZeroBatch);
        }
        if let Some(missing) = missing_files(dir) {
            return Err(ModelError::NoModel { dir: dir.to_path_buf(), missing });
        }
        let config = read_model_config(dir)?;
        let tokenizer = SentenceTokenizer::from_file(&dir.join("tokenizer.json"), config.max_seq_length)?;
        let file = SafetensorsFile::open(&dir.join("model.safetensors"))?;
        Embedder::from_parts(session, config, tokenizer, &file, opts)
    }

    /// The model from its parts, already read (the web fetches the files itself: see
    /// [`crate::bert::config::model_config_from_json`], [`SentenceTokenizer::from_json`] and
    /// [`SafetensorsFile::from_bytes`]). Every weight is read and checked against the config.
    pub fn from_parts(
        session: Session,
        config: ModelConfig,
        tokenizer: SentenceTokenizer,
        file: &SafetensorsFile,
        opts: EmbedderOptions,
    ) -> Result<Embedder> {
        if opts.batch_size == 0 {
            return Err(ModelError::ZeroBatch);
        }
        // The params are the same for every shape; a tiny graph lists them.
        let probe = build_graph(&config.bert, config.pooling, 1, 1, opts.precision)?;
        let weights = load_params(&probe, |name, ty| file.load(name, ty.shape.dims(), opts.precision))?;
        Ok(Embedder {
            session,
            config,
            tokenizer,
            weights,
            cache: CompileCache::new(opts.max_cached),
            opts: EmbedderOptions { max_cached: opts.max_cached.max(1), ..opts },
        })
    }

    /// Length of each embedding.
    pub fn dim(&self) -> usize {
        self.config.bert.hidden_size
    }

    /// The device the model runs on.
    pub fn device(&self) -> Device {
        self.session.device()
    }

    /// The session the model runs on (its device's live objects, for soak runs).
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The model's configuration.
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &SentenceTokenizer {
        &self.tokenizer
    }

    /// The options the embedder was loaded with.
    pub fn options(&self) -> &EmbedderOptions {
        &self.opts
    }

    /// The (batch, seq) shapes compiled and cached now, least recently used first.
    pub fn compiled_shapes(&self) -> Vec<(usize, usize)> {
        self.cache.keys()
    }

    /// Embeds `sentences` in order. They are run longest first in batches of
    /// `batch_size` (similar lengths share a batch, so little padding), and returned in the
    /// order given.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn embed(&mut self, sentences: &[&str]) -> Result<Vec<Vec<f32>>> {
        pollster::block_on(self.embed_async(sentences))
    }

    /// Embeds `sentences` in one model run, padded to the longest of them.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn embed_batch(&mut self, sentences: &[&str]) -> Result<Vec<Vec<f32>>> {
        pollster::block_on(self.embed_batch_async(sentences))
    }

    /// [`Embedder::embed_batch`] with `normalize` chosen: `false` gives the pooled vectors
    /// before the L2 normalisation (sentence-transformers' `normalize_embeddings=False` on a
    /// model whose pipeline has no Normalize module).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn embed_batch_with(&mut self, sentences: &[&str], normalize: bool) -> Result<Vec<Vec<f32>>> {
        if sentences.is_empty() {
            return Ok(Vec::new());
        }
        let tokens = self.tokenizer.batch(sentences)?;
        pollster::block_on(self.run_output_async(&tokens, usize::from(!normalize)))
    }

    /// Runs an already tokenized batch.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn run_tokens(&mut self, tokens: &TokenBatch) -> Result<Vec<Vec<f32>>> {
        pollster::block_on(self.run_tokens_async(tokens))
    }

    /// [`Embedder::embed`] without blocking (the web).
    pub async fn embed_async(&mut self, sentences: &[&str]) -> Result<Vec<Vec<f32>>> {
        let lengths = self.tokenizer.lengths(sentences)?;
        let mut order: Vec<usize> = (0..sentences.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(lengths.get(i).copied().unwrap_or(0)));
        let mut out = vec![Vec::new(); sentences.len()];
        for chunk in order.chunks(self.opts.batch_size) {
            let batch: Vec<&str> = chunk.iter().filter_map(|&i| sentences.get(i).copied()).collect();
            for (&i, e) in chunk.iter().zip(self.embed_batch_async(&batch).await?) {
                if let Some(slot) = out.get_mut(i) {
                    *slot = e;
                }
            }
        }
        Ok(out)
    }

    /// [`Embedder::embed_batch`] without blocking (the web).
    pub async fn embed_batch_async(&mut self, sentences: &[&str]) -> Result<Vec<Vec<f32>>> {
        if sentences.is_empty() {
            return Ok(Vec::new());
        }
        let tokens = self.tokenizer.batch(sentences)?;
        self.run_tokens_async(&tokens).await
    }

    /// [`Embedder::run_tokens`] without blocking (the web).
    pub async fn run_tokens_async(&mut self, tokens: &TokenBatch) -> Result<Vec<Vec<f32>>> {
        self.run_output_async(tokens, 0).await
    }

    /// Runs a tokenized batch and returns output `index` of the graph ([`build_graph`]: 0 the
    /// normalised embeddings, 1 the pooled vectors), one row per sentence.
    async fn run_output_async(&mut self, tokens: &TokenBatch, index: usize) -> Result<Vec<Vec<f32>>> {
        let vocab = self.config.bert.vocab_size;
        if let Some(&bad) = tokens.input_ids.iter().find(|&&id| id < 0 || id as usize >= vocab) {
            return Err(ModelError::Tokenize {
                reason: format!("token id {bad} is outside the model's vocabulary of {vocab}: tokenizer.json does not match config.json"),
            });
        }
        let positions = self.config.bert.max_position_embeddings;
        if tokens.seq > positions {
            return Err(ModelError::InvalidInput {
                reason: format!(
                    "a sequence of {} tokens is longer than the model's max_position_embeddings \
                     {positions}; truncate it",
                    tokens.seq
                ),
            });
        }
        let types = self.config.bert.type_vocab_size;
        if tokens.token_type_ids.iter().any(|&t| t < 0 || t as usize >= types) {
            return Err(ModelError::Tokenize { reason: format!("a token type id is outside 0..{types}") });
        }
        let dim = self.dim();
        let exe = self.executable(tokens.batch, tokens.seq).await?;
        let inputs: [(&str, &dyn HostData); 3] = [
            (INPUT_IDS, &tokens.input_ids),
            (TOKEN_TYPE_IDS, &tokens.token_type_ids),
            (ATTENTION_MASK, &tokens.attention_mask),
        ];
        let out = exe.run_async(&inputs).await?;
        let values = out.get(index).map(|t| t.to_f32_vec()).unwrap_or_default();
        if values.len() != tokens.batch * dim {
            return Err(ModelError::OutputSize { batch: tokens.batch, dim, got: values.len() });
        }
        Ok(values.chunks_exact(dim).map(<[f32]>::to_vec).collect())
    }

    /// The executable for (batch, seq): from the cache, or compiled with every weight set.
    async fn executable(&mut self, batch: usize, seq: usize) -> Result<&mut Executable> {
        // Compiling is async (the web), so not through `get_or_insert_with`.
        if !self.cache.promote(&(batch, seq)) {
            let g = build_graph(&self.config.bert, self.config.pooling, batch, seq, self.opts.precision)?;
            let opts = CompileOptions { precision: self.opts.precision, ..Default::default() };
            let mut exe = self.session.compile_async(&g, &opts).await?;
            set_weights_async(&mut exe, &self.weights).await?;
            self.cache.insert((batch, seq), exe);
        }
        self.cache.latest()
    }
}

/// Cosine similarity of two vectors (0 when either is all zeros; NaN in, NaN out).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (&x, &y) in a.iter().zip(b) {
        dot += x as f64 * y as f64;
        na += x as f64 * x as f64;
        nb += y as f64 * y as f64;
    }
    let denom = (na * nb).sqrt();
    if denom == 0.0 {
        return if denom.is_nan() { f32::NAN } else { 0.0 };
    }
    (dot / denom) as f32
}
