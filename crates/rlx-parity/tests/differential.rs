//! Differential testing (issue 12 §2): random well-typed graphs through each device's full
//! pipeline, compared with the CPU reference run with every optimizer pass off.
//!
//! CI runs `RLX_DIFF_CASES` cases (default 48) from the fixed seed `RLX_DIFF_SEED` (default
//! 12), so a run is deterministic; the `diff` binary runs thousands. A device that cannot be
//! opened fails under `RLX_REQUIRE_GPU=1` and is skipped loudly otherwise.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use rlx_parity::diff::{failure_reason, failure_report, run_differential, tally_table, DiffConfig};
use rlx_parity::random_graph::GraphSpec;
use rlx_runtime::{Device, Session};
use std::io::Write as _;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The CPU (full pipeline against no passes) and every GPU device that opens.
fn devices() -> Vec<(Device, Session)> {
    let mut all = rlx_test_support::sessions(&[Device::Cpu], "differential");
    all.extend(rlx_test_support::sessions(&rlx_test_support::GPU_DEVICES, "differential"));
    all
}

#[test]
fn random_graphs_match_the_unoptimized_cpu_reference() {
    let cfg = DiffConfig {
        cases: env_or("RLX_DIFF_CASES", 48) as usize,
        seed: env_or("RLX_DIFF_SEED", 12),
        ..DiffConfig::default()
    };
    let devs = devices();
    let cpu = Session::new(Device::Cpu).unwrap();
    let refs: Vec<&Session> = devs.iter().map(|(_, s)| s).collect();
    let tallies = run_differential(&refs, &cpu, &cfg);
    let mut err = std::io::stderr();
    let _ = write!(err, "{}{}", failure_report(&tallies), tally_table(&tallies));
    for t in &tallies {
        assert_eq!(t.run, cfg.cases, "{}", t.device);
        assert_eq!(t.failed(), 0, "{}: {} of {} failed; minimal cases above", t.device, t.failed(), t.run);
        assert!(t.worst_ratio <= 1.0);
    }
}

#[test]
fn saved_regressions_pass_on_every_device() {
    let text = include_str!("diff_regressions.txt");
    let specs: Vec<GraphSpec> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| GraphSpec::parse(l).unwrap())
        .collect();
    assert!(!specs.is_empty());
    let cpu = Session::new(Device::Cpu).unwrap();
    let mut failed = Vec::new();
    for (device, session) in devices() {
        for spec in &specs {
            if let Some(why) = failure_reason(&session, &cpu, spec) {
                failed.push(format!("{device} {spec}: {why}"));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// The comparison can fail: a graph checked against a different graph's reference does.
#[test]
fn a_wrong_result_is_caught_and_shrunk() {
    use rlx_backend::{Tensor, TensorData};

    /// The first element of every f32 output moved by 1% of the output's norm: a relative
    /// error of about 1e-2, far past any case's bound.
    fn nudge(outs: &mut [Tensor]) {
        for t in outs {
            if let TensorData::F32(v) = t.data() {
                let mut v = v.clone();
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                if let Some(x) = v.first_mut() {
                    *x += 1e-2 * (1.0 + norm);
                }
                *t = Tensor::from_f32(t.dims(), v).unwrap();
            }
        }
    }
    let bad = Session::with_backend(Device::Cpu, Box::new(common::Altered::new("nudged", nudge)));
    let cpu = Session::new(Device::Cpu).unwrap();
    let cfg = DiffConfig { cases: 4, max_steps: 6, ..DiffConfig::default() };
    let tallies = run_differential(&[&bad], &cpu, &cfg);
    assert_eq!(tallies[0].run, 4);
    assert_eq!(tallies[0].mismatched, 4, "{}", tally_table(&tallies));
    let f = &tallies[0].failures[0];
    // Shrunk: never more steps than generated, and down to one step (any graph fails here).
    assert!(f.minimal.steps.len() <= f.original.steps.len());
    assert_eq!(f.minimal.steps.len(), 1, "{}", failure_report(&tallies));
    assert!(f.reason.contains("err"), "{}", f.reason);
    assert!(!f.dump.is_empty());
}
