// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use crate::error::ModelError;
use serde_json::json;

fn parse_value(v: &Value) -> Result<DecoderConfig> {
    DecoderConfig::from_json(&v.to_string(), Path::new("config.json"))
}

/// A Llama-3.2-1B-shaped config.json as the Hub has it (transformers 4 keys).
fn llama32() -> Value {
    json!({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 128000,
        "eos_token_id": 128001, "head_dim": 64, "hidden_act": "silu", "hidden_size": 2048,
        "initializer_range": 0.02, "intermediate_size": 8192, "max_position_embeddings": 131072,
        "mlp_bias": false, "num_attention_heads": 32, "num_hidden_layers": 16,
        "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
        "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
        "transformers_version": "4.45.0.dev0", "use_cache": true, "vocab_size": 128256
    })
}

/// A Qwen2.5-0.5B-shaped config.json (sliding window configured but switched off).
fn qwen25() -> Value {
    json!({
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu",
        "hidden_size": 896, "intermediate_size": 4864, "max_position_embeddings": 32768,
        "max_window_layers": 21, "num_attention_heads": 14, "num_hidden_layers": 24,
        "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
        "sliding_window": 32768, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
        "use_sliding_window": false, "vocab_size": 151936, "rope_scaling": null
    })
}

fn with(mut v: Value, key: &str, value: Value) -> Value {
    v.as_object_mut().unwrap().insert(key.to_string(), value);
    v
}

fn without(mut v: Value, key: &str) -> Value {
    v.as_object_mut().unwrap().remove(key);
    v
}

/// The error for `v`, which must name every one of `needles`.
fn refused(v: &Value, needles: &[&str]) {
    let e = parse_value(v).unwrap_err();
    assert!(matches!(e, ModelError::Config { .. }), "{e:?}");
    let msg = e.to_string();
    for n in needles {
        assert!(msg.contains(n), "'{n}' not in: {msg}");
    }
}

#[test]
fn hub_style_llama_and_qwen_configs_parse() {
    let c = parse_value(&llama32()).unwrap();
    assert_eq!(c.architecture, Architecture::Llama);
    assert_eq!((c.vocab_size, c.hidden_size, c.intermediate_size), (128256, 2048, 8192));
    assert_eq!(
        (c.num_hidden_layers, c.num_attention_heads, c.num_key_value_heads, c.head_dim),
        (16, 32, 8, 64)
    );
    assert_eq!((c.q_dim(), c.kv_dim()), (2048, 512));
    assert_eq!(c.rope_theta, 500000.0);
    assert_eq!(
        c.rope_scaling,
        RopeScaling::Llama3 {
            factor: 32.0,
            low_freq_factor: 1.0,
            high_freq_factor: 4.0,
            original_max_position_embeddings: 8192
        }
    );
    assert!(c.tie_word_embeddings && !c.qkv_bias && !c.o_bias && !c.qk_norm);
    assert_eq!((c.sliding_window, c.torch_dtype.as_deref()), (None, Some("bfloat16")));
    assert_eq!(c.rms_norm_eps, 1e-5);

    let q = parse_value(&qwen25()).unwrap();
    assert_eq!(q.architecture, Architecture::Qwen2);
    assert_eq!((q.head_dim, q.qkv_bias, q.o_bias), (64, true, false));
    assert_eq!((q.rope_scaling, q.sliding_window), (RopeScaling::None, None));
}

