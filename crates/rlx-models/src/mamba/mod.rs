//! Mamba-1 language models (transformers' `MambaForCausalLM`) from Hugging Face checkpoints:
//! config.json ([`MambaConfig`]), model.safetensors (or a sharded index), tied or untied
//! lm_head. [`mamba_graph`] builds the full-sequence forward on rlx's native selective scan;
//! [`Mamba`] loads the weights onto a device and gives the logits of every position of one
//! token sequence (prefill; no recurrent decode state yet).

mod config;
mod graph;
mod model;

pub use config::{is_mamba_config, MambaConfig};
pub use graph::{mamba_graph, EMBEDDINGS, INPUT_IDS, LM_HEAD};
pub use model::Mamba;
