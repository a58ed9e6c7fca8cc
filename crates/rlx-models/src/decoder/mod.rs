//! Decoder LLMs from Hugging Face checkpoints: Llama (with `linear` or `llama3` rope scaling),
//! Qwen2 (q/k/v bias), Qwen3 (per-head q/k RMSNorm, any head_dim) and Mistral (sliding-window
//! attention).
//!
//! - [`DecoderConfig`] parses config.json and refuses what the graph does not implement,
//!   naming the key and value ([`config`]).

pub mod config;

pub use config::{Architecture, DecoderConfig, RopeScaling};
