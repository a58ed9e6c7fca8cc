//! The Qwen3-MoE fixture (tests/fixtures/decoders/qwen3_moe, saved by transformers 5 with one
//! tensor per expert) beyond the shared fixture test: the same checkpoint with its experts fused
//! (transformers 5's in-memory layout, `mlp.experts.gate_up_proj` [E, 2I, H] and
//! `mlp.experts.down_proj` [E, H, I]) gives the same logits; f16 and mixed precision stay close
//! to transformers' f32 logits on every device; a missing expert tensor is an error naming it.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rlx_test_support::rel_err_f32;

use rlx_models::{Decoder, Device, ModelError, Precision};
use safetensors::tensor::TensorView;
use safetensors::{Dtype, SafeTensors};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

type Tensors = BTreeMap<String, (Dtype, Vec<usize>, Vec<u8>)>;

const EXPERTS: usize = 8;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/decoders/qwen3_moe")
}

fn read_tensors(path: &Path) -> Tensors {
    let bytes = std::fs::read(path).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    st.tensors().into_iter().map(|(n, v)| (n, (v.dtype(), v.shape().to_vec(), v.data().to_vec()))).collect()
}

/// A temp dir with the fixture's config.json and its tensors after `edit`.
fn edited(tag: &str, edit: impl FnOnce(&mut Tensors)) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rlx-moe-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(fixture().join("config.json"), dir.join("config.json")).unwrap();
    let mut t = read_tensors(&fixture().join("model.safetensors"));
    edit(&mut t);
    let views: Vec<(String, TensorView<'_>)> =
        t.iter().map(|(n, (d, s, b))| (n.clone(), TensorView::new(*d, s.clone(), b).unwrap())).collect();
    std::fs::write(dir.join("model.safetensors"), safetensors::serialize(views, None).unwrap()).unwrap();
    dir
}

/// Per-expert tensors → transformers 5's fused ones, for every layer with experts.
fn fuse(t: &mut Tensors) {
    for layer in [0, 2] {
        let p = format!("model.layers.{layer}.mlp.experts");
        let take =
            |t: &mut Tensors, j: usize, part: &str| t.remove(&format!("{p}.{j}.{part}.weight")).unwrap();
        let (mut gate_up, mut down) = (Vec::new(), Vec::new());
        let (mut gu_shape, mut d_shape) = (vec![], vec![]);
        for j in 0..EXPERTS {
            let (_, gs, g) = take(t, j, "gate_proj");
            let (_, _, u) = take(t, j, "up_proj");
            let (_, ds, d) = take(t, j, "down_proj");
            gate_up.extend(g);
            gate_up.extend(u);
            down.extend(d);
            gu_shape = vec![EXPERTS, 2 * gs[0], gs[1]];
            d_shape = vec![EXPERTS, ds[0], ds[1]];
        }
        t.insert(format!("{p}.gate_up_proj"), (Dtype::F32, gu_shape, gate_up));
        t.insert(format!("{p}.down_proj"), (Dtype::F32, d_shape, down));
    }
}

fn reference() -> (Vec<i32>, Vec<f64>) {
    let text = std::fs::read_to_string(fixture().join("reference.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let prompt = doc["prompt"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap() as i32).collect();
    let logits = doc["logits"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    (prompt, logits)
}

#[test]
fn fused_experts_load_like_per_expert_ones() {
    let dir = edited("fused", fuse);
    let names = read_tensors(&dir.join("model.safetensors"));
    assert!(names.contains_key("model.layers.2.mlp.experts.gate_up_proj"));
    assert!(!names.keys().any(|n| n.contains("experts.0.")));
    let (prompt, want) = reference();
    let mut dec = Decoder::load(&dir, Device::Cpu, Precision::F32).unwrap();
    let err = rel_err_f32(&dec.logits(&prompt).unwrap(), &want);
    assert!(err <= 1e-4, "fused experts: logits relative error {err:e}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_missing_expert_tensor_is_named() {
    let dir = edited("missing", |t| {
        t.remove("model.layers.2.mlp.experts.5.up_proj.weight").unwrap();
    });
    let e = Decoder::load(&dir, Device::Cpu, Precision::F32).unwrap_err();
    assert!(matches!(e, ModelError::MissingTensor { .. }), "{e}");
    assert!(e.to_string().contains("model.layers.2.mlp.experts.5.up_proj.weight"), "{e}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn half_precisions_stay_close_on_every_device() {
    let (prompt, want) = reference();
    for device in [Device::Cpu, Device::Vulkan, Device::Gpu] {
        for precision in [Precision::Mixed, Precision::F16] {
            let mut dec = match Decoder::load(&fixture(), device, precision) {
                Ok(d) => d,
                Err(ModelError::Runtime(e @ rlx_runtime::Error::DeviceUnavailable { .. })) => {
                    rlx_test_support::unavailable(device, "qwen3_moe at half precision", &e);
                    break;
                }
                Err(e) => panic!("{device} {precision:?}: {e}"),
            };
            let err = rel_err_f32(&dec.logits(&prompt).unwrap(), &want);
            eprintln!("{device} {precision:?}: logits relative error {err:.2e}");
            assert!(err <= 5e-3, "{device} {precision:?}: logits relative error {err:e}");
            let greedy = dec.generate_greedy(&prompt, 4).unwrap();
            let recomputed = dec.generate_greedy_recompute(&prompt, 4).unwrap();
            assert_eq!(greedy, recomputed, "{device} {precision:?}: cached and recomputed tokens");
        }
    }
}
