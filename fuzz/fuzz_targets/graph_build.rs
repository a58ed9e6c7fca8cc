#![no_main]
//! cargo-fuzz target: `rlx_fuzz::graph_build` (see crates/rlx-fuzz/src/lib.rs).

libfuzzer_sys::fuzz_target!(|data: &[u8]| rlx_fuzz::graph_build(data));
