//! A generation reserves what it uses, not what it may ask for: on a GGUF file whose
//! `context_length` is 2³¹, the KV cache starts small and grows (its cache rebuilt) with the
//! same tokens as recomputing every step; a cache the machine cannot hold is an error naming
//! how many positions fit.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rlx_models::{Decoder, Precision};
use rlx_runtime::Device;
use std::path::{Path, PathBuf};

/// The llama GGUF fixture with `llama.context_length` (a u32) set to 2³¹, written to a file of
/// this test's own.
fn huge_context(test: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gguf_decoders/llama.f32.gguf");
    let mut bytes = std::fs::read(src).unwrap();
    let key = b"llama.context_length";
    let at = bytes.windows(key.len()).position(|w| w == key).unwrap() + key.len();
    // The key is followed by its value type (4 = u32) and the value.
    assert_eq!(bytes[at..at + 4], 4u32.to_le_bytes());
    bytes[at + 4..at + 8].copy_from_slice(&(1u32 << 31).to_le_bytes());
    let path = std::env::temp_dir().join(format!("rlx-room-{test}-{}.gguf", std::process::id()));
    std::fs::write(&path, bytes).unwrap();
    path
}

/// 600 greedy tokens: the first generator holds the prompt and 256 new tokens (a capacity of
/// 512, the next power of two), so the cache grows once, to 1024, rebuilt from the tokens so
/// far. The same generation again starts on that 1024-position generator and never grows: the
/// tokens are the same.
#[test]
fn a_long_generation_grows_its_cache_and_matches_recomputing() {
    let path = huge_context("grow");
    let mut dec = Decoder::load(&path, Device::Cpu, Precision::F32).unwrap();
    let prompt = [1, 2, 3];
    let cached = dec.generate_greedy(&prompt, 600).unwrap();
    assert_eq!(dec.generator_capacity(), Some(1024), "512 positions first, then twice that");
    let again = dec.generate_greedy(&prompt, 600).unwrap();
    assert_eq!(cached, again);
    // The start agrees with recomputing the whole sequence each step.
    let slow = dec.generate_greedy_recompute(&prompt, 8).unwrap();
    assert_eq!(cached[..8], slow);
    std::fs::remove_file(path).unwrap();
}

/// A cache of 2³⁰ positions (512 GiB for this model's keys and values) is refused on the CPU
/// before anything is allocated, with how many positions fit; a small one is fine.
#[test]
fn a_cache_the_machine_cannot_hold_is_an_error() {
    let path = huge_context("refuse");
    let dec = Decoder::load(&path, Device::Cpu, Precision::F32).unwrap();
    dec.check_cache_room(4096).unwrap();
    let e = dec.check_cache_room(1 << 30).unwrap_err().to_string();
    assert!(e.contains("a KV cache of 1073741824 positions needs"), "{e}");
    assert!(e.contains("positions fit") && e.contains("--max-tokens"), "{e}");
    std::fs::remove_file(path).unwrap();
}
