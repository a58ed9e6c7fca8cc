//! Fine-tuning a tiny random BERT embedder on sentence pairs (`EmbedderFineTune`): the first
//! step's loss equals the ranking loss computed on the host from the inference embeddings, the
//! loss falls, the saved folder loads as an embedder whose embeddings moved, a resumed run ends
//! bit-identical to an uninterrupted one, the GPU backends follow the CPU, and bad input is a
//! clear error.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rlx_models::{Device, Embedder, EmbedderFineTune, EmbedderOptions, FineTuneOptions, Pairs, Precision};
use rlx_runtime::Session;
use std::path::{Path, PathBuf};

const WORDS: [&str; 12] = ["[UNK]", "[CLS]", "[SEP]", "a", "b", "c", "d", "e", "f", "g", "h", "i"];
const H: usize = 8;
const FFN: usize = 16;
const LAYERS: usize = 2;
const MAXPOS: usize = 16;

fn tmp(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rlx-bert-train-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A tiny BERT folder: config, a word-level tokenizer, random f32 weights (safetensors crate).
fn model_dir(tag: &str) -> PathBuf {
    let dir = tmp(tag);
    let config = serde_json::json!({
        "vocab_size": WORDS.len(), "hidden_size": H, "num_hidden_layers": LAYERS,
        "num_attention_heads": 2, "intermediate_size": FFN, "max_position_embeddings": MAXPOS,
        "type_vocab_size": 2, "layer_norm_eps": 1e-12, "hidden_act": "gelu"
    });
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    std::fs::write(dir.join("sentence_bert_config.json"), r#"{"max_seq_length": 8}"#).unwrap();
    let vocab: serde_json::Map<String, serde_json::Value> =
        WORDS.iter().enumerate().map(|(i, w)| (w.to_string(), serde_json::json!(i))).collect();
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
    let cfg = rlx_models::bert::config::read_model_config(&dir).unwrap();
    let shapes = rlx_models::bert::weight_shapes(&cfg.bert, cfg.pooling).unwrap();
    let data: Vec<(String, Vec<usize>, Vec<u8>)> = shapes
        .into_iter()
        .enumerate()
        .map(|(i, (name, dims))| {
            let n: usize = dims.iter().product();
            let v: Vec<f32> = if name.contains("LayerNorm.weight") {
                vec![1.0; n]
            } else {
                rlx_test_support::uniform(n, 100 + i as u64, 0.5)
            };
            (name, dims, v.iter().flat_map(|x| x.to_le_bytes()).collect())
        })
        .collect();
    let views: Vec<(&str, safetensors::tensor::TensorView)> = data
        .iter()
        .map(|(n, d, b)| {
            (n.as_str(), safetensors::tensor::TensorView::new(safetensors::Dtype::F32, d.clone(), b).unwrap())
        })
        .collect();
    std::fs::write(dir.join("model.safetensors"), safetensors::serialize(views, None).unwrap()).unwrap();
    dir
}

fn pairs() -> Pairs {
    let text =
        "a b c\ta b d\nd e\te d\nf g h\tf g i\ni a\ti b a\nb b c\tb c\nh g\th g f\nc d e f\tc d e\ng\tg h\n";
    Pairs::parse_tsv("pairs.tsv", text).unwrap()
}

fn options() -> FineTuneOptions {
    FineTuneOptions {
        batch_size: 4,
        epochs: 3,
        lr: 1e-2,
        warmup_steps: Some(0),
        shuffle_seed: Some(3),
        ..FineTuneOptions::default()
    }
}

/// The ranking loss on the host from embeddings: scale·cos, cross-entropy with the diagonal.
fn host_loss(a: &[Vec<f32>], p: &[Vec<f32>], scale: f64) -> f64 {
    let cos = |x: &[f32], y: &[f32]| {
        let d: f64 = x.iter().zip(y).map(|(&u, &v)| u as f64 * v as f64).sum();
        let n = |z: &[f32]| z.iter().map(|&u| (u as f64).powi(2)).sum::<f64>().sqrt();
        d / (n(x) * n(y))
    };
    let mut total = 0.0;
    for (i, ai) in a.iter().enumerate() {
        let s: Vec<f64> = p.iter().map(|pj| scale * cos(ai, pj)).collect();
        let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let lse = m + s.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
        total += lse - s[i];
    }
    total / a.len() as f64
}

fn embed(dir: &Path, sentences: &[&str]) -> Vec<Vec<f32>> {
    let mut e = Embedder::load(dir, Device::Cpu, EmbedderOptions::default()).unwrap();
    e.embed_batch(sentences).unwrap()
}

#[test]
fn fine_tune_lowers_the_loss_and_saves_a_loadable_model() {
    let dir = model_dir("cpu");
    let pairs = pairs();
    let session = Session::new(Device::Cpu).unwrap();
    let mut ft = EmbedderFineTune::new(&dir, &session, &pairs, options()).unwrap();
    assert_eq!((ft.steps_per_epoch(), ft.total_steps()), (2, 6));
    // The step's first loss is the host's loss over the inference graph's embeddings.
    let batch = ft.epoch_batches(pairs.len(), 0).remove(0);
    let a: Vec<&str> = batch.iter().map(|&i| pairs.anchors[i].as_str()).collect();
    let p: Vec<&str> = batch.iter().map(|&i| pairs.positives[i].as_str()).collect();
    let want = host_loss(&embed(&dir, &a), &embed(&dir, &p), 20.0);
    let reports = ft.train(&pairs, |_| {}).unwrap();
    assert_eq!(reports.len(), 6);
    let first = reports[0].loss as f64;
    assert!((first - want).abs() <= 1e-4 * want.abs().max(1.0), "first loss {first}, host {want}");
    assert!(reports.iter().all(|r| r.loss.is_finite() && !r.skipped));
    let (early, late) = (reports[0].loss + reports[1].loss, reports[4].loss + reports[5].loss);
    assert!(late < early, "loss did not fall: {:?}", reports.iter().map(|r| r.loss).collect::<Vec<_>>());

    let out = tmp("cpu-out");
    ft.save(&out).unwrap();
    let before = embed(&dir, &["a b c", "f g h"]);
    let after = embed(&out, &["a b c", "f g h"]);
    for (x, y) in before.iter().zip(&after) {
        assert_eq!(y.len(), H);
        let moved: f32 = x.iter().zip(y).map(|(u, v)| (u - v).abs()).sum();
        assert!(moved > 1e-3, "the saved embeddings did not move: {moved}");
    }
    // The saved weights are the trainer's.
    let saved = rlx_models::SafetensorsFile::open(&out.join("model.safetensors")).unwrap();
    for (name, t) in ft.weights().unwrap() {
        let w = saved.load(&name, t.shape().dims(), Precision::F32).unwrap();
        assert_eq!(w, rlx_models::WeightData::F32(t.to_f32_vec()), "{name}");
    }
    // Saving into the source folder replaces its weights and keeps its other files whole
    // (copying a file onto itself would have truncated it).
    let tokenizer = std::fs::read(dir.join("tokenizer.json")).unwrap();
    ft.save(&dir).unwrap();
    assert_eq!(std::fs::read(dir.join("tokenizer.json")).unwrap(), tokenizer);
    assert_eq!(embed(&dir, &["a b c", "f g h"]), after);
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn a_resumed_fine_tune_ends_where_an_uninterrupted_one_does() {
    let dir = model_dir("resume");
    let pairs = pairs();
    let session = Session::new(Device::Cpu).unwrap();
    let mut whole = EmbedderFineTune::new(&dir, &session, &pairs, options()).unwrap();
    let all = whole.train(&pairs, |_| {}).unwrap();

    let session = Session::new(Device::Cpu).unwrap();
    let mut first = EmbedderFineTune::new(&dir, &session, &pairs, options()).unwrap();
    let batches = first.epoch_batches(pairs.len(), 0);
    for idx in &batches[..2] {
        let a: Vec<&str> = idx.iter().map(|&i| pairs.anchors[i].as_str()).collect();
        let p: Vec<&str> = idx.iter().map(|&i| pairs.positives[i].as_str()).collect();
        first.step(&a, &p).unwrap();
    }
    let ckpt = dir.join("ckpt.safetensors");
    first.save_checkpoint(&ckpt).unwrap();
    let session = Session::new(Device::Cpu).unwrap();
    let mut rest = EmbedderFineTune::new(&dir, &session, &pairs, options()).unwrap();
    rest.resume(&ckpt).unwrap();
    assert_eq!(rest.steps(), 2);
    let tail = rest.train(&pairs, |_| {}).unwrap();
    assert_eq!(tail.len(), 4);
    let losses: Vec<f32> = tail.iter().map(|r| r.loss).collect();
    let want: Vec<f32> = all[2..].iter().map(|r| r.loss).collect();
    assert_eq!(losses, want);
    assert_eq!(rest.weights().unwrap(), whole.weights().unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two steps on `device` follow the CPU's losses.
fn follows_the_cpu(device: Device) {
    let dir = model_dir(&format!("dev-{device}"));
    let pairs = pairs();
    let opts = FineTuneOptions { epochs: 1, ..options() };
    let cpu = Session::new(Device::Cpu).unwrap();
    let want = EmbedderFineTune::new(&dir, &cpu, &pairs, opts).unwrap().train(&pairs, |_| {}).unwrap();
    let Some(session) = rlx_test_support::open(device, "embedder fine-tune") else { return };
    let got = EmbedderFineTune::new(&dir, &session, &pairs, opts).unwrap().train(&pairs, |_| {}).unwrap();
    for (g, w) in got.iter().zip(&want) {
        assert!(
            (g.loss - w.loss).abs() <= 1e-4 * w.loss.abs().max(1.0),
            "{device}: {} vs {}",
            g.loss,
            w.loss
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn fine_tune_on_vulkan() {
    follows_the_cpu(Device::Vulkan);
}

#[test]
fn fine_tune_on_wgpu() {
    follows_the_cpu(Device::Gpu);
}

#[test]
fn bad_fine_tune_input_is_a_clear_error() {
    let dir = model_dir("errors");
    let session = Session::new(Device::Cpu).unwrap();
    let few = Pairs::parse_tsv("p", "a\tb\n").unwrap();
    let e = EmbedderFineTune::new(&dir, &session, &few, options()).unwrap_err().to_string();
    assert!(e.contains("no full batch of 4"), "{e}");
    let e = EmbedderFineTune::new(&dir, &session, &pairs(), FineTuneOptions { lr: f32::NAN, ..options() })
        .unwrap_err()
        .to_string();
    assert!(e.contains("NaN") || e.contains("rate"), "{e}");
    let e =
        EmbedderFineTune::new(&dir.join("nowhere"), &session, &pairs(), options()).unwrap_err().to_string();
    assert!(e.contains("nowhere"), "{e}");
    let mut ft = EmbedderFineTune::new(&dir, &session, &pairs(), options()).unwrap();
    let e = ft.step(&["a"], &["b"]).unwrap_err().to_string();
    assert!(e.contains("takes 4 anchors"), "{e}");
    let e = ft.resume(&dir.join("missing.safetensors")).unwrap_err().to_string();
    assert!(e.contains("missing.safetensors"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Activation checkpointing recomputes the forward's values in the backward: the losses and
/// the weights are bit-identical to the run that keeps them.
#[test]
fn recompute_gives_the_same_training() {
    let dir = model_dir("recompute");
    let pairs = pairs();
    let run = |recompute: bool| {
        let session = Session::new(Device::Cpu).unwrap();
        let opts = FineTuneOptions { recompute, ..options() };
        let mut ft = EmbedderFineTune::new(&dir, &session, &pairs, opts).unwrap();
        let losses: Vec<u32> = ft.train(&pairs, |_| {}).unwrap().iter().map(|r| r.loss.to_bits()).collect();
        (losses, ft.weights().unwrap())
    };
    let (plain, re) = (run(false), run(true));
    assert_eq!(plain.0, re.0);
    assert_eq!(plain.1, re.1);
    std::fs::remove_dir_all(&dir).unwrap();
}
