//! BERT-family sentence embedders (all-MiniLM-L6-v2): the config files ([`config`]), the
//! encoder graph with pooling ([`graph`]), the tokenizer set up as sentence-transformers uses
//! it ([`tokenizer`]), the [`Embedder`] that runs them ([`embedder`]), and its fine-tune on
//! sentence pairs ([`train`]).

pub mod config;
pub mod embedder;
pub mod graph;
pub mod tokenizer;
#[cfg(not(target_arch = "wasm32"))]
pub mod train;

pub use config::{Activation, BertConfig, ModelConfig, Pooling};
pub use embedder::{cosine, missing_files, Embedder, EmbedderOptions, REQUIRED_FILES};
pub use graph::{build_graph, encoder_graph, encoder_layers, pooled_embeddings, weight_shapes, WeightSource};
pub use tokenizer::{SentenceTokenizer, TokenBatch};
#[cfg(not(target_arch = "wasm32"))]
pub use train::{EmbedderFineTune, FineTuneOptions, Pairs};
