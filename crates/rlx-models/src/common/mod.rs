//! What every model family shares: reading checkpoints (safetensors files, sharded Hugging Face
//! checkpoints, GGUF files), config.json keys, tokenizers, stop tokens, downloading models into
//! the cache directory (known models, and hub repos by name: [`hub`], [`hub_cache`]), the compiled-graph cache, the weight loader, the token-id check and the training driver
//! ([`trainer`]).
//! `bert/`, `decoder/` and `mamba/` build on these and never on each other.

pub(crate) mod bytes;
pub mod checkpoint;
pub mod compile_cache;
pub(crate) mod config_keys;
#[cfg(not(target_arch = "wasm32"))]
pub mod fetch;
pub mod gguf;
#[cfg(not(target_arch = "wasm32"))]
pub mod hub;
#[cfg(not(target_arch = "wasm32"))]
pub mod hub_cache;
pub mod safetensors;
pub mod stop;
pub mod tokenizer;
pub mod tokens;
pub mod trainer;
pub mod weights;

/// `impl Debug` for a model holding a `session`: its type name, the session's device, then
/// the named fields (the weights and compiled graphs are left out).
macro_rules! debug_model {
    ($ty:ident $(, $field:ident)*) => {
        impl std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($ty))
                    .field("device", &self.session.device())
                    $(.field(stringify!($field), &self.$field))*
                    .finish()
            }
        }
    };
}
pub(crate) use debug_model;
