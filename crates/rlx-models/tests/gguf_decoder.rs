//! Decoders loaded from GGUF files (tests/fixtures/gguf_decoders/, made from the HF fixtures by
//! scripts/make_gguf_decoder_fixtures.py as llama.cpp's converter lays them out) on every
//! available device: the logits of the prompt match transformers' (the HF fixtures'
//! reference.json; llama.reference.json for the llama file, whose rope is the default one)
//! within 1e-4 relative for F32 files and 3e-3 for F16 files, with the same greedy tokens. The
//! llama file with llama.cpp's `rope_freqs.weight` (llama3 rope factors) must match the HF
//! llama fixture's own reference (transformers with llama3 rope) the same way.
//! Then the refusals (a quantized norm, a missing tensor, an unknown architecture, rope
//! factors of the wrong count) and the GGUF tokenizers against HF tokenizer.json files of the
//! same vocabularies, on the CPU.
//!
//! A GPU device that cannot be opened skips loudly, unless RLX_REQUIRE_GPU=1 makes it fail.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
use rlx_test_support::rel_err_f32;
use support::device_tests;

use rlx_models::gguf::GgufError;
use rlx_models::{
    gguf_tokenizer, Architecture, Decoder, Device, GgufFile, ModelError, Precision, RopeScaling,
};
use std::path::{Path, PathBuf};

const ARCHS: [&str; 3] = ["llama", "qwen2", "qwen3"];

fn gguf_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gguf_decoders")
}

fn file(arch: &str, ty: &str) -> PathBuf {
    gguf_dir().join(format!("{arch}.{ty}.gguf"))
}

struct Reference {
    prompt: Vec<i32>,
    logits: Vec<f64>,
    greedy: Vec<i32>,
}

