//! A tiny random BERT written to a temp folder (config.json, model.safetensors written by hand,
//! a word-level tokenizer.json) checked against a straightforward f64 forward pass written here,
//! plus the weight-file errors and dtypes.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rlx_models::{Device, Embedder, EmbedderOptions, ModelError, Precision};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const VOCAB: usize = 12;
const H: usize = 8;
const HEADS: usize = 2;
const FFN: usize = 16;
const LAYERS: usize = 2;
const MAXPOS: usize = 16;
const EPS: f64 = 1e-12;

/// Deterministic values that are multiples of 1/64 in [-1, 1): exact in f16 and bf16.
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = rlx_test_support::Rng::new(seed);
    (0..n).map(|_| rng.int(-64, 63) as f32 / 64.0).collect()
}

fn tensors() -> BTreeMap<String, (Vec<usize>, Vec<f32>)> {
    let mut shapes: Vec<(String, Vec<usize>)> = vec![
        ("embeddings.word_embeddings.weight".into(), vec![VOCAB, H]),
        ("embeddings.position_embeddings.weight".into(), vec![MAXPOS, H]),
        ("embeddings.token_type_embeddings.weight".into(), vec![2, H]),
        ("embeddings.LayerNorm.weight".into(), vec![H]),
        ("embeddings.LayerNorm.bias".into(), vec![H]),
    ];
    for l in 0..LAYERS {
        let p = |s: &str| format!("encoder.layer.{l}.{s}");
        for (n, o, i) in [
            ("attention.self.query", H, H),
            ("attention.self.key", H, H),
            ("attention.self.value", H, H),
            ("attention.output.dense", H, H),
            ("intermediate.dense", FFN, H),
            ("output.dense", H, FFN),
        ] {
            shapes.push((p(&format!("{n}.weight")), vec![o, i]));
            shapes.push((p(&format!("{n}.bias")), vec![o]));
        }
        for n in ["attention.output.LayerNorm", "output.LayerNorm"] {
            shapes.push((p(&format!("{n}.weight")), vec![H]));
            shapes.push((p(&format!("{n}.bias")), vec![H]));
        }
    }
    shapes
        .into_iter()
        .enumerate()
        .map(|(i, (name, dims))| {
            let v = values(dims.iter().product(), 7 + i as u64);
            (name, (dims, v))
        })
        .collect()
}

/// Writes a safetensors file by hand: u64 header length, JSON header, raw little-endian data.
fn write_safetensors(path: &Path, t: &BTreeMap<String, (Vec<usize>, Vec<f32>)>, dtype: &str, prefix: &str) {
    let mut header = serde_json::Map::new();
    let mut data = Vec::new();
    for (name, (dims, v)) in t {
        let start = data.len();
        for &x in v {
            match dtype {
                "F32" => data.extend_from_slice(&x.to_le_bytes()),
                "F16" => data.extend_from_slice(&half::f16::from_f32(x).to_le_bytes()),
                _ => data.extend_from_slice(&half::bf16::from_f32(x).to_le_bytes()),
            }
        }
        header.insert(
            format!("{prefix}{name}"),
            serde_json::json!({"dtype": dtype, "shape": dims, "data_offsets": [start, data.len()]}),
        );
    }
    let h = serde_json::to_vec(&header).unwrap();
    let mut bytes = (h.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(&h);
    bytes.extend_from_slice(&data);
    std::fs::write(path, bytes).unwrap();
}

fn model_dir(tag: &str, t: &BTreeMap<String, (Vec<usize>, Vec<f32>)>, dtype: &str, prefix: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rlx-tiny-bert-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = serde_json::json!({
        "vocab_size": VOCAB, "hidden_size": H, "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS, "intermediate_size": FFN, "max_position_embeddings": MAXPOS,
        "type_vocab_size": 2, "layer_norm_eps": EPS, "hidden_act": "relu"
    });
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    std::fs::write(dir.join("sentence_bert_config.json"), r#"{"max_seq_length": 6}"#).unwrap();
    let vocab: serde_json::Map<String, serde_json::Value> =
        ["[UNK]", "[CLS]", "[SEP]", "a", "b", "c", "d", "e", "f", "g", "h", "i"]
            .iter()
            .enumerate()
            .map(|(i, w)| (w.to_string(), serde_json::json!(i)))
            .collect();
    let tokenizer = serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
        "normalizer": null, "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [1], "tokens": ["[CLS]"]}, "[SEP]": {"id": "[SEP]", "ids": [2], "tokens": ["[SEP]"]}}},
        "decoder": null,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}
    });
    std::fs::write(dir.join("tokenizer.json"), tokenizer.to_string()).unwrap();
    write_safetensors(&dir.join("model.safetensors"), t, dtype, prefix);
    dir
}

