//! LoRA fine-tuning of the tiny Llama fixture (`DecoderTrainOptions::lora`): the first step's
//! loss is the full fine-tune's (lora_B starts at zero), the loss falls on a repeated text, only
//! the targeted matrices change in the saved merged model (which `Decoder` loads and whose
//! logits give the loss the training graph computes), PEFT's adapter files hold the adapters,
//! a resumed run ends where an uninterrupted one does, Vulkan follows the CPU, and bad options
//! are clear errors.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rlx_models::{
    Decoder, DecoderFineTune, DecoderTrainOptions, Device, LoraOptions, Precision, SafetensorsFile,
    WeightData,
};
use rlx_runtime::Session;
#[path = "support/decoder_text.rs"]
mod decoder_text;
use decoder_text::*;
use std::path::Path;

const LAYERS: usize = 2;

fn options(lora: Option<LoraOptions>) -> DecoderTrainOptions {
    DecoderTrainOptions {
        batch_size: BATCH,
        seq_len: SEQ,
        max_steps: Some(16),
        lr: 1e-2,
        init_seed: 5,
        lora,
        ..DecoderTrainOptions::default()
    }
}

fn lora() -> Option<LoraOptions> {
    Some(LoraOptions::default())
}

fn f32s(file: &SafetensorsFile, name: &str, dims: &[usize]) -> Vec<f32> {
    match file.load(name, dims, Precision::F32).unwrap() {
        WeightData::F32(v) => v,
        other => panic!("{name}: {other:?}"),
    }
}

