//! Decoder checkpoints that are wrong on purpose (a tensor missing or misshapen, a broken shard
//! index), checkpoints in F16/BF16, and inputs the decoder must refuse; all on the CPU, from
//! copies of the fixtures in tests/fixtures/decoders/ edited here.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rlx_test_support::rel_err_f32;

use half::{bf16, f16};
use rlx_models::Checkpoint;
use rlx_models::{Decoder, Device, ModelError, Precision};
use safetensors::tensor::TensorView;
use safetensors::{Dtype, SafeTensors};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// name → (dtype, shape, little-endian bytes).
type Tensors = BTreeMap<String, (Dtype, Vec<usize>, Vec<u8>)>;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/decoders").join(name)
}

fn read_tensors(path: &Path) -> Tensors {
    let bytes = std::fs::read(path).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    st.tensors().into_iter().map(|(n, v)| (n, (v.dtype(), v.shape().to_vec(), v.data().to_vec()))).collect()
}

fn write_tensors(path: &Path, t: &Tensors) {
    let views: Vec<(String, TensorView<'_>)> =
        t.iter().map(|(n, (d, s, b))| (n.clone(), TensorView::new(*d, s.clone(), b).unwrap())).collect();
    std::fs::write(path, safetensors::serialize(views, None).unwrap()).unwrap();
}

/// A fresh temp dir holding fixture `name`'s config.json and, edited by `edit`, its tensors as
/// one model.safetensors.
fn edited(name: &str, tag: &str, edit: impl FnOnce(&mut Tensors)) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rlx-decoder-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(fixture(name).join("config.json"), dir.join("config.json")).unwrap();
    let mut t = read_tensors(&fixture(name).join("model.safetensors"));
    edit(&mut t);
    write_tensors(&dir.join("model.safetensors"), &t);
    dir
}

fn load_err(dir: &Path) -> ModelError {
    Decoder::load(dir, Device::Cpu, Precision::F32).unwrap_err()
}

