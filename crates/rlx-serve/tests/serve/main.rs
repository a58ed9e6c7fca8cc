//! `rlx serve`'s library over HTTP with a real client (reqwest), on the CPU with tiny fixture
//! models: the answers against the models run directly, every row of the error table, and the
//! lifecycle (health, metrics, disconnects, graceful shutdown), and the live device objects on
//! `/metrics` (on Vulkan too). Every server binds 127.0.0.1:0 and every wait is bounded.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod answers;
mod batched;
mod device_objects;
mod errors;
mod fixtures;
mod lifecycle;
