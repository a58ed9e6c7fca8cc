//! Composite builder tests: each composite's inferred type on a success case, the primitive ops
//! it lowers to where that matters, and the error variant plus message contents on failures
//! (a failed composite leaves no nodes behind).
// Test crate: its helpers may unwrap, expect and panic, as the #[test] functions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod contract;
mod conv;
mod layers;
mod moe;
mod recurrent;
mod sample;
mod spectral;
mod ssm;

pub use rlx_test_support::builders::{assert_msg, f32_in, on_copy, tt, ty};