#[test]
fn lora_starts_at_the_base_model_and_its_loss_falls() {
    let dir = model_dir("llama", "start");
    let text = text(2 * BATCH * (SEQ + 1) + 5);
    let session = Session::new(Device::Cpu).unwrap();
    let mut full = DecoderFineTune::new(&dir, &session, &text, options(None)).unwrap();
    let mut ft = DecoderFineTune::new(&dir, &session, &text, options(lora())).unwrap();
    assert!(!ft.from_scratch());

    // The trainable weights are the adapters of q_proj and v_proj of each layer.
    let (opts, modules) = ft.lora_modules().unwrap();
    assert_eq!(opts, &LoraOptions::default());
    assert_eq!(modules.len(), 2 * LAYERS);
    assert_eq!(modules[0], "model.layers.0.self_attn.q_proj");
    assert_eq!(modules[1], "model.layers.0.self_attn.v_proj");
    let adapters = ft.weights().unwrap();
    let names: Vec<&str> = adapters.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names[..2],
        ["model.layers.0.self_attn.q_proj.lora_A.weight", "model.layers.0.self_attn.q_proj.lora_B.weight"]
    );
    assert_eq!(adapters.len(), 4 * LAYERS);
    // PEFT's init: lora_A ~ U(−1/√K, 1/√K) over K = hidden 64, lora_B zeros.
    let a = adapters[0].1.to_f32_vec();
    assert_eq!(adapters[0].1.dims(), &[8, 64]);
    assert_eq!(adapters[1].1.dims(), &[64, 8]);
    assert!(a.iter().all(|&x| x.abs() <= 0.125) && a.iter().any(|&x| x.abs() > 0.1), "{a:?}");
    let mean_sq = a.iter().map(|&x| x * x).sum::<f32>() / a.len() as f32;
    assert!((mean_sq - 0.125f32.powi(2) / 3.0).abs() < 1e-3, "U(-1/8, 1/8) has mean square 1/192: {mean_sq}");
    assert!(adapters[1].1.to_f32_vec().iter().all(|&x| x == 0.0));
    let v_proj_a = adapters[2].1.to_f32_vec();
    assert_ne!(a, v_proj_a, "each adapter has its own seed");
    let (trained, total) = ft.parameter_counts();
    // Per adapted linear: r·K + N·r, with q_proj [64, 64] and v_proj [32, 64].
    assert_eq!(trained, LAYERS * (8 * 64 + 64 * 8 + 8 * 64 + 32 * 8));
    assert_eq!(total, full.parameter_counts().1 + trained);

    // B = 0: the first step's loss is the base model's.
    let batch = ft.data().batch(0);
    let base_loss = full.step(&batch).unwrap().loss;
    let reports = ft.train(|_| {}).unwrap();
    assert_eq!(reports.len(), 16);
    let first = reports[0].loss;
    assert!(
        (first - base_loss).abs() <= 1e-6 * base_loss.abs(),
        "LoRA's first loss {first}, full {base_loss}"
    );
    assert!(reports.iter().all(|r| r.loss.is_finite() && !r.skipped));
    let losses: Vec<f32> = reports.iter().map(|r| r.loss).collect();
    let late = (losses[14] + losses[15]) / 2.0;
    assert!(late < 0.8 * losses[0], "the loss did not fall: {losses:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_saved_model_is_merged_and_only_the_targets_changed() {
    let dir = model_dir("llama", "save");
    let text = text(2 * BATCH * (SEQ + 1));
    let session = Session::new(Device::Cpu).unwrap();
    let targets = vec!["q_proj".to_string(), "down_proj".to_string()];
    let lora = LoraOptions { rank: 4, alpha: 8.0, targets: targets.clone() };
    let opts = DecoderTrainOptions { max_steps: Some(6), weight_decay: 0.1, ..options(Some(lora)) };
    let mut ft = DecoderFineTune::new(&dir, &session, &text, opts).unwrap();
    ft.train(|_| {}).unwrap();
    let out = tmp("save-out");
    ft.save(&out).unwrap();
    for f in [
        "config.json",
        "tokenizer.json",
        "model.safetensors",
        "adapter_model.safetensors",
        "adapter_config.json",
    ] {
        assert!(out.join(f).is_file(), "{f} not written");
    }

    // Bit-identical to the source except the targeted matrices, which moved.
    let source = SafetensorsFile::open(&dir.join("model.safetensors")).unwrap();
    let saved = SafetensorsFile::open(&out.join("model.safetensors")).unwrap();
    let mut names = saved.names();
    names.sort();
    let mut want_names = source.names();
    want_names.sort();
    assert_eq!(names, want_names);
    let merged = ft.merged_weights().unwrap();
    assert_eq!(merged.len(), names.len());
    let mut changed = Vec::new();
    for (name, t) in &merged {
        let (before, after) = (f32s(&source, name, t.dims()), f32s(&saved, name, t.dims()));
        assert_eq!(after, t.to_f32_vec(), "{name}: the saved weight is not merged_weights'");
        let targeted = name.ends_with("q_proj.weight") || name.ends_with("down_proj.weight");
        if targeted {
            assert_ne!(before, after, "{name} did not change");
            changed.push(name.clone());
        } else {
            assert!(before.iter().zip(&after).all(|(a, b)| a.to_bits() == b.to_bits()), "{name} changed");
        }
    }
    assert_eq!(changed.len(), 2 * LAYERS);

    // PEFT's adapter file: the adapters under base_model.model.<module>, and W + (8/4)·B·A is the
    // merged weight.
    let adapter = SafetensorsFile::open(&out.join("adapter_model.safetensors")).unwrap();
    assert_eq!(adapter.names().len(), 4 * LAYERS);
    let module = "model.layers.1.mlp.down_proj";
    let a = f32s(&adapter, &format!("base_model.model.{module}.lora_A.weight"), &[4, 128]);
    let b = f32s(&adapter, &format!("base_model.model.{module}.lora_B.weight"), &[64, 4]);
    assert!(b.iter().any(|&x| x != 0.0), "lora_B did not train");
    let w = f32s(&source, &format!("{module}.weight"), &[64, 128]);
    let got = f32s(&saved, &format!("{module}.weight"), &[64, 128]);
    for n in 0..64 {
        for k in 0..128 {
            let ba: f64 = (0..4).map(|i| f64::from(b[n * 4 + i]) * f64::from(a[i * 128 + k])).sum();
            let want = f64::from(w[n * 128 + k]) + 2.0 * ba;
            assert!((f64::from(got[n * 128 + k]) - want).abs() < 1e-6, "{module}[{n}, {k}]");
        }
    }
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("adapter_config.json")).unwrap()).unwrap();
    assert_eq!(config["peft_type"], "LORA");
    assert_eq!(config["r"], 4);
    assert_eq!(config["lora_alpha"], 8.0);
    assert_eq!(config["target_modules"], serde_json::json!(targets));
    let base = config["base_model_name_or_path"].as_str().unwrap();
    assert_eq!(Path::new(base).canonicalize().unwrap(), dir.canonicalize().unwrap());

    // Decoder loads the merged folder; its loss on a batch is the one the training graph
    // reports for its next step (computed before that step's update), and not the base's.
    let batch = ft.data().batch(0);
    let mut trained = Decoder::load(&out, Device::Cpu, Precision::F32).unwrap();
    let mut start = Decoder::load(&dir, Device::Cpu, Precision::F32).unwrap();
    let host = host_loss(&mut trained, &batch);
    let graph = f64::from(ft.step(&batch).unwrap().loss);
    assert!((host - graph).abs() <= 1e-5 * graph, "Decoder {host}, training graph {graph}");
    let base = host_loss(&mut start, &batch);
    assert!(host < base - 1e-2, "trained {host}, base {base}");

    // Saving into the base folder would replace the weights the adapter applies to.
    let e = ft.save(&dir).unwrap_err().to_string();
    assert!(e.contains("base model folder") && e.contains("another folder"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn a_resumed_lora_run_ends_where_an_uninterrupted_one_does() {
    let dir = model_dir("llama", "resume");
    let text = text(2 * BATCH * (SEQ + 1));
    let opts = DecoderTrainOptions { max_steps: Some(6), shuffle_seed: Some(3), ..options(lora()) };
    let session = Session::new(Device::Cpu).unwrap();
    let mut whole = DecoderFineTune::new(&dir, &session, &text, opts.clone()).unwrap();
    let all = whole.train(|_| {}).unwrap();
    let mut first = DecoderFineTune::new(&dir, &session, &text, opts.clone()).unwrap();
    for k in 0..3 {
        let batch = first.data().batch(k);
        first.step(&batch).unwrap();
    }
    let ckpt = dir.join("ckpt.safetensors");
    first.save_checkpoint(&ckpt).unwrap();
    let mut rest = DecoderFineTune::new(&dir, &session, &text, opts).unwrap();
    rest.resume(&ckpt).unwrap();
    assert_eq!(rest.steps(), 3);
    let tail: Vec<f32> = rest.train(|_| {}).unwrap().iter().map(|r| r.loss).collect();
    let want: Vec<f32> = all[3..].iter().map(|r| r.loss).collect();
    assert_eq!(tail, want);
    assert_eq!(rest.weights().unwrap(), whole.weights().unwrap());
    // A full fine-tune cannot resume a LoRA checkpoint: its weights are not there.
    let mut full = DecoderFineTune::new(&dir, &session, &text, options(None)).unwrap();
    assert!(full.resume(&ckpt).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn lora_on_vulkan_follows_the_cpu() {
    let dir = model_dir("llama", "vulkan");
    let text = text(2 * BATCH * (SEQ + 1));
    let opts = DecoderTrainOptions { max_steps: Some(3), ..options(lora()) };
    let cpu = Session::new(Device::Cpu).unwrap();
    let want = DecoderFineTune::new(&dir, &cpu, &text, opts.clone()).unwrap().train(|_| {}).unwrap();
    let Some(session) = rlx_test_support::open(Device::Vulkan, "LoRA training") else { return };
    let got = DecoderFineTune::new(&dir, &session, &text, opts).unwrap().train(|_| {}).unwrap();
    assert_eq!(got.len(), 3);
    for (g, w) in got.iter().zip(&want) {
        assert!((g.loss - w.loss).abs() <= 1e-4 * w.loss.abs(), "vulkan {} vs cpu {}", g.loss, w.loss);
    }
    assert!(got[2].loss < got[0].loss, "{got:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn err(dir: &Path, lora: LoraOptions) -> String {
    let session = Session::new(Device::Cpu).unwrap();
    let text = text(2 * BATCH * (SEQ + 1));
    DecoderFineTune::new(dir, &session, &text, options(Some(lora))).unwrap_err().to_string()
}

#[test]
fn bad_lora_options_are_clear_errors() {
    let dir = model_dir("llama", "errors");
    let e = err(&dir, LoraOptions { rank: 0, ..LoraOptions::default() });
    assert!(e.contains("rank 0"), "{e}");
    let e = err(&dir, LoraOptions { alpha: f32::NAN, ..LoraOptions::default() });
    assert!(e.contains("alpha"), "{e}");
    let e = err(&dir, LoraOptions { targets: vec![], ..LoraOptions::default() });
    assert!(e.contains("target"), "{e}");
    let e =
        err(&dir, LoraOptions { targets: vec!["q_proj".into(), "c_attn".into()], ..LoraOptions::default() });
    assert!(e.contains("'c_attn'"), "{e}");
    for linear in ["down_proj", "gate_proj", "k_proj", "lm_head", "o_proj", "q_proj", "up_proj", "v_proj"] {
        assert!(e.contains(linear), "{linear} not named in: {e}");
    }
    assert!(!e.contains("embed_tokens"), "{e}");

    // No weights: LoRA cannot start from scratch.
    std::fs::remove_file(dir.join("model.safetensors")).unwrap();
    let e = err(&dir, LoraOptions::default());
    assert!(e.contains("no model.safetensors") && e.contains("drop --lora-rank"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