fn reference_logits(name: &str) -> (Vec<i32>, Vec<f64>) {
    let text = std::fs::read_to_string(fixture(name).join("reference.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let prompt = doc["prompt"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap() as i32).collect();
    let logits = doc["logits"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    (prompt, logits)
}

#[test]
fn a_missing_tensor_is_named_with_its_shape() {
    let dir = edited("llama", "missing", |t| {
        t.remove("model.layers.1.mlp.up_proj.weight");
    });
    let e = load_err(&dir);
    assert!(matches!(e, ModelError::MissingTensor { .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("model.layers.1.mlp.up_proj.weight") && msg.contains("[128, 64]"), "{msg}");
}

#[test]
fn an_untied_model_needs_lm_head_and_a_tied_one_ignores_it() {
    let dir = edited("llama", "no-lm-head", |t| {
        t.remove("lm_head.weight");
    });
    let msg = load_err(&dir).to_string();
    assert!(msg.contains("lm_head.weight") && msg.contains("[256, 64]"), "{msg}");

    // qwen3 ties: its file has no lm_head, and a stray one of the wrong shape is not read.
    let dir = edited("qwen3", "stray-lm-head", |t| {
        t.insert("lm_head.weight".into(), (Dtype::F32, vec![1], vec![0; 4]));
    });
    let (prompt, want) = reference_logits("qwen3");
    let got = Decoder::load(&dir, Device::Cpu, Precision::F32).unwrap().logits(&prompt).unwrap();
    assert!(rel_err_f32(&got, &want) <= 1e-4);
}

#[test]
fn a_misshapen_tensor_names_both_shapes() {
    let dir = edited("qwen3", "shape", |t| {
        // k_proj of a model whose head_dim were hidden / heads = 16 rather than 32.
        t.insert(
            "model.layers.0.self_attn.k_proj.weight".into(),
            (Dtype::F32, vec![32, 64], vec![0; 32 * 64 * 4]),
        );
    });
    let e = load_err(&dir);
    assert!(matches!(e, ModelError::WrongShape { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("model.layers.0.self_attn.k_proj.weight")
            && msg.contains("[32, 64]")
            && msg.contains("[64, 64]"),
        "{msg}"
    );
    let dir = edited("qwen3", "norm-shape", |t| {
        t.insert("model.layers.1.self_attn.q_norm.weight".into(), (Dtype::F32, vec![16], vec![0; 64]));
    });
    let msg = load_err(&dir).to_string();
    assert!(msg.contains("q_norm.weight") && msg.contains("[16]") && msg.contains("[32]"), "{msg}");
}

#[test]
fn other_dtypes_load() {
    let (prompt, want) = reference_logits("mistral");
    for (tag, dtype) in [("f16", Dtype::F16), ("bf16", Dtype::BF16)] {
        let dir = edited("mistral", tag, |t| {
            for (d, _, bytes) in t.values_mut() {
                let floats = bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]));
                *bytes = match dtype {
                    Dtype::F16 => floats.flat_map(|v| f16::from_f32(v).to_le_bytes()).collect(),
                    _ => floats.flat_map(|v| bf16::from_f32(v).to_le_bytes()).collect(),
                };
                *d = dtype;
            }
        });
        let got = Decoder::load(&dir, Device::Cpu, Precision::F32).unwrap().logits(&prompt).unwrap();
        let err = rel_err_f32(&got, &want);
        // The weights themselves were rounded: bf16 keeps 8 bits, f16 11.
        let bound = if dtype == Dtype::F16 { 3e-3 } else { 2e-2 };
        assert!(err <= bound, "{tag}: relative error {err:e}");
        eprintln!("{tag} checkpoint: logits relative error {err:.2e}");
    }
    // f16 weights on the device (Precision::F16) from the f32 file.
    let mut dec = Decoder::load(&fixture("mistral"), Device::Cpu, Precision::F16).unwrap();
    let err = rel_err_f32(&dec.logits(&prompt).unwrap(), &want);
    assert!(err <= 5e-3, "Precision::F16: relative error {err:e}");
    eprintln!("Precision::F16: logits relative error {err:.2e}");
}

#[test]
fn shard_index_problems_are_errors() {
    let src = fixture("qwen2");
    let ck = Checkpoint::open(&src).unwrap();
    assert_eq!(ck.file_count(), 4);
    assert!(ck.contains("model.layers.1.self_attn.q_proj.bias") && !ck.contains("lm_head.weight"));

    let copy = |tag: &str| {
        let dir = std::env::temp_dir().join(format!("rlx-decoder-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for entry in std::fs::read_dir(&src).unwrap() {
            let p = entry.unwrap().path();
            std::fs::copy(&p, dir.join(p.file_name().unwrap())).unwrap();
        }
        dir
    };
    let edit_index = |dir: &Path, edit: &dyn Fn(&mut serde_json::Value)| {
        let path = dir.join("model.safetensors.index.json");
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        edit(&mut v);
        std::fs::write(&path, v.to_string()).unwrap();
    };

    // The index names a shard for a tensor that shard lacks.
    let dir = copy("index-wrong-shard");
    edit_index(&dir, &|v| {
        v["weight_map"]["model.norm.weight"] = "model-00001-of-00004.safetensors".into();
        v["weight_map"]["model.embed_tokens.weight"] = "model-00004-of-00004.safetensors".into();
    });
    let msg = load_err(&dir).to_string();
    assert!(msg.contains("no such tensor") && msg.contains("model-0000"), "{msg}");

    // A shard path leaving the directory.
    let dir = copy("index-path");
    edit_index(&dir, &|v| v["weight_map"]["model.norm.weight"] = "../model.safetensors".into());
    let msg = load_err(&dir).to_string();
    assert!(msg.contains("weight_map.model.norm.weight") && msg.contains("../model.safetensors"), "{msg}");

    // A tensor the index does not list at all.
    let dir = copy("index-missing");
    edit_index(&dir, &|v| {
        v["weight_map"].as_object_mut().unwrap().remove("model.layers.0.self_attn.k_proj.bias");
    });
    let e = load_err(&dir);
    assert!(matches!(e, ModelError::MissingTensor { .. }) && e.to_string().contains("k_proj.bias"), "{e}");

    // A shard file gone.
    let dir = copy("shard-gone");
    std::fs::remove_file(dir.join("model-00002-of-00004.safetensors")).unwrap();
    let msg = load_err(&dir).to_string();
    assert!(msg.contains("model-00002-of-00004.safetensors"), "{msg}");

    // No weights at all.
    let dir = std::env::temp_dir().join(format!("rlx-decoder-empty-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(src.join("config.json"), dir.join("config.json")).unwrap();
    let msg = load_err(&dir).to_string();
    assert!(msg.contains("model.safetensors.index.json"), "{msg}");
}

#[test]
fn bad_inputs_are_refused() {
    let mut dec = Decoder::load(&fixture("llama"), Device::Cpu, Precision::F32).unwrap();
    let cases: [(&[i32], &str); 4] = [
        (&[], "empty"),
        (&[1, 2, 256], "token id 256 at position 2"),
        (&[-1], "token id -1 at position 0"),
        (&[3; 65], "65 tokens"),
    ];
    for (ids, needle) in cases {
        let e = dec.logits(ids).unwrap_err();
        assert!(matches!(e, ModelError::InvalidInput { .. }) && e.to_string().contains(needle), "{e}");
        let e = dec.generate_greedy(ids, 1).unwrap_err();
        assert!(e.to_string().contains(needle), "{e}");
    }
    // 60 + 5 − 1 = 64 positions fit; one more token does not.
    assert_eq!(dec.generate_greedy(&[3; 60], 5).unwrap().len(), 5);
    let msg = dec.generate_greedy(&[3; 60], 6).unwrap_err().to_string();
    assert!(msg.contains("room for 5 new ones"), "{msg}");
    assert!(dec.generate_greedy(&[3; 64], 0).unwrap().is_empty());
}