// ---- the reference: one sentence at a time, no padding, f64 ----

fn w<'a>(t: &'a BTreeMap<String, (Vec<usize>, Vec<f32>)>, name: &str) -> &'a [f32] {
    &t[name].1
}

fn linear(x: &[Vec<f64>], wt: &[f32], b: &[f32], out: usize) -> Vec<Vec<f64>> {
    let inp = x[0].len();
    x.iter()
        .map(|row| {
            (0..out)
                .map(|o| b[o] as f64 + (0..inp).map(|i| row[i] * wt[o * inp + i] as f64).sum::<f64>())
                .collect()
        })
        .collect()
}

fn layer_norm(x: &mut [Vec<f64>], g: &[f32], b: &[f32]) {
    for row in x {
        let n = row.len() as f64;
        let mean = row.iter().sum::<f64>() / n;
        let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        for (i, v) in row.iter_mut().enumerate() {
            *v = (*v - mean) / (var + EPS).sqrt() * g[i] as f64 + b[i] as f64;
        }
    }
}

/// The reference's L2-normalised embedding.
fn reference(t: &BTreeMap<String, (Vec<usize>, Vec<f32>)>, ids: &[usize]) -> Vec<f64> {
    let mean = pooled_reference(t, ids);
    let norm = mean.iter().map(|v| v * v).sum::<f64>().sqrt().max(1e-12);
    mean.iter().map(|v| v / norm).collect()
}

/// The reference's mean-pooled vector, before the normalisation.
fn pooled_reference(t: &BTreeMap<String, (Vec<usize>, Vec<f32>)>, ids: &[usize]) -> Vec<f64> {
    let s = ids.len();
    let (we, pe, te) = (
        w(t, "embeddings.word_embeddings.weight"),
        w(t, "embeddings.position_embeddings.weight"),
        w(t, "embeddings.token_type_embeddings.weight"),
    );
    let mut x: Vec<Vec<f64>> = (0..s)
        .map(|p| (0..H).map(|d| (we[ids[p] * H + d] + pe[p * H + d] + te[d]) as f64).collect())
        .collect();
    layer_norm(&mut x, w(t, "embeddings.LayerNorm.weight"), w(t, "embeddings.LayerNorm.bias"));
    let dh = H / HEADS;
    for l in 0..LAYERS {
        let p = |n: &str| format!("encoder.layer.{l}.{n}");
        let lin = |x: &[Vec<f64>], n: &str, out: usize| {
            linear(x, w(t, &p(&format!("{n}.weight"))), w(t, &p(&format!("{n}.bias"))), out)
        };
        let (q, k, v) = (
            lin(&x, "attention.self.query", H),
            lin(&x, "attention.self.key", H),
            lin(&x, "attention.self.value", H),
        );
        let mut a = vec![vec![0f64; H]; s];
        for h in 0..HEADS {
            for i in 0..s {
                let scores: Vec<f64> = (0..s)
                    .map(|j| {
                        (0..dh).map(|d| q[i][h * dh + d] * k[j][h * dh + d]).sum::<f64>() / (dh as f64).sqrt()
                    })
                    .collect();
                let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let e: Vec<f64> = scores.iter().map(|z| (z - m).exp()).collect();
                let z: f64 = e.iter().sum();
                for d in 0..dh {
                    a[i][h * dh + d] = (0..s).map(|j| e[j] / z * v[j][h * dh + d]).sum();
                }
            }
        }
        let o = lin(&a, "attention.output.dense", H);
        let mut x1: Vec<Vec<f64>> =
            o.iter().zip(&x).map(|(o, x)| o.iter().zip(x).map(|(a, b)| a + b).collect()).collect();
        layer_norm(
            &mut x1,
            w(t, &p("attention.output.LayerNorm.weight")),
            w(t, &p("attention.output.LayerNorm.bias")),
        );
        let up: Vec<Vec<f64>> = lin(&x1, "intermediate.dense", FFN)
            .into_iter()
            .map(|r| r.into_iter().map(|v| v.max(0.0)).collect())
            .collect();
        let down = lin(&up, "output.dense", H);
        x = down.iter().zip(&x1).map(|(o, x)| o.iter().zip(x).map(|(a, b)| a + b).collect()).collect();
        layer_norm(&mut x, w(t, &p("output.LayerNorm.weight")), w(t, &p("output.LayerNorm.bias")));
    }
    (0..H).map(|d| x.iter().map(|r| r[d]).sum::<f64>() / s as f64).collect()
}

