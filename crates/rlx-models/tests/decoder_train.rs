//! Training the tiny Llama fixture on a text file (`DecoderFineTune`): the first step's loss
//! equals the next-token cross-entropy computed on the host from the inference model's logits,
//! the loss falls on a repeated text, the saved folder loads as a `Decoder` whose logits moved,
//! a resumed run ends bit-identical to an uninterrupted one, the GPU backends follow the CPU,
//! a folder without weights starts from the seeded init, and bad input is a clear error.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rlx_models::{Decoder, DecoderFineTune, DecoderTrainOptions, Device, Precision};
use rlx_runtime::Session;
#[path = "support/decoder_text.rs"]
mod decoder_text;
use decoder_text::*;
use std::path::Path;

fn options() -> DecoderTrainOptions {
    DecoderTrainOptions {
        batch_size: BATCH,
        seq_len: SEQ,
        epochs: 3,
        lr: 3e-3,
        warmup_steps: 0,
        ..DecoderTrainOptions::default()
    }
}

#[test]
fn training_lowers_the_loss_and_saves_a_loadable_model() {
    let dir = model_dir("llama", "cpu");
    let session = Session::new(Device::Cpu).unwrap();
    // 2 batches of 4 windows of 17 tokens a pass; 10 passes.
    let opts = DecoderTrainOptions { epochs: 10, ..options() };
    let mut ft = DecoderFineTune::new(&dir, &session, &text(2 * BATCH * (SEQ + 1) + 5), opts).unwrap();
    assert!(!ft.from_scratch());
    assert_eq!((ft.steps_per_epoch(), ft.total_steps()), (2, 20));
    let first_batch = ft.data().batch(0);
    assert_eq!(first_batch.len(), BATCH * (SEQ + 1));
    let mut start = Decoder::load(&dir, Device::Cpu, Precision::F32).unwrap();
    let want = host_loss(&mut start, &first_batch);

    let reports = ft.train(|_| {}).unwrap();
    assert_eq!(reports.len(), 20);
    let first = reports[0].loss as f64;
    assert!((first - want).abs() <= 1e-5 * want.abs(), "first loss {first}, host {want}");
    assert!(reports.iter().all(|r| r.loss.is_finite() && !r.skipped && r.grad_norm.is_some()));
    let losses: Vec<f32> = reports.iter().map(|r| r.loss).collect();
    let late = (losses[18] + losses[19]) / 2.0;
    assert!(late < 0.5 * losses[0], "the loss did not fall: {losses:?}");

    let out = tmp("cpu-out");
    ft.save(&out).unwrap();
    for f in ["config.json", "tokenizer.json", "generation_config.json", "model.safetensors"] {
        assert!(out.join(f).is_file(), "{f} not written");
    }
    let mut trained = Decoder::load(&out, Device::Cpu, Precision::F32).unwrap();
    let before = start.logits(&first_batch[..SEQ]).unwrap();
    let after = trained.logits(&first_batch[..SEQ]).unwrap();
    let moved: f32 = before.iter().zip(&after).map(|(a, b)| (a - b).abs()).sum::<f32>() / before.len() as f32;
    assert!(moved > 1e-2, "the saved model's logits did not move: {moved}");
    // The trained model predicts the text better than the start did.
    assert!(host_loss(&mut trained, &first_batch) < 0.5 * want);
    // The saved weights are the trainer's.
    let saved = rlx_models::SafetensorsFile::open(&out.join("model.safetensors")).unwrap();
    for (name, t) in ft.weights().unwrap() {
        let w = saved.load(&name, t.shape().dims(), Precision::F32).unwrap();
        assert_eq!(w, rlx_models::WeightData::F32(t.to_f32_vec()), "{name}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn a_resumed_run_ends_where_an_uninterrupted_one_does() {
    let dir = model_dir("llama", "resume");
    let text = text(2 * BATCH * (SEQ + 1));
    let opts = DecoderTrainOptions { shuffle_seed: Some(4), ..options() };
    let session = Session::new(Device::Cpu).unwrap();
    let mut whole = DecoderFineTune::new(&dir, &session, &text, opts.clone()).unwrap();
    let all = whole.train(|_| {}).unwrap();
    assert_eq!(all.len(), 6);

    let session = Session::new(Device::Cpu).unwrap();
    let mut first = DecoderFineTune::new(&dir, &session, &text, opts.clone()).unwrap();
    for k in 0..3 {
        let batch = first.data().batch(k);
        first.step(&batch).unwrap();
    }
    let ckpt = dir.join("ckpt.safetensors");
    first.save_checkpoint(&ckpt).unwrap();
    let session = Session::new(Device::Cpu).unwrap();
    let mut rest = DecoderFineTune::new(&dir, &session, &text, opts).unwrap();
    rest.resume(&ckpt).unwrap();
    assert_eq!(rest.steps(), 3);
    let tail = rest.train(|_| {}).unwrap();
    let losses: Vec<f32> = tail.iter().map(|r| r.loss).collect();
    let want: Vec<f32> = all[3..].iter().map(|r| r.loss).collect();
    assert_eq!(losses, want);
    assert_eq!(rest.weights().unwrap(), whole.weights().unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_folder_without_weights_trains_from_the_seeded_init() {
    let dir = tmp("scratch");
    std::fs::copy(Path::new(FIXTURE).join("llama/config.json"), dir.join("config.json")).unwrap();
    write_tokenizer(&dir);
    let session = Session::new(Device::Cpu).unwrap();
    let opts = DecoderTrainOptions { max_steps: Some(2), epochs: 1, init_seed: 11, ..options() };
    let mut ft = DecoderFineTune::new(&dir, &session, &text(BATCH * (SEQ + 1)), opts).unwrap();
    assert!(ft.from_scratch());
    assert_eq!((ft.steps_per_epoch(), ft.total_steps()), (1, 2));
    let w = ft.weights().unwrap();
    let get = |n: &str| w.iter().find(|(name, _)| name == n).unwrap().1.to_f32_vec();
    assert!(get("model.norm.weight").iter().all(|&x| x == 1.0));
    let e = get("model.embed_tokens.weight");
    let sd = (e.iter().map(|&x| (x as f64).powi(2)).sum::<f64>() / e.len() as f64).sqrt();
    assert!((sd - 0.02).abs() < 1e-3, "embedding std {sd}");
    // Near-zero logits: the first loss is about ln(vocab); max_steps runs over the one batch twice.
    let reports = ft.train(|_| {}).unwrap();
    assert_eq!(reports.len(), 2);
    assert!((reports[0].loss - (VOCAB as f32).ln()).abs() < 0.05, "{}", reports[0].loss);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Two steps on `device` follow the CPU's losses.
fn follows_the_cpu(device: Device) {
    let dir = model_dir("llama", &format!("dev-{device}"));
    let text = text(2 * BATCH * (SEQ + 1));
    let opts = DecoderTrainOptions { epochs: 1, ..options() };
    let cpu = Session::new(Device::Cpu).unwrap();
    let want = DecoderFineTune::new(&dir, &cpu, &text, opts.clone()).unwrap().train(|_| {}).unwrap();
    let Some(session) = rlx_test_support::open(device, "decoder training") else { return };
    let got = DecoderFineTune::new(&dir, &session, &text, opts).unwrap().train(|_| {}).unwrap();
    assert_eq!(got.len(), 2);
    for (g, w) in got.iter().zip(&want) {
        assert!((g.loss - w.loss).abs() <= 1e-4 * w.loss.abs(), "{device}: {} vs {}", g.loss, w.loss);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn training_on_vulkan() {
    follows_the_cpu(Device::Vulkan);
}

#[test]
fn training_on_wgpu() {
    follows_the_cpu(Device::Gpu);
}

fn err(dir: &Path, text: &str, opts: DecoderTrainOptions) -> String {
    let session = Session::new(Device::Cpu).unwrap();
    DecoderFineTune::new(dir, &session, text, opts).unwrap_err().to_string()
}

#[test]
fn bad_training_input_is_a_clear_error() {
    let dir = model_dir("llama", "errors");
    let long = text(2 * BATCH * (SEQ + 1));
    let e = err(&dir, &text(30), options());
    assert!(e.contains("30 token(s)") && e.contains("needs 68 tokens"), "{e}");
    let e = err(&dir, &long, DecoderTrainOptions { seq_len: 65, ..options() });
    assert!(e.contains("seq_len 65") && e.contains("max_position_embeddings 64"), "{e}");
    let e = err(&dir, &long, DecoderTrainOptions { precision: Precision::F16, ..options() });
    assert!(e.contains("f16"), "{e}");
    let e = err(&dir, &long, DecoderTrainOptions { lr: f32::NAN, ..options() });
    assert!(e.contains("NaN") || e.contains("rate"), "{e}");

    let session = Session::new(Device::Cpu).unwrap();
    let mut ft = DecoderFineTune::new(&dir, &session, &long, options()).unwrap();
    let e = ft.step(&[1, 2, 3]).unwrap_err().to_string();
    assert!(e.contains("4 windows of 17 tokens"), "{e}");
    let e = ft.step(&vec![300; BATCH * (SEQ + 1)]).unwrap_err().to_string();
    assert!(e.contains("300") && e.contains("256"), "{e}");

    std::fs::remove_file(dir.join("tokenizer.json")).unwrap();
    let e = err(&dir, &long, options());
    assert!(e.contains("no tokenizer.json"), "{e}");

    let moe = model_dir("qwen3_moe", "errors-moe");
    let e = err(&moe, &long, options());
    assert!(e.contains("mixture-of-experts"), "{e}");

    let quant = model_dir("llama", "errors-quant");
    let mut cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(quant.join("config.json")).unwrap()).unwrap();
    cfg["quantization_config"] = serde_json::json!({"quant_method": "bitsandbytes", "load_in_4bit": true});
    std::fs::write(quant.join("config.json"), cfg.to_string()).unwrap();
    let e = err(&quant, &long, options());
    assert!(e.contains("quantized"), "{e}");
    std::fs::write(
        quant.join("config.json"),
        r#"{"model_type": "mamba", "architectures": ["MambaForCausalLM"]}"#,
    )
    .unwrap();
    let e = err(&quant, &long, options());
    assert!(e.contains("Mamba"), "{e}");
    let gguf = quant.join("model.gguf");
    std::fs::write(&gguf, b"GGUF\x03\0\0\0").unwrap();
    let e = err(&gguf, &long, options());
    assert!(e.contains("GGUF"), "{e}");
    for d in [dir, moe, quant] {
        std::fs::remove_dir_all(d).unwrap();
    }
}
