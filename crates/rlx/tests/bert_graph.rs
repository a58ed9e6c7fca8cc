//! The `rlx bench` BERT builder: shapes, param naming, and the same numbers on every available
//! device as on the CPU (a small configuration; the benchmark runs BERT-base).

#[path = "../src/cli/bert_graph.rs"]
mod bert_graph;

use bert_graph::{bert_encoder, set_params, uniform, BertConfig};
use rlx::prelude::*;

fn small() -> BertConfig {
    BertConfig { layers: 2, hidden: 12, heads: 3, ffn: 20, batch: 2, seq: 5 }
}

fn run(device: Device, cfg: &BertConfig) -> Result<Vec<f32>, rlx::Error> {
    let g = bert_encoder(cfg)?;
    let mut exe = Session::new(device)?.compile(&g)?;
    set_params(&mut exe, &g)?;
    let x = uniform(cfg.tokens() * cfg.hidden, 11, 1.0);
    Ok(exe.run(&[("x", &x)])?.remove(0).to_f32_vec())
}

#[test]
fn graph_has_the_expected_signature() {
    let cfg = small();
    let g = bert_encoder(&cfg).unwrap();
    let inputs = g.inputs();
    assert_eq!(inputs.len(), 1);
    assert_eq!(inputs[0].2.shape.dims(), &[10, 12]);
    // Per layer: 6 linears × (weight, bias) + 2 norms × (gamma, beta).
    assert_eq!(g.params().len(), cfg.layers * 16);
    assert!(g.params().iter().any(|(n, _, t)| *n == "layer1.ffn.up.weight" && t.shape.dims() == [20, 12]));
    assert_eq!(g.ty(g.outputs()[0]).unwrap().shape.dims(), &[10, 12]);
}

#[test]
fn every_available_device_matches_the_cpu() {
    let cfg = small();
    let reference = run(Device::Cpu, &cfg).unwrap();
    assert!(reference.iter().all(|v| v.is_finite()));
    // Post-norm with gamma ≈ 1 and beta ≈ 0: each output row has mean ≈ 0 and rms ≈ 1.
    let row = &reference[..cfg.hidden];
    let rms = (row.iter().map(|v| v * v).sum::<f32>() / cfg.hidden as f32).sqrt();
    assert!((0.8..1.2).contains(&rms), "rms {rms}");
    match run(Device::Vulkan, &cfg) {
        Ok(out) => {
            let num: f64 = out.iter().zip(&reference).map(|(a, b)| ((a - b) as f64).powi(2)).sum();
            let den: f64 = reference.iter().map(|b| (*b as f64).powi(2)).sum();
            let err = (num / den).sqrt();
            assert!(err <= 1e-5, "vulkan vs cpu: relative error {err:e}");
        }
        Err(rlx::Error::DeviceUnavailable { reason, .. }) => {
            assert!(std::env::var("RLX_REQUIRE_GPU").as_deref() != Ok("1"), "RLX_REQUIRE_GPU=1: {reason}");
            eprintln!("SKIPPED: vulkan unavailable: {reason}");
        }
        Err(e) => panic!("vulkan: {e}"),
    }
}
