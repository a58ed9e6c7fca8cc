#![no_main]
//! cargo-fuzz target: `rlx_fuzz::model_dir` (see crates/rlx-fuzz/src/lib.rs).

libfuzzer_sys::fuzz_target!(|data: &[u8]| rlx_fuzz::model_dir(data));
