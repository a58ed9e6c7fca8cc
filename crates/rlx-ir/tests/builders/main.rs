//! Builder tests: each builder's inferred type on a success case, and the error variant plus
//! message contents on failure cases.
// Test crate: its helpers may unwrap, expect and panic, as the #[test] functions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod attention;
mod conv;
mod elementwise;
mod fft;
mod fused;
mod grouped;
mod matmul;
mod norm;
mod quant;
mod reduce;
mod rope;
mod shape;
mod sizes;
mod ssm;
mod state;

pub use rlx_test_support::builders::{assert_msg, f32_in, on_copy, tt, ty};
