#![no_main]
//! cargo-fuzz target: `rlx_fuzz::schedule` (see crates/rlx-fuzz/src/lib.rs).

libfuzzer_sys::fuzz_target!(|data: &[u8]| rlx_fuzz::schedule(data));
