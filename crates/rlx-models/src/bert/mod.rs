//! BERT-family sentence embedders (all-MiniLM-L6-v2): the config files ([`config`]), the
//! encoder graph with pooling ([`graph`]), the tokenizer set up as sentence-transformers uses
//! it ([`tokenizer`]) and the [`Embedder`] that runs them ([`embedder`]).

pub mod config;
pub mod embedder;
pub mod graph;
pub mod tokenizer;

pub use config::{Activation, BertConfig, ModelConfig, Pooling};
pub use embedder::{cosine, missing_files, Embedder, EmbedderOptions, REQUIRED_FILES};
pub use graph::{build_graph, encoder_graph, encoder_layers};
pub use tokenizer::{SentenceTokenizer, TokenBatch};