/// Token ids the word-level tokenizer gives, with [CLS]/[SEP] and truncation at 6.
fn ids_of(sentence: &str) -> Vec<usize> {
    let words = ["[UNK]", "[CLS]", "[SEP]", "a", "b", "c", "d", "e", "f", "g", "h", "i"];
    let mut ids = vec![1];
    ids.extend(sentence.split_whitespace().map(|t| words.iter().position(|w| *w == t).unwrap_or(0)).take(4));
    ids.push(2);
    ids
}

fn assert_close(got: &[f32], expected: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), expected.len());
    for (i, (g, e)) in got.iter().zip(expected).enumerate() {
        assert!((*g as f64 - e).abs() <= tol, "{what}: element {i}: got {g}, expected {e}");
    }
}

const SENTENCES: [&str; 5] = ["a b c", "", "i h g f e d c b a", "zzz", "d"];

#[test]
fn padded_batches_match_the_reference_forward_pass() {
    let t = tensors();
    let dir = model_dir("f32", &t, "F32", "");
    let mut emb =
        Embedder::load(&dir, Device::Cpu, EmbedderOptions { batch_size: 2, ..Default::default() }).unwrap();
    assert_eq!(emb.dim(), H);
    let all = emb.embed_batch(&SENTENCES).unwrap();
    let sorted = emb.embed(&SENTENCES).unwrap();
    for (i, s) in SENTENCES.iter().enumerate() {
        let r = reference(&t, &ids_of(s));
        assert_close(&all[i], &r, 2e-5, &format!("batch of 5, sentence {i}"));
        assert_close(&sorted[i], &r, 2e-5, &format!("embed, sentence {i}"));
    }
    // One batch padded to 6 tokens and batches of 2 at their own lengths were compiled.
    assert!(emb.compiled_shapes().contains(&(5, 6)), "{:?}", emb.compiled_shapes());
}

#[test]
fn unnormalized_embeddings_are_the_pooled_vectors() {
    let t = tensors();
    let dir = model_dir("raw", &t, "F32", "");
    let mut emb = Embedder::load(&dir, Device::Cpu, EmbedderOptions::default()).unwrap();
    let raw = emb.embed_batch_with(&SENTENCES, false).unwrap();
    let unit = emb.embed_batch_with(&SENTENCES, true).unwrap();
    assert_eq!(unit, emb.embed_batch(&SENTENCES).unwrap());
    for (i, s) in SENTENCES.iter().enumerate() {
        let r = pooled_reference(&t, &ids_of(s));
        assert_close(&raw[i], &r, 2e-5, &format!("unnormalised, sentence {i}"));
        let norm = raw[i].iter().map(|v| (*v as f64).powi(2)).sum::<f64>().sqrt();
        assert!((norm - 1.0).abs() > 1e-3, "sentence {i}: the pooled vector already has norm {norm}");
        let scaled: Vec<f64> = raw[i].iter().map(|v| *v as f64 / norm).collect();
        assert_close(&unit[i], &scaled, 2e-5, &format!("normalised by hand, sentence {i}"));
    }
    assert!(emb.embed_batch_with(&[], false).unwrap().is_empty());
}

