//! Every standard llama.cpp quantization mix loads and agrees with llama.cpp: the files of
//! tests/fixtures/gguf_mixes/ (written by scripts/make_gguf_mix_fixtures.py: two tiny random
//! llama models, hidden 256 and hidden 96 with a Llama 3 `rope_freqs.weight`, each quantized
//! by `llama-quantize` to Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K_M, Q4_K_M, Q5_K_M, Q6_K,
//! IQ4_NL, IQ4_XS, and with a uniform importance matrix IQ3_XXS, IQ3_M, IQ2_XXS, IQ2_XS, IQ2_S,
//! IQ1_S and IQ1_M) load on every available device with every quantized tensor kept packed,
//! and their greedy tokens equal those `llama-simple` gave on each file's f32 twin (the same
//! weights dequantized by the gguf package), recorded in tokens.json with the smallest
//! top-1 / top-2 logit margin of each prompt (at least 0.05).
//!
//! One decoder per file per device. A GPU device that cannot be opened skips loudly, unless
//! RLX_REQUIRE_GPU=1 makes it fail.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
use rlx_models::{Decoder, Device, ModelError, Precision};
use serde_json::Value;
use std::path::PathBuf;
use support::device_tests;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gguf_mixes")
}

fn ids(v: &Value) -> Vec<i32> {
    v.as_array().unwrap().iter().map(|t| t.as_i64().unwrap() as i32).collect()
}

fn manifest() -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir().join("tokens.json")).unwrap()).unwrap()
}

fn check(device: Device) {
    let doc = manifest();
    let files = doc["files"].as_array().unwrap();
    assert_eq!(files.len(), 38, "two models × nineteen mixes");
    for f in files {
        let name = f["file"].as_str().unwrap();
        let dec = match Decoder::load(&dir().join(name), device, Precision::F32) {
            Ok(d) => d,
            Err(ModelError::Runtime(e @ rlx_runtime::Error::DeviceUnavailable { .. })) => {
                rlx_test_support::unavailable(device, "GGUF quantization mixes", &e);
                return;
            }
            Err(e) => panic!("loading {name} on {device}: {e}"),
        };
        let mut dec = dec;
        // Every tensor the file holds quantized (all but F32 norms and rope factors) stays packed.
        let packed = f["types"].as_object().unwrap().values().filter(|t| t.as_str() != Some("F32")).count();
        assert_eq!(dec.quantized().len(), packed, "{device} {name}: quantized params {:?}", dec.quantized());
        for p in f["prompts"].as_array().unwrap() {
            let (prompt, want) = (ids(&p["prompt"]), ids(&p["tokens"]));
            let got = dec.generate_greedy(&prompt, want.len()).unwrap();
            assert_eq!(
                got, want,
                "{device} {name}: greedy tokens after {prompt:?} differ from llama-simple's"
            );
        }
        eprintln!("{device} {name}: {} prompts match llama-simple", f["prompts"].as_array().unwrap().len());
    }
}

device_tests!(check => standard_mixes_match_llama_simple_on_cpu, standard_mixes_match_llama_simple_on_vulkan, standard_mixes_match_llama_simple_on_wgpu);

/// The fixtures cover what they claim: both hidden sizes, every mix, the fallback row types
/// llama-quantize uses off 256, a Llama 3 rope, and margins that are not razor thin.
#[test]
fn fixtures_cover_the_mixes() {
    let doc = manifest();
    let files = doc["files"].as_array().unwrap();
    let mixes = [
        "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K_M", "Q4_K_M", "Q5_K_M", "Q6_K", "IQ4_NL",
        "IQ4_XS", "IQ3_XXS", "IQ3_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ1_S", "IQ1_M",
    ];
    for model in ["h256", "h96"] {
        for mix in mixes {
            assert!(
                files.iter().any(|f| f["model"] == model && f["mix"] == mix),
                "no {model} file for {mix}"
            );
        }
    }
    let mut types: Vec<&str> = files
        .iter()
        .flat_map(|f| f["types"].as_object().unwrap().values().map(|t| t.as_str().unwrap()))
        .collect();
    types.sort_unstable();
    types.dedup();
    let all = [
        "F32", "IQ1_M", "IQ1_S", "IQ2_S", "IQ2_XS", "IQ2_XXS", "IQ3_S", "IQ3_XXS", "IQ4_NL", "IQ4_XS",
        "Q2_K", "Q3_K", "Q4_0", "Q4_1", "Q4_K", "Q5_0", "Q5_1", "Q5_K", "Q6_K", "Q8_0",
    ];
    assert_eq!(types, all);
    let rope = files.iter().filter(|f| f["types"].get("rope_freqs.weight").is_some()).count();
    assert_eq!(rope, mixes.len(), "the hidden-96 files carry rope_freqs.weight");
    let margin = files
        .iter()
        .flat_map(|f| f["prompts"].as_array().unwrap().iter().map(|p| p["min_margin"].as_f64().unwrap()))
        .fold(f64::INFINITY, f64::min);
    assert!(margin >= 0.05, "a prompt's top-1 / top-2 margin is {margin}");
}
