#![no_main]
//! cargo-fuzz target: `rlx_fuzz::optimize_plan` (see crates/rlx-fuzz/src/lib.rs).

libfuzzer_sys::fuzz_target!(|data: &[u8]| rlx_fuzz::optimize_plan(data));