#[test]
fn fixture_configs_written_by_transformers_5_parse() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/decoders");
    let read = |name: &str| DecoderConfig::from_file(&dir.join(name).join("config.json")).unwrap();
    let l = read("llama");
    assert_eq!(l.rope_theta, 10000.0);
    assert!(matches!(l.rope_scaling, RopeScaling::Llama3 { original_max_position_embeddings: 32, .. }));
    assert_eq!((l.max_position_embeddings, l.tie_word_embeddings), (64, false));
    assert_eq!(l.torch_dtype.as_deref(), Some("float32"));
    let q2 = read("qwen2");
    assert!(q2.qkv_bias && q2.tie_word_embeddings && q2.sliding_window.is_none());
    let q3 = read("qwen3");
    assert_eq!((q3.head_dim, q3.q_dim(), q3.qk_norm, q3.rope_theta), (32, 128, true, 1e6));
    let m = read("mistral");
    assert_eq!((m.architecture, m.sliding_window), (Architecture::Mistral, Some(4)));
}

#[test]
fn defaults_follow_transformers() {
    let v = json!({"model_type": "mistral", "vocab_size": 10, "hidden_size": 8,
                   "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2});
    let c = parse_value(&v).unwrap();
    assert_eq!(c.architecture, Architecture::Mistral);
    assert_eq!((c.num_key_value_heads, c.head_dim, c.rope_theta), (2, 4, 10000.0));
    assert_eq!((c.max_position_embeddings, c.sliding_window, c.tie_word_embeddings), (131072, None, false));
    assert_eq!(c.rms_norm_eps, 1e-6);
}

#[test]
fn linear_scaling_in_either_spelling() {
    let legacy = with(llama32(), "rope_scaling", json!({"type": "linear", "factor": 2.0}));
    assert_eq!(parse_value(&legacy).unwrap().rope_scaling, RopeScaling::Linear { factor: 2.0 });
    let v5 = with(
        without(without(llama32(), "rope_scaling"), "rope_theta"),
        "rope_parameters",
        json!({"rope_type": "linear", "factor": 4.0, "rope_theta": 1234.0}),
    );
    let c = parse_value(&v5).unwrap();
    assert_eq!((c.rope_scaling, c.rope_theta), (RopeScaling::Linear { factor: 4.0 }, 1234.0));
    let default = with(llama32(), "rope_scaling", json!({"rope_type": "default"}));
    assert_eq!(parse_value(&default).unwrap().rope_scaling, RopeScaling::None);
}

#[test]
fn qwen_sliding_window_on_every_layer_is_accepted() {
    let v = with(with(qwen25(), "use_sliding_window", json!(true)), "max_window_layers", json!(0));
    assert_eq!(parse_value(&v).unwrap().sliding_window, Some(32768));
    // Switched on, but no layer reaches max_window_layers: full attention everywhere.
    let v = with(with(qwen25(), "use_sliding_window", json!(true)), "max_window_layers", json!(24));
    assert_eq!(parse_value(&v).unwrap().sliding_window, None);
}

#[test]
fn unsupported_values_are_named() {
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (
            with(llama32(), "architectures", json!(["GPT2LMHeadModel"])),
            vec!["architectures", "GPT2LMHeadModel"],
        ),
        (
            with(llama32(), "architectures", json!(["LlamaForCausalLM", "MistralForCausalLM"])),
            vec!["architectures", "MistralForCausalLM"],
        ),
        (
            with(without(llama32(), "architectures"), "model_type", json!("gemma2")),
            vec!["model_type", "gemma2"],
        ),
        (without(without(llama32(), "architectures"), "model_type"), vec!["architectures", "model_type"]),
        (with(llama32(), "hidden_act", json!("gelu")), vec!["hidden_act", "\"gelu\"", "silu"]),
        (
            with(llama32(), "rope_scaling", json!({"rope_type": "yarn", "factor": 4.0})),
            vec!["rope_scaling.rope_type", "\"yarn\""],
        ),
        (
            with(llama32(), "rope_scaling", json!({"type": "dynamic", "factor": 4.0})),
            vec!["rope_scaling.type", "\"dynamic\""],
        ),
        (
            with(
                llama32(),
                "rope_scaling",
                json!({"rope_type": "llama3", "factor": 8.0, "high_freq_factor": 4.0}),
            ),
            vec!["rope_scaling.low_freq_factor", "missing"],
        ),
        (
            with(
                llama32(),
                "rope_parameters",
                json!({"full_attention": {"rope_type": "default"}, "sliding_attention": {"rope_type": "default"}}),
            ),
            vec!["rope_parameters.full_attention", "per layer type"],
        ),
        (with(llama32(), "partial_rotary_factor", json!(0.5)), vec!["partial_rotary_factor", "0.5"]),
        (with(qwen25(), "num_experts", json!(60)), vec!["num_experts", "60", "Qwen3MoeForCausalLM"]),
        (with(llama32(), "num_local_experts", json!(8)), vec!["num_local_experts", "8"]),
        (with(llama32(), "mlp_bias", json!(true)), vec!["mlp_bias", "true"]),
        (with(llama32(), "quantization_config", json!({"quant_method": "awq"})), vec!["quantization_config"]),
        (
            with(with(qwen25(), "use_sliding_window", json!(true)), "max_window_layers", json!(12)),
            vec!["use_sliding_window", "true", "mixing"],
        ),
        (
            with(qwen25(), "layer_types", json!(["sliding_attention", "full_attention"])),
            vec!["layer_types", "24"],
        ),
        (
            with(
                with(with(qwen25(), "num_hidden_layers", json!(2)), "use_sliding_window", json!(true)),
                "layer_types",
                json!(["sliding_attention", "full_attention"]),
            ),
            vec!["layer_types", "mixing"],
        ),
        (
            with(qwen25(), "layer_types", json!(vec!["sliding_attention"; 24])),
            vec!["layer_types", "no sliding window"],
        ),
        (
            with(
                with(qwen25(), "model_type", json!("mistral")),
                "architectures",
                json!(["MistralForCausalLM"]),
            ),
            vec![],
        ),
        (without(llama32(), "vocab_size"), vec!["vocab_size", "missing"]),
        (with(llama32(), "hidden_size", json!(-3)), vec!["hidden_size", "-3"]),
        (with(llama32(), "num_key_value_heads", json!(5)), vec!["num_key_value_heads", "5", "32"]),
        (with(llama32(), "head_dim", json!(63)), vec!["head_dim 63", "even"]),
        (
            with(
                with(without(llama32(), "head_dim"), "num_attention_heads", json!(3)),
                "num_key_value_heads",
                json!(1),
            ),
            vec!["hidden_size", "2048", "num_attention_heads 3"],
        ),
        (with(llama32(), "rms_norm_eps", json!("small")), vec!["rms_norm_eps", "\"small\""]),
        (with(llama32(), "rope_theta", json!(0.0)), vec!["rope_theta", "> 0"]),
    ];
    for (v, needles) in cases {
        if needles.is_empty() {
            // Mistral with Qwen's keys: use_sliding_window is not Mistral's; sliding_window is.
            assert_eq!(parse_value(&v).unwrap().sliding_window, Some(32768));
            continue;
        }
        refused(&v, &needles);
    }
    let mistral = json!({"architectures": ["MistralForCausalLM"], "vocab_size": 10, "hidden_size": 8,
                         "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
                         "sliding_window": 0});
    refused(&mistral, &["sliding_window = 0"]);
}

#[test]
fn bad_json_is_an_error_not_a_panic() {
    let e = DecoderConfig::from_json("{\"vocab_size\": ", Path::new("x/config.json")).unwrap_err();
    assert!(matches!(e, ModelError::Json { .. }) && e.to_string().contains("x/config.json"), "{e}");
    let e = DecoderConfig::from_json("[1, 2]", Path::new("config.json")).unwrap_err();
    assert!(e.to_string().contains("not a JSON object"), "{e}");
    let e = DecoderConfig::from_file(Path::new("/nonexistent/config.json")).unwrap_err();
    assert!(matches!(e, ModelError::Io { .. }), "{e}");
}

/// A Qwen3-30B-A3B-shaped config.json as transformers 5 writes it (`num_local_experts`).
fn qwen3_moe() -> Value {
    json!({
        "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_act": "silu",
        "hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 768,
        "num_local_experts": 128, "num_experts_per_tok": 8, "norm_topk_prob": true,
        "decoder_sparse_step": 1, "mlp_only_layers": [], "num_attention_heads": 32,
        "num_key_value_heads": 4, "head_dim": 128, "num_hidden_layers": 48,
        "max_position_embeddings": 40960, "rms_norm_eps": 1e-06, "router_aux_loss_coef": 0.001,
        "output_router_logits": false, "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"},
        "tie_word_embeddings": false, "use_sliding_window": false, "vocab_size": 151936
    })
}

