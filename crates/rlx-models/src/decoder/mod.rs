//! Decoder LLMs from Hugging Face checkpoints: Llama (with `linear` or `llama3` rope scaling),
//! Qwen2 (q/k/v bias), Qwen3 (per-head q/k RMSNorm, any head_dim) and Mistral (sliding-window
//! attention).
//!
//! - [`DecoderConfig`] parses config.json and refuses what the graph does not implement,
//!   naming the key and value ([`config`]).
//! - [`rope_tables`] computes the rotary cos/sin inputs on the host ([`rope`]).

pub mod config;
pub mod rope;

pub use config::{Architecture, DecoderConfig, RopeScaling};
pub use rope::{inverse_frequencies, rope_tables, RopeTables};