/// The reference for `arch`'s GGUF files: the HF fixture's reference.json, but
/// llama.reference.json (default rope) for llama unless `llama3_rope`.
fn reference(arch: &str, llama3_rope: bool) -> Reference {
    let path = match arch {
        "llama" if !llama3_rope => gguf_dir().join("llama.reference.json"),
        _ => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/decoders")
            .join(arch)
            .join("reference.json"),
    };
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let ints = |key: &str| -> Vec<i32> {
        doc[key].as_array().unwrap().iter().map(|v| v.as_i64().unwrap() as i32).collect()
    };
    let logits = doc["logits"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    Reference { prompt: ints("prompt"), logits, greedy: ints("greedy") }
}

fn open(path: &Path, device: Device) -> Option<Decoder> {
    match Decoder::load(path, device, Precision::F32) {
        Ok(d) => Some(d),
        Err(ModelError::Runtime(e @ rlx_runtime::Error::DeviceUnavailable { .. })) => {
            rlx_test_support::unavailable(device, &format!("GGUF decoder {}", path.display()), &e);
            None
        }
        Err(e) => panic!("loading {} on {device}: {e}", path.display()),
    }
}

fn check(device: Device) {
    let mut cases: Vec<(PathBuf, Reference, f64)> = Vec::new();
    for arch in ARCHS {
        for (ty, bound) in [("f32", 1e-4), ("f16", 3e-3)] {
            cases.push((file(arch, ty), reference(arch, false), bound));
        }
    }
    cases.push((gguf_dir().join("llama_rope_freqs.gguf"), reference("llama", true), 1e-4));
    for (path, r, bound) in cases {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(mut dec) = open(&path, device) else { return };
        let logits = dec.logits(&r.prompt).unwrap();
        let err = rel_err_f32(&logits, &r.logits);
        assert!(err <= bound, "{device} {name}: logits relative error {err:e} > {bound:e}");
        let greedy = dec.generate_greedy(&r.prompt, r.greedy.len()).unwrap();
        assert_eq!(greedy, r.greedy, "{device} {name}: greedy tokens differ from transformers'");
        eprintln!("{device} {name}: logits rel err {err:.2e}, greedy {greedy:?} match");
    }
}

device_tests!(check => gguf_decoders_match_transformers_on_cpu, gguf_decoders_match_transformers_on_vulkan, gguf_decoders_match_transformers_on_wgpu);

#[test]
fn configs_follow_the_metadata() {
    let d = Decoder::load(&file("qwen3", "f16"), Device::Cpu, Precision::F32).unwrap();
    let c = d.config();
    assert_eq!(c.architecture, Architecture::Qwen3);
    assert_eq!((c.head_dim, c.num_attention_heads, c.num_key_value_heads), (32, 4, 2));
    assert!(c.qk_norm && c.tie_word_embeddings && !c.qkv_bias);
    assert_eq!((c.rope_theta, c.rms_norm_eps, c.vocab_size), (1e6, 1e-5, 256));
    let d = Decoder::load(&file("qwen2", "f32"), Device::Cpu, Precision::F32).unwrap();
    assert!(d.config().qkv_bias && !d.config().o_bias && d.config().tie_word_embeddings);
    let d = Decoder::load(&file("llama", "f32"), Device::Cpu, Precision::F32).unwrap();
    assert!(!d.config().tie_word_embeddings && !d.config().qkv_bias);
    assert_eq!(d.config().rope_scaling, RopeScaling::None);
    // llama3 factors for d = 16, θ = 10000, factor 8, low 1, high 4, original 32: frequency 0
    // is kept, 1 interpolated, the rest divided by 8.
    let d = Decoder::load(&gguf_dir().join("llama_rope_freqs.gguf"), Device::Cpu, Precision::F32).unwrap();
    let RopeScaling::Factors(f) = &d.config().rope_scaling else { panic!("{:?}", d.config().rope_scaling) };
    assert_eq!(f.len(), 8);
    assert_eq!((f[0], f[7]), (1.0, 8.0));
    assert!(f[1] > 1.0 && f[1] < 8.0 && f[2..].iter().all(|&x| x == 8.0), "{f:?}");
}

/// A copy of fixture `src` with `edit` applied to its bytes, in a temp file.
fn edited(src: &Path, tag: &str, edit: impl FnOnce(&mut Vec<u8>)) -> PathBuf {
    let mut bytes = std::fs::read(src).unwrap();
    edit(&mut bytes);
    let path = std::env::temp_dir().join(format!("rlx-gguf-decoder-{tag}-{}.gguf", std::process::id()));
    std::fs::write(&path, bytes).unwrap();
    path
}

fn find(bytes: &[u8], what: &str) -> usize {
    bytes.windows(what.len()).position(|w| w == what.as_bytes()).unwrap_or_else(|| panic!("no '{what}'"))
}

fn gguf_err(path: &Path) -> (GgufError, String) {
    let e = match Decoder::load(path, Device::Cpu, Precision::F32) {
        Err(e) => e,
        Ok(d) => panic!("{} loaded: {d:?}", path.display()),
    };
    let msg = e.to_string();
    match e {
        ModelError::Gguf { source, .. } => (source, msg),
        other => panic!("expected a GGUF error, got {other}"),
    }
}

#[test]
fn a_quantized_norm_is_refused_clearly() {
    // Retype blk.0.attn_norm.weight from F32 (0) to Q8_0 (8): its 64 values are whole Q8_0
    // blocks and the smaller data still fits its slot, so the file opens. Quantized blocks
    // stay packed only for 2-D weights, so this 1-D one is refused by name.
    let path = edited(&file("qwen2", "f32"), "q8", |b| {
        let name = "blk.0.attn_norm.weight";
        let at = find(b, name) + name.len() + 4 + 8;
        b[at..at + 4].copy_from_slice(&8u32.to_le_bytes());
    });
    let (e, msg) = gguf_err(&path);
    assert!(
        matches!(e, GgufError::Quantized { ref tensor, .. } if tensor == "blk.0.attn_norm.weight"),
        "{e}"
    );
    assert!(
        msg.contains(
            "tensor 'blk.0.attn_norm.weight' is Q8_0, but rlx keeps quantized blocks only for 2-D \
             weights (linear layers and the token embedding); store this tensor as F32, F16 or BF16"
        ) && msg.contains(&path.display().to_string()),
        "{msg}"
    );
}

#[test]
fn a_missing_tensor_names_both_names() {
    let path = edited(&file("llama", "f16"), "missing", |b| {
        let at = find(b, "blk.1.ffn_up.weight");
        b[at + "blk.1.ffn_up.weigh".len()] = b'x';
    });
    let (e, msg) = gguf_err(&path);
    assert!(matches!(e, GgufError::MissingWeight { .. }), "{e}");
    assert!(
        msg.contains("'blk.1.ffn_up.weight'")
            && msg.contains("'model.layers.1.mlp.up_proj.weight'")
            && msg.contains("[128, 64]"),
        "{msg}"
    );
}

#[test]
fn a_misshapen_tensor_names_both_shapes() {
    // blk.0.ffn_up.weight is [128, 64] (GGUF dims 64, 128); claim 32 × 256 instead.
    let path = edited(&file("qwen3", "f32"), "shape", |b| {
        let at = find(b, "blk.0.ffn_up.weight") + "blk.0.ffn_up.weight".len() + 4;
        b[at..at + 8].copy_from_slice(&32u64.to_le_bytes());
        b[at + 8..at + 16].copy_from_slice(&256u64.to_le_bytes());
    });
    let (e, msg) = gguf_err(&path);
    assert!(matches!(e, GgufError::WeightShape { .. }), "{e}");
    assert!(msg.contains("[256, 32]") && msg.contains("[128, 64]"), "{msg}");
}

#[test]
fn unknown_architectures_and_miscounted_rope_factors_are_refused() {
    let path = edited(&file("qwen2", "f16"), "arch", |b| {
        // Every "qwen2" (the architecture and its key prefix) becomes "qwen9".
        let mut at = 0;
        while let Some(p) = b[at..].windows(5).position(|w| w == b"qwen2") {
            b[at + p + 4] = b'9';
            at += p + 5;
        }
    });
    let (e, _) = gguf_err(&path);
    assert_eq!(
        e,
        GgufError::Architecture { arch: "qwen9".into(), known: "llama, qwen2, qwen3, qwen3moe".into() }
    );

    // rope_freqs.weight cut from 8 values to 7 (its dims follow its name and its rank; the
    // shorter data still fits its slot): one factor per frequency is needed.
    let path = edited(&gguf_dir().join("llama_rope_freqs.gguf"), "rope-freqs", |b| {
        let name = "rope_freqs.weight";
        let at = find(b, name) + name.len() + 4;
        assert_eq!(b[at..at + 8], 8u64.to_le_bytes());
        b[at..at + 8].copy_from_slice(&7u64.to_le_bytes());
    });
    let (e, msg) = gguf_err(&path);
    assert_eq!(e, GgufError::RopeFreqs { len: 7, half: 8, head_dim: 16 });
    assert!(
        msg.contains("'rope_freqs.weight' has 7 values, but head dim 16 has 8 rope frequencies"),
        "{msg}"
    );
}

/// The GGUF tokenizers give the ids of HF tokenizer.json files built (by the fixture script,
/// with the `tokenizers` package) from the same vocabularies, and decode back.
#[test]
fn tokenizers_match_hf() {
    let texts = [
        "the quick brown fox",
        "  two  spaces and a trailing space ",
        "café naïve über résumé",
        "日本語 テキスト",
        "numbers 12345 and 2026",
        "line\nbreak\n\nand tabs\t",
        "it's don't we'll THEY'RE",
        "Ω€ fall back to bytes",
        "",
    ];
    for arch in ARCHS {
        let gguf = GgufFile::open(file(arch, "f16")).unwrap();
        let ours = gguf_tokenizer(&gguf).unwrap();
        let hf = tokenizers::Tokenizer::from_file(gguf_dir().join(format!("{arch}.tokenizer.json"))).unwrap();
        for text in texts {
            let a = ours.encode(text, true).unwrap();
            let b = hf.encode(text, true).unwrap();
            assert_eq!(a.get_ids(), b.get_ids(), "{arch}: ids of {text:?}");
            let back = ours.decode(a.get_ids(), true).unwrap();
            assert_eq!(back, hf.decode(b.get_ids(), true).unwrap(), "{arch}: decoding {text:?}");
        }
        let bos = if arch == "llama" { Some(1) } else { None };
        assert_eq!(ours.encode("the", true).unwrap().get_ids().first().copied().filter(|&i| i == 1), bos);
        eprintln!("{arch}: {} strings tokenize as HF's tokenizer.json", texts.len());
    }
}

/// A pre-tokenizer or tokenizer model rlx does not know is refused, naming the key and value.
#[test]
fn unknown_tokenizers_are_refused() {
    let tokenizer_err = |path: &Path| match gguf_tokenizer(&GgufFile::open(path).unwrap()) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("{} gave a tokenizer", path.display()),
    };
    // tokenizer.ggml.pre = "qwen2" → "qwen9" (the architecture keeps its name).
    let path = edited(&file("qwen2", "f16"), "pre", |b| {
        let at = find(b, "tokenizer.ggml.pre") + "tokenizer.ggml.pre".len() + 4 + 8;
        assert_eq!(&b[at..at + 5], b"qwen2");
        b[at + 4] = b'9';
    });
    let msg = tokenizer_err(&path);
    assert!(msg.contains("tokenizer.ggml.pre") && msg.contains("'qwen9' is not supported"), "{msg}");
    // tokenizer.ggml.model = "llama" → "llamb".
    let path = edited(&file("llama", "f16"), "model", |b| {
        let at = find(b, "tokenizer.ggml.model") + "tokenizer.ggml.model".len() + 4 + 8;
        assert_eq!(&b[at..at + 5], b"llama");
        b[at + 4] = b'b';
    });
    let msg = tokenizer_err(&path);
    assert!(msg.contains("tokenizer model 'llamb' is not supported (gpt2, llama)"), "{msg}");
}