#[test]
fn qwen3_moe_reads_its_experts() {
    let c = parse_value(&qwen3_moe()).unwrap();
    assert_eq!(c.architecture, Architecture::Qwen3Moe);
    assert!(c.qk_norm && !c.qkv_bias);
    let moe = c.moe.clone().unwrap();
    assert_eq!((moe.num_experts, moe.top_k, moe.intermediate_size), (128, 8, 768));
    assert!(moe.norm_topk_prob && (0..48).all(|i| moe.is_sparse(i)));
    // transformers 4 spelling, a sparse step and dense-only layers.
    let mut v = with(with(qwen3_moe(), "num_experts", json!(128)), "decoder_sparse_step", json!(2));
    v = with(with(v, "mlp_only_layers", json!([3])), "num_hidden_layers", json!(6));
    v.as_object_mut().unwrap().remove("norm_topk_prob");
    let moe = parse_value(&v).unwrap().moe.unwrap();
    assert_eq!(moe.sparse, [false, true, false, false, false, true]);
    assert!(!moe.norm_topk_prob, "transformers' default");
    assert_eq!(parse_value(&llama32()).unwrap().moe, None);
}

#[test]
fn qwen3_moe_refuses_what_it_does_not_implement() {
    let cases = [
        (with(qwen3_moe(), "num_experts_per_tok", json!(129)), vec!["num_experts_per_tok", "at most", "128"]),
        (with(qwen3_moe(), "shared_expert_intermediate_size", json!(512)), vec!["shared expert"]),
        (with(qwen3_moe(), "num_experts", json!(64)), vec!["num_local_experts", "differs", "64"]),
        (with(qwen3_moe(), "decoder_sparse_step", json!(0)), vec!["decoder_sparse_step", "at least 1"]),
        (with(qwen3_moe(), "mlp_only_layers", json!([48])), vec!["mlp_only_layers", "48"]),
        (with(qwen3_moe(), "mlp_only_layers", json!("all")), vec!["mlp_only_layers", "list"]),
    ];
    for (v, parts) in cases {
        let e = parse_value(&v).unwrap_err().to_string();
        for p in parts {
            assert!(e.contains(p), "{e:?} lacks {p:?}");
        }
    }
    let mut v = qwen3_moe();
    v.as_object_mut().unwrap().remove("num_local_experts");
    let e = parse_value(&v).unwrap_err().to_string();
    assert!(e.contains("num_experts") && e.contains("missing"), "{e}");
}

/// Found by fuzzing (fuzz/regressions/model_dir): 10^11 layers made the loader allocate and
/// build per layer for hours instead of refusing the config.
#[test]
fn absurd_layer_counts_are_refused() {
    let mut v = llama32();
    v["num_hidden_layers"] = json!(100_000_000_000u64);
    let e = parse_value(&v).unwrap_err().to_string();
    assert!(e.contains("num_hidden_layers") && e.contains("4096"), "{e}");
    v["num_hidden_layers"] = json!(crate::bert::config::MAX_LAYERS);
    assert_eq!(parse_value(&v).unwrap().num_hidden_layers, crate::bert::config::MAX_LAYERS);
}
