//! rlx-test-support: what rlx's test suites share, and nothing else. Dev-only (`publish =
//! false`); crates take it as a dev-dependency (rlx-parity, itself a test harness, as a
//! dependency).
//!
//! Contract:
//! - [`data`]: one deterministic generator. [`Rng`] (splitmix64) gives the same stream for the
//!   same seed on every platform; [`uniform`] is the one-call form for a vector of floats and
//!   [`random_tensor`] fills any [`rlx_ir::TensorType`]. Every float it makes is exact in f32
//!   (24 random bits), so data never depends on rounding.
//! - [`devices`]: the devices a test runs on. The CPU always; a GPU device (`Vulkan`, `Gpu`)
//!   that cannot be opened is a test failure under `RLX_REQUIRE_GPU=1` and a loud skip on
//!   stderr otherwise, never a silent one. Behind the default `devices` feature (it needs
//!   rlx-runtime); crates below rlx-runtime take the crate with `default-features = false`.
//!
//! - [`builders`]: the helpers of builder tests (rlx-ir's builders, rlx-nn's composites): F32
//!   inputs, inferred types, error-message parts.
//! - [`graphs`]: the small graphs many suites build (a few leaves, one output).
//! - [`hub_server`]: a local Hugging Face hub (its URL layout on 127.0.0.1) with faults to
//!   order, for the model-download tests.
//! - [`require`]: the skip/require policy alone, for the driver crates' own tests (no runtime).
//!
//! Failing a test is this crate's job, so its device helpers panic (with the reason) where a
//! test body would.

// Test support: a panic is how a test fails.
#![allow(clippy::panic)]

pub mod builders;
pub mod data;
#[cfg(feature = "devices")]
pub mod devices;
pub mod graphs;
pub mod hub_server;
pub mod require;

pub use data::{quant_blocks, random_tensor, seed_of, uniform, Rng};
#[cfg(feature = "devices")]
pub use devices::{open, sessions, unavailable, GPU_DEVICES};
pub use graphs::exp_graph;
pub use require::{gpu_required, no_gpu, rel_err, rel_err_f32, skip};
