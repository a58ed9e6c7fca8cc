//! [`CausalLm`]: what `rlx logits`, `rlx generate` and the server need of a causal language
//! model, whatever its family, and [`load_causal_lm`], which picks the family from the files.
//!
//! Implemented by the attention [`Decoder`] (Llama, Qwen2, Qwen3, Mistral, Qwen3-MoE; Hugging
//! Face directories and GGUF files) and by [`Mamba`] (Mamba-1 directories). A caller holds a
//! `Box<dyn CausalLm>` and never branches on the model type.
//!
//! Sequences: every call is one whole sequence. Nothing of a sequence carries over to the next
//! call (a model keeps compiled graphs between calls, never tokens), so there is no reset: a
//! new request is a new call, and one model serves requests one after the other.
//!
//! The text side is read from the files, not from a loaded model, so that a missing tokenizer
//! or chat template is told before the weights load: [`causal_tokenizer`] (tokenizer.json or
//! a GGUF file's own), [`ChatTemplate::for_model`] and [`stop_tokens`], each given the same
//! path as [`load_causal_lm`].

use crate::common::tokens::{argmax, check_token_ids};
use crate::error::{ModelError, Result};
use crate::mamba::is_mamba_config;
use crate::{BatchDecoder, Decoder, DecoderOptions, Mamba, Precision, SamplingSpec};
use rlx_runtime::{Device, LiveObjects};
use std::path::Path;

pub use crate::common::stop::stop_tokens;
pub use crate::common::tokenizer::causal_tokenizer;
pub use crate::decoder::chat::ChatTemplate;

/// What a loaded [`CausalLm`] is: its family, size and limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LmInfo {
    /// The Hugging Face class of the model, as its config names it (`Qwen2ForCausalLM`,
    /// `MambaForCausalLM`, …).
    pub architecture: &'static str,
    /// Number of layers (blocks).
    pub num_layers: usize,
    /// Size of the vocabulary: the width of a logits row; token ids are `0..vocab_size`.
    pub vocab_size: usize,
    /// The most positions a sequence may hold, prompt and generated tokens together (the
    /// decoder's `max_position_embeddings`); `None` when the model has no such limit (Mamba).
    pub context_length: Option<usize>,
    /// The device the model runs on.
    pub device: Device,
    /// How [`CausalLm::generate`] computes each token, for logs ("over the KV cache", …).
    pub generation_method: &'static str,
}

/// A causal language model on one device: logits of a token sequence and generation after a
/// prompt.
pub trait CausalLm {
    /// What the model is ([`LmInfo`]); the methods below read single fields of it.
    fn info(&self) -> LmInfo;

    /// [`LmInfo::architecture`].
    fn architecture(&self) -> &'static str {
        self.info().architecture
    }

    /// [`LmInfo::num_layers`].
    fn num_layers(&self) -> usize {
        self.info().num_layers
    }

    /// [`LmInfo::device`].
    fn device(&self) -> Device {
        self.info().device
    }

    /// [`LmInfo::vocab_size`].
    fn vocab_size(&self) -> usize {
        self.info().vocab_size
    }

    /// [`LmInfo::context_length`].
    fn context_length(&self) -> Option<usize> {
        self.info().context_length
    }

    /// Logits of every position of `ids`: row-major `[ids.len(), vocab_size]`, row i
    /// predicting the token after `ids[..=i]`. An empty sequence, an id outside the vocabulary
    /// or a sequence past the context length is [`ModelError::InvalidInput`].
    fn logits(&mut self, ids: &[i32]) -> Result<Vec<f32>>;

    /// Up to `n` new tokens after `prompt`, each drawn by `spec` (greedy: the argmax of the
    /// logits, the first index on ties) with the random key `[seed, t]` for token `t`.
    /// `on_token` sees each token as it comes and stops the generation by returning `false`.
    /// Returns the new tokens. No end-of-sequence stop of its own: the caller's `on_token`
    /// decides (see [`stop_tokens`]). A spec the model cannot draw with, or a prompt that
    /// leaves no room for `n` tokens, is an error before any token.
    fn generate(
        &mut self,
        prompt: &[i32],
        n: usize,
        spec: &SamplingSpec,
        seed: u32,
        on_token: &mut dyn FnMut(i32) -> bool,
    ) -> Result<Vec<i32>>;

    /// [`LmInfo::generation_method`].
    fn generation_method(&self) -> &'static str {
        self.info().generation_method
    }

    /// The device objects the model's session holds now (`Session::live_objects`: buffers and
    /// their bytes, pipelines, ...), for leak checks of long runs; `None` on the CPU, which
    /// counts nothing.
    fn live_objects(&self) -> Option<LiveObjects>;

    /// A [`BatchDecoder`] over this model (continuous batching: up to `max_streams` sequences
    /// of at most `capacity` positions each, stepped together), or `None` for a family with no
    /// batched decode step (Mamba), which generates one sequence at a time through
    /// [`CausalLm::generate`]. `Some(Err)` when the batch does not fit the device (the error
    /// says how many streams or positions would).
    fn batch_decoder(&self, max_streams: usize, capacity: usize) -> Option<Result<BatchDecoder>> {
        let _ = (max_streams, capacity);
        None
    }
}

