//! Subcommands of the `rlx` binary.

pub mod bench;
pub mod bench_args;
pub mod bench_decoder;
pub mod bench_embed;
pub mod bench_generate;
pub mod bench_ops;
pub mod bench_quant;
pub mod bench_soak;
pub mod bench_streams;
pub mod demo;
pub mod devices;
pub mod embed;
pub mod fetch;
pub mod finite;
pub mod generate;
pub mod logits;
pub mod models;
pub mod progress;
pub mod sampling;
pub mod serve;
pub mod similarity;
pub mod stdout;
pub mod table;
pub mod train;
pub mod train_decoder;
