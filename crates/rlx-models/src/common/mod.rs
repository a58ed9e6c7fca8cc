//! What every model family shares: reading checkpoints (safetensors files, sharded Hugging Face
//! checkpoints, GGUF files), config.json keys, tokenizers, stop tokens, downloading models into
//! the cache directory, the compiled-graph cache, the weight loader and the token-id check.
//! `bert/`, `decoder/` and `mamba/` build on these and never on each other.

pub(crate) mod bytes;
pub mod checkpoint;
pub mod compile_cache;
pub(crate) mod config_keys;
#[cfg(not(target_arch = "wasm32"))]
pub mod fetch;
pub mod gguf;
pub mod safetensors;
pub mod stop;
pub mod tokenizer;
pub mod tokens;
pub mod weights;