/// Opens `device` and loads the causal LM at `path`: a directory whose config.json is a
/// Mamba-1 model ([`is_mamba_config`]) as [`Mamba`], which runs at f32 only (another
/// `opts.precision` is a [`ModelError::Config`]); any other directory or a `.gguf` file as a
/// [`Decoder`] with `opts`.
pub fn load_causal_lm(path: &Path, device: Device, opts: DecoderOptions) -> Result<Box<dyn CausalLm>> {
    let config = path.join("config.json");
    if path.is_dir() && is_mamba_config(&config) {
        if opts.precision != Precision::F32 {
            let reason = format!("Mamba models run at f32 only; drop --precision {}", opts.precision);
            return Err(ModelError::Config { path: config, reason });
        }
        return Ok(Box::new(Mamba::load(path, device)?));
    }
    Ok(Box::new(Decoder::with_options(path, device, opts)?))
}

impl CausalLm for Decoder {
    fn info(&self) -> LmInfo {
        let c = self.config();
        LmInfo {
            architecture: c.architecture.hf_class(),
            num_layers: c.num_hidden_layers,
            vocab_size: c.vocab_size,
            context_length: Some(c.max_position_embeddings),
            device: Decoder::device(self),
            generation_method: "over the KV cache",
        }
    }

    fn logits(&mut self, ids: &[i32]) -> Result<Vec<f32>> {
        Decoder::logits(self, ids)
    }

    fn live_objects(&self) -> Option<LiveObjects> {
        self.session().live_objects()
    }

    fn generate(
        &mut self,
        prompt: &[i32],
        n: usize,
        spec: &SamplingSpec,
        seed: u32,
        on_token: &mut dyn FnMut(i32) -> bool,
    ) -> Result<Vec<i32>> {
        self.sample(prompt, n, spec, seed, on_token)
    }

    fn batch_decoder(&self, max_streams: usize, capacity: usize) -> Option<Result<BatchDecoder>> {
        Some(BatchDecoder::new(self, max_streams, capacity))
    }
}

impl CausalLm for Mamba {
    fn info(&self) -> LmInfo {
        LmInfo {
            architecture: "MambaForCausalLM",
            num_layers: self.config().num_hidden_layers,
            vocab_size: self.config().vocab_size,
            context_length: None,
            device: Mamba::device(self),
            generation_method: "recomputing the whole sequence per token",
        }
    }

    fn logits(&mut self, ids: &[i32]) -> Result<Vec<f32>> {
        Mamba::logits(self, ids)
    }

    fn live_objects(&self) -> Option<LiveObjects> {
        self.session().live_objects()
    }

    /// Greedy only, one full forward over the sequence per token (Mamba has no recurrent
    /// decode state yet); a sampling spec is [`ModelError::InvalidInput`].
    fn generate(
        &mut self,
        prompt: &[i32],
        n: usize,
        spec: &SamplingSpec,
        _seed: u32,
        on_token: &mut dyn FnMut(i32) -> bool,
    ) -> Result<Vec<i32>> {
        if !spec.is_greedy() || spec.repetition_penalty != 1.0 {
            return Err(ModelError::InvalidInput {
                reason: "Mamba models generate greedily only (no sampling yet): drop the sampling options"
                    .into(),
            });
        }
        let vocab = self.config().vocab_size;
        check_token_ids(prompt, vocab)?;
        let mut ids = prompt.to_vec();
        // Grown as tokens come: n is what the request allows, not what it will use.
        let mut out = Vec::new();
        while out.len() < n {
            let logits = self.logits(&ids)?;
            let last = logits.get((ids.len() - 1) * vocab..).unwrap_or_default();
            let token = argmax(last);
            out.push(token);
            ids.push(token);
            if !on_token(token) {
                break;
            }
        }
        Ok(out)
    }
}
