//! The tiny random-init Mamba-1 model (tests/fixtures/mamba, made by
//! scripts/make_mamba_fixture.py with transformers) on every available device: the logits of
//! the prompt within 1e-4 relative of transformers', prefixes of the prompt giving the same
//! rows, and the input and weight errors.
//!
//! A GPU device that cannot be opened skips loudly, unless RLX_REQUIRE_GPU=1 makes it fail.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
use rlx_models::{Device, Mamba, ModelError, SamplingSpec};
use rlx_test_support::rel_err_f32;
use std::path::PathBuf;
use support::device_tests;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mamba")
}

/// (prompt, vocab, logits [prompt.len(), vocab]).
fn reference() -> (Vec<i32>, usize, Vec<f64>) {
    let text = std::fs::read_to_string(dir().join("reference.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let prompt: Vec<i32> =
        doc["prompt"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap() as i32).collect();
    let vocab = doc["logits_shape"][1].as_u64().unwrap() as usize;
    let logits: Vec<f64> = doc["logits"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    assert_eq!(logits.len(), prompt.len() * vocab);
    (prompt, vocab, logits)
}

fn open(device: Device) -> Option<Mamba> {
    match Mamba::load(&dir(), device) {
        Ok(m) => Some(m),
        Err(ModelError::Runtime(e @ rlx_runtime::Error::DeviceUnavailable { .. })) => {
            rlx_test_support::unavailable(device, "mamba fixture", &e);
            None
        }
        Err(e) => panic!("loading the mamba fixture on {device}: {e}"),
    }
}

fn check(device: Device) {
    let (prompt, vocab, want) = reference();
    let Some(mut m) = open(device) else { return };
    assert_eq!(m.config().vocab_size, vocab);
    let got = m.logits(&prompt).unwrap();
    let err = rel_err_f32(&got, &want);
    assert!(err <= 1e-4, "{device}: logits relative error {err:e} > 1e-4");
    // A causal model: a prefix gives the reference's rows for that prefix.
    for len in [1, 7] {
        let got = m.logits(&prompt[..len]).unwrap();
        let err = rel_err_f32(&got, &want[..len * vocab]);
        assert!(err <= 1e-4, "{device}: prefix {len}: relative error {err:e}");
    }
    eprintln!("{device} mamba: logits rel err {err:.2e}");
}

device_tests!(check => mamba_matches_transformers_on_cpu, mamba_matches_transformers_on_vulkan, mamba_matches_transformers_on_wgpu);

#[test]
fn bad_input_and_missing_weights_are_named() {
    let mut m = Mamba::load(&dir(), Device::Cpu).unwrap();
    let e = m.logits(&[]).unwrap_err().to_string();
    assert!(e.contains("empty"), "{e}");
    let e = m.logits(&[3, 256]).unwrap_err().to_string();
    assert!(e.contains("256") && e.contains("position 1"), "{e}");
    // A checkpoint without lm_head.weight while the config says untied.
    let tmp = std::env::temp_dir().join(format!("rlx-mamba-missing-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::copy(dir().join("config.json"), tmp.join("config.json")).unwrap();
    let bytes = std::fs::read(dir().join("model.safetensors")).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let kept: Vec<_> = st.tensors().into_iter().filter(|(n, _)| n != "lm_head.weight").collect();
    std::fs::write(tmp.join("model.safetensors"), safetensors::serialize(kept, None).unwrap()).unwrap();
    let e = Mamba::load(&tmp, Device::Cpu).unwrap_err().to_string();
    assert!(e.contains("lm_head.weight") && e.contains("[256, 32]"), "{e}");
    let _ = std::fs::remove_dir_all(&tmp);
}

/// Through the `CausalLm` trait (what `rlx logits` and `rlx generate` use): the loader picks
/// Mamba from config.json, the logits are `Mamba::logits`', greedy generation takes the argmax
/// of the last row each step, and what Mamba does not do (f16, sampling) is refused.
#[test]
fn causal_lm_loads_mamba_and_generates_greedily() {
    let (prompt, vocab, _) = reference();
    let opts = rlx_models::DecoderOptions::default();
    let mut lm = rlx_models::load_causal_lm(&dir(), Device::Cpu, opts).unwrap();
    assert_eq!((lm.architecture(), lm.vocab_size(), lm.context_length()), ("MambaForCausalLM", vocab, None));
    let mut m = Mamba::load(&dir(), Device::Cpu).unwrap();
    assert_eq!(lm.logits(&prompt).unwrap(), m.logits(&prompt).unwrap());
    let mut seen = Vec::new();
    let greedy = SamplingSpec::greedy();
    let got = lm.generate(&prompt, 3, &greedy, 0, &mut |t| {
        seen.push(t);
        true
    });
    let got = got.unwrap();
    let mut ids = prompt.clone();
    for &t in &got {
        let logits = m.logits(&ids).unwrap();
        assert_eq!(t, rlx_models::decoder::argmax(&logits[(ids.len() - 1) * vocab..]));
        ids.push(t);
    }
    assert_eq!((got.len(), &seen), (3, &got));
    // on_token returning false stops after that token.
    assert_eq!(lm.generate(&prompt, 3, &greedy, 0, &mut |_| false).unwrap().len(), 1);
    let sampled = SamplingSpec { temperature: 0.7, ..SamplingSpec::greedy() };
    let e = lm.generate(&prompt, 3, &sampled, 0, &mut |_| true).unwrap_err().to_string();
    assert!(e.contains("greedily"), "{e}");
    let half = rlx_models::DecoderOptions { precision: rlx_models::Precision::F16, ..Default::default() };
    let e = rlx_models::load_causal_lm(&dir(), Device::Cpu, half).err().unwrap().to_string();
    assert!(e.contains("f32 only") && e.contains("config.json"), "{e}");
}
