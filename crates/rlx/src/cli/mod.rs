//! Subcommands of the `rlx` binary.

pub mod bench;
pub mod bert_graph;
pub mod demo;
pub mod devices;
