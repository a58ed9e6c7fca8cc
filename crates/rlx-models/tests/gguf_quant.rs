//! A GGUF decoder whose linear weights and embedding are block-quantized (every format rlx
//! keeps packed: Q8_0, Q4_0, Q4_K, Q5_K, Q6_K; tests/fixtures/gguf_decoders/llama.quant.gguf,
//! made by scripts/make_gguf_quant_fixture.py) on every available device: the blocks stay
//! quantized (U8 params run by QuantMatMul / QuantGather, the tied lm_head included) and the
//! prompt's logits match a float64 numpy forward of gguf-py's dequantization within 1e-4
//! relative, with the same greedy tokens.
//!
//! A GPU device that cannot be opened skips loudly, unless RLX_REQUIRE_GPU=1 makes it fail.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
use rlx_models::decoder::{decoder_graph_with, LogitRows, ParamData};
use rlx_models::{Decoder, Device, ModelError, Precision};
use std::path::PathBuf;
use support::device_tests;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gguf_decoders").join(name)
}

struct Reference {
    prompt: Vec<i32>,
    logits: Vec<f64>,
    greedy: Vec<i32>,
}

fn reference() -> Reference {
    let text = std::fs::read_to_string(fixture("llama.quant.reference.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let ints = |key: &str| -> Vec<i32> {
        doc[key].as_array().unwrap().iter().map(|v| v.as_i64().unwrap() as i32).collect()
    };
    let logits = doc["logits"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    Reference { prompt: ints("prompt"), logits, greedy: ints("greedy") }
}

fn check(device: Device) {
    let dec = match Decoder::load(&fixture("llama.quant.gguf"), device, Precision::F32) {
        Ok(d) => d,
        Err(ModelError::Runtime(e @ rlx_runtime::Error::DeviceUnavailable { .. })) => {
            rlx_test_support::unavailable(device, "quantized GGUF decoder", &e);
            return;
        }
        Err(e) => panic!("loading llama.quant.gguf on {device}: {e}"),
    };
    let mut dec = dec;
    let r = reference();
    let logits = dec.logits(&r.prompt).unwrap();
    let got: Vec<f64> = logits.iter().map(|&v| f64::from(v)).collect();
    let err = rlx_test_support::rel_err(&got, &r.logits);
    assert!(err <= 1e-4, "{device}: logits relative error {err:e} > 1e-4");
    let greedy = dec.generate_greedy(&r.prompt, r.greedy.len()).unwrap();
    assert_eq!(greedy, r.greedy, "{device}: greedy tokens differ from the reference's");
    eprintln!("{device} llama.quant: logits rel err {err:.2e}, greedy {greedy:?} match");
}

device_tests!(check => quantized_gguf_decoder_matches_the_reference_on_cpu, quantized_gguf_decoder_matches_the_reference_on_vulkan, quantized_gguf_decoder_matches_the_reference_on_wgpu);

#[test]
fn quantized_weights_stay_packed_in_the_graph() {
    let file = rlx_models::GgufFile::open(fixture("llama.quant.gguf")).unwrap();
    let cfg = rlx_models::decoder::gguf::decoder_config(&file).unwrap();
    let weights = rlx_models::decoder::gguf::GgufWeights::new(file, &cfg);
    let names = [
        ("model.embed_tokens.weight", "Q6_K", 256 * 210),
        ("model.layers.0.self_attn.q_proj.weight", "Q4_K", 256 * 144),
        ("model.layers.0.self_attn.k_proj.weight", "Q5_K", 128 * 176),
        ("model.layers.0.self_attn.v_proj.weight", "Q8_0", 128 * 8 * 34),
        ("model.layers.0.self_attn.o_proj.weight", "Q4_0", 256 * 8 * 18),
        ("model.layers.0.mlp.down_proj.weight", "Q6_K", 256 * 2 * 210),
    ];
    let mut quant = rlx_models::decoder::QuantizedWeights::new();
    for (name, ty, bytes) in names {
        let rows = if name.contains("k_proj") || name.contains("v_proj") { 128 } else { 256 };
        let cols = if name.contains("down_proj") { 512 } else { 256 };
        match weights.load(name, &[rows, cols], Precision::F32).unwrap() {
            ParamData::Quant { quant: q, bytes: b } => {
                assert_eq!((q.name(), b.len()), (ty, bytes), "{name}");
                quant.insert(name.to_string(), q);
            }
            other => panic!("{name} was widened: {:?}", std::mem::discriminant(&other)),
        }
    }
    let norm = weights.load("model.norm.weight", &[256], Precision::F32).unwrap();
    assert!(matches!(norm, ParamData::Dense(_)));
    let g = decoder_graph_with(&cfg, 1, 3, Precision::F32, LogitRows::All, &quant).unwrap();
    let kinds: Vec<_> = g.nodes().iter().map(|n| n.op.name()).collect();
    // q, k, v, o, down and the tied head run QuantMatMul; the embedding QuantGather.
    assert_eq!(kinds.iter().filter(|k| **k == "quant_matmul").count(), 6, "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == "quant_gather").count(), 1, "{kinds:?}");
    let table = g.params().into_iter().find(|(n, _, _)| *n == "model.embed_tokens.weight").unwrap();
    assert_eq!((table.2.dtype, table.2.shape.dims()), (rlx_ir::DType::U8, &[256usize, 210][..]));
}
