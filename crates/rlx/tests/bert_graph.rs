//! The `rlx bench` BERT workload (rlx-models' encoder stack with random weights): shapes,
//! param naming, and the same numbers on every available device as on the CPU (a small
//! configuration; the benchmark runs BERT-base).

// Test helpers unwrap: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rlx::prelude::*;
use rlx_models::random::set_random_params;
use rlx_models::{encoder_graph, BertConfig};
use rlx_test_support::{sessions, uniform, GPU_DEVICES};

const BATCH: usize = 2;
const SEQ: usize = 5;

fn small() -> BertConfig {
    BertConfig {
        num_hidden_layers: 2,
        hidden_size: 12,
        num_attention_heads: 3,
        intermediate_size: 20,
        ..BertConfig::base()
    }
}

fn run(session: &Session, cfg: &BertConfig) -> Result<Vec<f32>, rlx::Error> {
    let g = encoder_graph(cfg, BATCH, SEQ)?;
    let mut exe = session.compile(&g)?;
    set_random_params(&mut exe, &g, 1000)?;
    let x = uniform(BATCH * SEQ * cfg.hidden_size, 11, 1.0);
    Ok(exe.run(&[("x", &x)])?.remove(0).to_f32_vec())
}

#[test]
fn graph_has_the_expected_signature() {
    let cfg = small();
    let g = encoder_graph(&cfg, BATCH, SEQ).unwrap();
    let inputs = g.inputs();
    assert_eq!(inputs.len(), 1);
    assert_eq!(inputs[0].2.shape.dims(), &[10, 12]);
    // Per layer: 6 linears × (weight, bias) + 2 norms × (gamma, beta).
    assert_eq!(g.params().len(), cfg.num_hidden_layers * 16);
    assert!(g
        .params()
        .iter()
        .any(|(n, _, t)| *n == "encoder.layer.1.intermediate.dense.weight" && t.shape.dims() == [20, 12]));
    assert_eq!(g.ty(g.outputs()[0]).unwrap().shape.dims(), &[10, 12]);
}

#[test]
fn every_available_device_matches_the_cpu() {
    let cfg = small();
    let cpu = Session::new(Device::Cpu).unwrap();
    let reference = run(&cpu, &cfg).unwrap();
    assert!(reference.iter().all(|v| v.is_finite()));
    // Post-norm with gamma ≈ 1 and beta ≈ 0: each output row has mean ≈ 0 and rms ≈ 1.
    let row = &reference[..cfg.hidden_size];
    let rms = (row.iter().map(|v| v * v).sum::<f32>() / cfg.hidden_size as f32).sqrt();
    assert!((0.8..1.2).contains(&rms), "rms {rms}");
    for (device, session) in sessions(&GPU_DEVICES, "BERT encoder vs the CPU") {
        let out = run(&session, &cfg).unwrap_or_else(|e| panic!("{device}: {e}"));
        let num: f64 = out.iter().zip(&reference).map(|(a, b)| ((a - b) as f64).powi(2)).sum();
        let den: f64 = reference.iter().map(|b| (*b as f64).powi(2)).sum();
        let err = (num / den).sqrt();
        assert!(err <= 1e-5, "{device} vs cpu: relative error {err:e}");
    }
}
