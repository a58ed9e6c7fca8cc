//! Decoder LLMs from Hugging Face checkpoints: Llama (with `linear` or `llama3` rope scaling),
//! Qwen2 (q/k/v bias), Qwen3 (per-head q/k RMSNorm, any head_dim), Mistral (sliding-window
//! attention) and Qwen3-MoE (Qwen3 attention, mixture-of-experts MLPs run by `GroupedMatMul`
//! with the top-k router on the device).
//!
//! - [`DecoderConfig`] parses config.json and refuses what the graph does not implement,
//!   naming the key and value ([`config`]).
//! - [`rope_tables`] computes the rotary cos/sin inputs on the host ([`rope`]).
//! - [`decoder_graph`] builds the full causal forward (logits for every position) from one
//!   layer builder, written so a later decode-step graph with a device-resident KV cache can
//!   reuse it ([`graph`]).
//! - [`Decoder`] loads the weights (model.safetensors or sharded, F32/F16/BF16, each checked
//!   against the config; a tied `lm_head` is the embedding table), and gives logits and greedy
//!   continuations of one sequence ([`model`]). It loads a GGUF file (llama, qwen2, qwen3, qwen3moe
//!   with F32/F16/BF16 tensors, and block-quantized linear weights, embeddings and expert
//!   stacks, which stay quantized on the device: [`params`]) as well as a Hugging Face
//!   directory ([`gguf`]).
//! - [`BatchDecoder`] decodes many sequences together over one compiled batched step, each with
//!   its own cache slot, position and length; sequences join and leave between steps
//!   ([`batch`], graphs in [`batched`]).
//! - [`DecoderFineTune`] trains a dense decoder on a text file with the next-token loss, from
//!   its checkpoint or from a seeded init ([`train`]).
//! - [`ChatTemplate`](chat::ChatTemplate) renders the checkpoint's chat template ([`chat`]).
//!
//! Checkpoint reading (safetensors, shards, GGUF) and the stop tokens live in
//! [`crate::common`], shared with the other model families.

pub mod batch;
mod batch_mixed;
mod batch_sample;
pub mod batched;
pub mod cached;
pub mod chat;
mod checkpoint_moe;
pub mod config;
pub mod generate;
pub mod gguf;
mod gguf_moe;
pub mod graph;
pub(crate) mod lora;
pub mod model;
pub mod params;
pub mod rope;
pub mod train;
pub(crate) mod train_data;

pub use crate::common::tokens::argmax;
pub use batch::{BatchDecoder, SeqId, SeqParams, SeqToken};
pub use batched::{
    batched_decode_graph, batched_decode_outputs, batched_mixed_graph, BatchInputs, BatchOutput,
};
pub use cached::KvCache;
pub use config::{Architecture, DecoderConfig, MoeConfig, RopeScaling};
pub use graph::{decoder_graph, decoder_graph_with, decoder_logits_given, decoder_weight_shapes, LogitRows};
pub use lora::{LoraOptions, ADAPTER_CONFIG, ADAPTER_FILE};
pub use model::{Decoder, DecoderOptions};
pub use params::{ParamData, QuantizedWeights};
pub use rope::{inverse_frequencies, rope_tables, RopeTables};
pub use train::{DecoderFineTune, DecoderTrainOptions, TokenWindows};