#[test]
fn f16_bf16_and_prefixed_names_load_the_same_model() {
    let t = tensors();
    let expected = Embedder::load(&model_dir("base", &t, "F32", ""), Device::Cpu, Default::default())
        .unwrap()
        .embed(&SENTENCES)
        .unwrap();
    for (tag, dtype, prefix, precision, tol) in [
        ("f16", "F16", "", Precision::F32, 0.0),
        ("bf16", "BF16", "bert.", Precision::F32, 0.0),
        ("half", "F32", "bert.", Precision::F16, 0.0),
    ] {
        let dir = model_dir(tag, &t, dtype, prefix);
        let opts = EmbedderOptions { precision, ..Default::default() };
        let got = Embedder::load(&dir, Device::Cpu, opts).unwrap().embed(&SENTENCES).unwrap();
        for (g, e) in got.iter().zip(&expected) {
            let e64: Vec<f64> = e.iter().map(|&v| v as f64).collect();
            // The weights are exact in every dtype, so the results are identical.
            assert_close(g, &e64, tol, tag);
        }
    }
}

#[test]
fn missing_and_misshapen_tensors_are_named() {
    let mut t = tensors();
    t.remove("encoder.layer.1.output.dense.bias");
    let dir = model_dir("missing", &t, "F32", "");
    let e = Embedder::load(&dir, Device::Cpu, Default::default()).unwrap_err();
    assert!(matches!(e, ModelError::MissingTensor { .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("encoder.layer.1.output.dense.bias") && msg.contains("[8]"), "{msg}");

    let mut t = tensors();
    t.insert("encoder.layer.0.attention.self.key.weight".into(), (vec![H, H + 1], vec![0.0; H * (H + 1)]));
    let dir = model_dir("shape", &t, "F32", "");
    let msg = Embedder::load(&dir, Device::Cpu, Default::default()).unwrap_err().to_string();
    assert!(
        msg.contains("encoder.layer.0.attention.self.key.weight")
            && msg.contains("[8, 9]")
            && msg.contains("[8, 8]"),
        "{msg}"
    );

    let empty = std::env::temp_dir().join(format!("rlx-tiny-bert-empty-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let msg = Embedder::load(&empty, Device::Cpu, Default::default()).unwrap_err().to_string();
    assert!(msg.contains("model.safetensors") && msg.contains("rlx fetch"), "{msg}");
}

/// One sequence of `n` tokens, all id 1, segment 0, unmasked.
fn ones(n: usize) -> rlx_models::TokenBatch {
    rlx_models::TokenBatch {
        batch: 1,
        seq: n,
        input_ids: vec![1; n],
        token_type_ids: vec![0; n],
        attention_mask: vec![1; n],
    }
}

#[test]
fn a_sequence_past_the_position_table_is_refused() {
    let dir = model_dir("too_long", &tensors(), "F32", "");
    let mut emb = Embedder::load(&dir, Device::Cpu, EmbedderOptions::default()).unwrap();
    let tokens = ones(MAXPOS + 1);
    let err = emb.run_tokens(&tokens).unwrap_err().to_string();
    assert!(err.contains("max_position_embeddings"), "{err}");
    // The longest allowed sequence runs.
    let tokens = ones(MAXPOS);
    assert_eq!(emb.run_tokens(&tokens).unwrap().len(), 1);
}
