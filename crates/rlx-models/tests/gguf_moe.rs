//! llama.cpp `qwen3moe` GGUF files (tests/fixtures/gguf_moe/, written by
//! scripts/make_gguf_moe_fixtures.py) on every available device:
//!
//! - qwen3moe.f32.gguf, the Hugging Face qwen3_moe fixture under llama.cpp's names (3-D expert
//!   stacks, a dense layer among sparse ones): its logits match transformers' (the HF
//!   fixture's reference.json) within 1e-4 relative, with the same greedy tokens;
//! - sparse.q8_0.gguf and sparse.q4_k_m.gguf, a random model with experts in every layer
//!   quantized by `llama-quantize`: every quantized tensor stays packed (the expert stacks
//!   included) and the greedy tokens equal those `llama-simple` gave on each file's f32 twin
//!   (sparse.tokens.json, with each prompt's smallest top-1 / top-2 logit margin).
//!
//! A GPU device that cannot be opened skips loudly, unless RLX_REQUIRE_GPU=1 makes it fail.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
use rlx_models::{Architecture, Decoder, Device, ModelError, Precision};
use serde_json::Value;
use std::path::{Path, PathBuf};
use support::device_tests;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gguf_moe")
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn ids(v: &Value) -> Vec<i32> {
    v.as_array().unwrap().iter().map(|t| t.as_i64().unwrap() as i32).collect()
}

fn open(path: &Path, device: Device) -> Option<Decoder> {
    match Decoder::load(path, device, Precision::F32) {
        Ok(d) => Some(d),
        Err(ModelError::Runtime(e @ rlx_runtime::Error::DeviceUnavailable { .. })) => {
            rlx_test_support::unavailable(device, "qwen3moe GGUF decoder", &e);
            None
        }
        Err(e) => panic!("loading {} on {device}: {e}", path.display()),
    }
}

fn check(device: Device) {
    let Some(mut dec) = open(&dir().join("qwen3moe.f32.gguf"), device) else { return };
    let cfg = dec.config();
    let moe = cfg.moe.as_ref().unwrap();
    assert_eq!(cfg.architecture, Architecture::Qwen3Moe);
    assert_eq!((moe.num_experts, moe.top_k, moe.intermediate_size), (8, 2, 32));
    assert_eq!(moe.sparse, [true, false, true], "layer 1 has no router: dense");
    assert!(moe.norm_topk_prob);
    let reference = json(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/decoders/qwen3_moe/reference.json"),
    );
    let prompt = ids(&reference["prompt"]);
    let want: Vec<f64> =
        reference["logits"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    let got: Vec<f64> = dec.logits(&prompt).unwrap().iter().map(|&v| f64::from(v)).collect();
    let err = rlx_test_support::rel_err(&got, &want);
    assert!(err <= 1e-4, "{device}: qwen3moe.f32.gguf logits relative error {err:e} > 1e-4");
    let greedy = ids(&reference["greedy"]);
    assert_eq!(dec.generate_greedy(&prompt, greedy.len()).unwrap(), greedy, "{device}: greedy tokens");

    let doc = json(&dir().join("sparse.tokens.json"));
    for f in doc["files"].as_array().unwrap() {
        let name = f["file"].as_str().unwrap();
        let Some(mut dec) = open(&dir().join(name), device) else { return };
        let packed = f["types"].as_object().unwrap().values().filter(|t| t.as_str() != Some("F32")).count();
        // The gate and up stacks of a layer become one param.
        let layers = dec.config().num_hidden_layers;
        assert_eq!(dec.quantized().len(), packed - layers, "{device} {name}: {:?}", dec.quantized());
        assert!(dec.quantized().contains_key("model.layers.0.mlp.experts.gate_up_proj"), "{name}");
        for p in f["prompts"].as_array().unwrap() {
            let (prompt, want) = (ids(&p["prompt"]), ids(&p["tokens"]));
            let got = dec.generate_greedy(&prompt, want.len()).unwrap();
            assert_eq!(
                got, want,
                "{device} {name}: greedy tokens after {prompt:?} differ from llama-simple's"
            );
        }
    }
    eprintln!("{device}: qwen3moe GGUF files match (logits rel err {err:.2e})");
}

device_tests!(check => qwen3moe_gguf_matches_on_cpu, qwen3moe_gguf_matches_on_vulkan, qwen3moe_gguf_matches_on_wgpu);
