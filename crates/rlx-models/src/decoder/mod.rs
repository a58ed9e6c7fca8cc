//! Decoder LLMs from Hugging Face checkpoints: Llama (with `linear` or `llama3` rope scaling),
//! Qwen2 (q/k/v bias), Qwen3 (per-head q/k RMSNorm, any head_dim) and Mistral (sliding-window
//! attention).
//!
//! - [`DecoderConfig`] parses config.json and refuses what the graph does not implement,
//!   naming the key and value ([`config`]).
//! - [`rope_tables`] computes the rotary cos/sin inputs on the host ([`rope`]).
//! - [`decoder_graph`] builds the full causal forward (logits for every position) from one
//!   layer builder, written so a later decode-step graph with a device-resident KV cache can
//!   reuse it ([`graph`]).

pub mod config;
pub mod graph;
pub mod rope;

pub use config::{Architecture, DecoderConfig, RopeScaling};
pub use graph::{decoder_graph, decoder_graph_with, LogitRows};
pub use rope::{inverse_frequencies, rope_tables, RopeTables};
