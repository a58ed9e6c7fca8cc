//! Tiny random-init decoders (tests/fixtures/decoders/<arch>/, made by
//! scripts/make_decoder_fixtures.py with transformers) on every available device: the logits of
//! the prompt within 1e-4 relative of transformers', and the same 8 greedy tokens.
//!
//! A GPU device that cannot be opened skips loudly, unless RLX_REQUIRE_GPU=1 makes it fail.
//! The weight-file and input errors are checked on the CPU (tests/decoder_files.rs).

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
use rlx_test_support::rel_err_f32;
use support::device_tests;

use rlx_models::decoder::LogitRows;
use rlx_models::{Decoder, Device, ModelError, Precision};
use std::path::PathBuf;

const FIXTURES: [&str; 5] = ["llama", "qwen2", "qwen3", "mistral", "qwen3_moe"];

struct Reference {
    prompt: Vec<i32>,
    vocab: usize,
    /// [prompt.len(), vocab], row-major.
    logits: Vec<f64>,
    greedy: Vec<i32>,
}

fn dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/decoders").join(name)
}

fn reference(name: &str) -> Reference {
    let text = std::fs::read_to_string(dir(name).join("reference.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let ints = |key: &str| -> Vec<i32> {
        doc[key].as_array().unwrap().iter().map(|v| v.as_i64().unwrap() as i32).collect()
    };
    let shape = ints("logits_shape");
    let logits: Vec<f64> = doc["logits"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    let prompt = ints("prompt");
    assert_eq!((shape[0] as usize, logits.len()), (prompt.len(), prompt.len() * shape[1] as usize));
    Reference { prompt, vocab: shape[1] as usize, logits, greedy: ints("greedy") }
}

/// The decoder `name` on `device`, or `None` after a loud skip (a failure under
/// RLX_REQUIRE_GPU=1) when a GPU device cannot be opened.
fn open(name: &str, device: Device) -> Option<Decoder> {
    match Decoder::load(&dir(name), device, Precision::F32) {
        Ok(d) => Some(d),
        Err(ModelError::Runtime(e @ rlx_runtime::Error::DeviceUnavailable { .. })) => {
            rlx_test_support::unavailable(device, &format!("decoder fixture {name}"), &e);
            None
        }
        Err(e) => panic!("loading {name} on {device}: {e}"),
    }
}

fn check(device: Device) {
    for name in FIXTURES {
        let r = reference(name);
        let Some(mut dec) = open(name, device) else { return };
        assert_eq!(dec.config().vocab_size, r.vocab);
        let logits = dec.logits(&r.prompt).unwrap();
        let err = rel_err_f32(&logits, &r.logits);
        assert!(err <= 1e-4, "{device} {name}: logits relative error {err:e} > 1e-4");

        let last = dec.last_logits(&r.prompt).unwrap();
        let tail = &r.logits[(r.prompt.len() - 1) * r.vocab..];
        let last_err = rel_err_f32(&last, tail);
        assert!(last_err <= 1e-4, "{device} {name}: last-row logits relative error {last_err:e}");

        let greedy = dec.generate_greedy(&r.prompt, r.greedy.len()).unwrap();
        assert_eq!(greedy, r.greedy, "{device} {name}: greedy tokens (KV cache) differ from transformers'");
        let recomputed = dec.generate_greedy_recompute(&r.prompt, r.greedy.len()).unwrap();
        assert_eq!(recomputed, r.greedy, "{device} {name}: greedy tokens (recompute) differ");
        // Streaming: the callback sees every token in order and can stop early.
        let mut seen = Vec::new();
        let stopped = dec
            .generate(&r.prompt, r.greedy.len(), |t| {
                seen.push(t);
                seen.len() < 3
            })
            .unwrap();
        assert_eq!(
            (stopped.as_slice(), seen.as_slice()),
            (&r.greedy[..3], &r.greedy[..3]),
            "{device} {name}"
        );
        eprintln!(
            "{device} {name}: logits rel err {err:.2e}, last row {last_err:.2e}, greedy {greedy:?} match"
        );
    }
}

device_tests!(check => decoders_match_transformers_on_cpu, decoders_match_transformers_on_vulkan, decoders_match_transformers_on_wgpu);

/// Causal padding is exact: a prefix of the prompt (run in the same bucket, padded further)
/// gives the reference's rows for that prefix, and one bucket boundary is crossed.
#[test]
fn prefixes_give_the_reference_rows() {
    let r = reference("mistral");
    let mut dec = Decoder::load(&dir("mistral"), Device::Cpu, Precision::F32).unwrap();
    for len in [1, 5, r.prompt.len()] {
        let got = dec.logits(&r.prompt[..len]).unwrap();
        assert_eq!(got.len(), len * r.vocab);
        let err = rel_err_f32(&got, &r.logits[..len * r.vocab]);
        assert!(err <= 1e-5, "prefix {len}: relative error {err:e}");
    }
    assert_eq!(dec.bucket(5), 16);
    assert_eq!(dec.bucket(17), 32);
    // 64 = max_position_embeddings caps the bucket.
    assert_eq!(dec.bucket(40), 64);
    assert_eq!(dec.compiled(), [(16, LogitRows::All)]);
}

/// A prompt that goes through the cache in several chunks (3 rows each, the last one padded)
/// gives transformers' tokens, and a long cached generation (past the sliding window of the
/// mistral fixture, across 20 decode steps) gives the tokens of the recomputing path.
#[test]
fn chunked_prefill_and_long_generations_match() {
    use rlx_models::decoder::DecoderOptions;
    for device in [Device::Cpu, Device::Vulkan, Device::Gpu] {
        for name in ["mistral", "qwen3", "qwen3_moe"] {
            let r = reference(name);
            let opts = DecoderOptions { prefill_chunk: 3, ..Default::default() };
            let mut dec = match Decoder::with_options(&dir(name), device, opts) {
                Ok(d) => d,
                Err(ModelError::Runtime(e @ rlx_runtime::Error::DeviceUnavailable { .. })) => {
                    rlx_test_support::unavailable(device, "chunked prefill", &e);
                    continue;
                }
                Err(e) => panic!("{device} {name}: {e}"),
            };
            let greedy = dec.generate_greedy(&r.prompt, r.greedy.len()).unwrap();
            assert_eq!(greedy, r.greedy, "{device} {name}: chunked prefill");
            let long = dec.generate_greedy(&r.prompt, 20).unwrap();
            let slow = dec.generate_greedy_recompute(&r.prompt, 20).unwrap();
            assert_eq!(long, slow, "{device} {name}: 20 cached steps against recomputing");
            assert_eq!(dec.generator_capacity(), Some(64), "{device} {name}");
        }
    }
}

/// Tokens drawn on the device (temperature, top-k, top-p, repetition penalty) are the same on
/// every device for one seed; top-k 1 is greedy; an invalid spec is an error naming the field.
#[test]
fn sampled_tokens_agree_across_devices() {
    use rlx_nn::SamplingSpec;
    let r = reference("qwen2");
    let spec = SamplingSpec { temperature: 0.8, top_k: Some(20), top_p: 0.9, repetition_penalty: 1.3 };
    let mut runs = Vec::new();
    for device in [Device::Cpu, Device::Vulkan, Device::Gpu] {
        let Some(mut dec) = open("qwen2", device) else { continue };
        let a = dec.sample(&r.prompt, 12, &spec, 42, |_| true).unwrap();
        let b = dec.sample(&r.prompt, 12, &spec, 43, |_| true).unwrap();
        assert_ne!(a, b, "{device}: two seeds gave the same 12 tokens");
        let one = SamplingSpec { temperature: 1.0, top_k: Some(1), ..SamplingSpec::greedy() };
        let greedy = dec.sample(&r.prompt, r.greedy.len(), &one, 7, |_| true).unwrap();
        assert_eq!(greedy, r.greedy, "{device}: top-k 1 is greedy");
        let bad = SamplingSpec { top_p: 0.0, ..spec };
        let err = dec.sample(&r.prompt, 2, &bad, 1, |_| true).unwrap_err().to_string();
        assert!(err.contains("top_p"), "{device}: {err}");
        runs.push((device, a));
    }
    for (device, tokens) in &runs[1..] {
        assert_eq!(tokens, &runs[0].1, "{device} drew other tokens than {}", runs[0].0);
    }
}

/// A random decoder whose matrices are random Q8_0 blocks (the benchmark's quantized model)
/// generates the same tokens on every device, and other tokens than its dense twin.
#[test]
fn random_quantized_decoders_agree_across_devices() {
    use rlx_models::decoder::{DecoderConfig, DecoderOptions};
    let cfg = DecoderConfig::from_file(&dir("llama").join("config.json")).unwrap();
    let prompt = [5, 9, 2, 77];
    let mut runs = Vec::new();
    for device in [Device::Cpu, Device::Vulkan, Device::Gpu] {
        let session = match rlx_runtime::Session::new(device) {
            Ok(s) => s,
            Err(e) => {
                rlx_test_support::unavailable(device, "random quantized decoder", &e);
                continue;
            }
        };
        let q = rlx_ir::QuantType::Q8_0;
        let mut dec =
            Decoder::random_quantized(session, cfg.clone(), DecoderOptions::default(), 3, q).unwrap();
        runs.push((device, dec.generate_greedy(&prompt, 6).unwrap()));
    }
    let session = rlx_runtime::Session::new(Device::Cpu).unwrap();
    let mut dense = Decoder::random(session, cfg, DecoderOptions::default(), 3).unwrap();
    assert_ne!(dense.generate_greedy(&prompt, 6).unwrap(), runs[0].1, "the blocks replaced the matrices");
    for (device, tokens) in &runs[1..] {
        assert_eq!(tokens, &runs[0].1, "{device} against {}", runs[0].0);
    }
}
