//! Subcommands of the `rlx` binary.

pub mod demo;
pub mod devices;
