//! rlx-fuzz: one entry point per fuzz target, `pub fn <target>(data: &[u8])`.
//!
//! Contract: no input makes an entry point panic, hang or allocate without bound; each maps the
//! bytes onto public rlx APIs and ignores the errors they return (refusing bad input is their
//! job; panicking is a bug). The cargo-fuzz targets in `fuzz/` call these, and
//! `tests/corpora.rs` runs every corpus and regression file through them on stable.
//!
//! - [`graph_build`]: builder calls decoded from the bytes, then `rlx_ir::verify` and the dump.
//! - [`optimize_plan`]: the graphs that verify through `rlx_opt::optimize` (CPU and GPU
//!   capabilities), the memory planner and `rlx_gpu::lower`.
//! - [`model_dir`]: config.json + tokenizer.json + model.safetensors loaded by the embedder and
//!   decoder loaders.
//! - [`gguf`]: the GGUF reader, its config, tokenizer and the GGUF decoder loader.
//! - [`schedule`]: `Schedule` validation on decoded and edited schedules.
//!
//! Sizes stay small (dims ≤ 64, ≤ 2^16 elements per decoded shape) so an execution is fast.

pub mod graph_gen;
pub mod models;
pub mod pipeline;
pub mod reader;
mod schedule;

/// A fuzz entry point.
pub type Entry = fn(&[u8]);

/// Every target: (name, entry point). The names are the `fuzz/fuzz_targets` file stems and the
/// `fuzz/corpus` folder names.
pub const TARGETS: [(&str, Entry); 5] = [
    ("graph_build", graph_build),
    ("optimize_plan", optimize_plan),
    ("model_dir", model_dir),
    ("gguf", gguf),
    ("schedule", schedule),
];

/// Builds a graph from `data` and verifies it.
pub fn graph_build(data: &[u8]) {
    if let Some(g) = graph_gen::build(data) {
        if rlx_ir::verify(&g).is_ok() {
            let _ = rlx_ir::dump(&g);
        }
    }
}

/// Builds a graph from `data`; if it verifies, optimizes, plans and lowers it.
pub fn optimize_plan(data: &[u8]) {
    pipeline::run(data)
}

/// Loads a model directory written from `data`.
pub fn model_dir(data: &[u8]) {
    let _ = models::model_dir(data);
}

/// Opens and loads a GGUF file written from `data`.
pub fn gguf(data: &[u8]) {
    let _ = models::gguf(data);
}

/// Validates a `Schedule` decoded from `data`.
pub fn schedule(data: &[u8]) {
    schedule::run(data)
}
