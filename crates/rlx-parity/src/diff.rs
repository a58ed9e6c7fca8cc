//! Differential runs: random graphs ([`crate::random_graph`]) through the full pipeline of a
//! device (every optimizer pass on) against the CPU reference with every pass off, with
//! failing cases shrunk by proptest to a minimal spec.

use crate::random_graph::{build, spec_strategy, tolerance, GraphSpec};
use crate::runner::execute_with;
use crate::{compare_outputs_by, Case, CaseResult, ParityError};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use rlx_runtime::{PassOptions, Session};
use std::fmt::Write as _;

/// How many cases, from which seed.
#[derive(Clone, Copy, Debug)]
pub struct DiffConfig {
    pub cases: usize,
    pub seed: u64,
    /// Steps per graph, at most.
    pub max_steps: usize,
    /// Shrink steps per failure, at most (each one is a run on the device and the CPU).
    pub max_shrink: usize,
    /// Failures to shrink per device; later ones are counted and kept unshrunk.
    pub shrink_failures: usize,
}

impl Default for DiffConfig {
    fn default() -> Self {
        DiffConfig { cases: 64, seed: 12, max_steps: 12, max_shrink: 256, shrink_failures: 3 }
    }
}

/// A failing case: as generated and as shrunk, with why it fails and the minimal graph.
#[derive(Debug)]
pub struct DiffFailure {
    pub original: GraphSpec,
    pub minimal: GraphSpec,
    /// The comparison or the error of the minimal case.
    pub reason: String,
    /// `rlx_ir::dump` of the minimal graph.
    pub dump: String,
}

/// One device's tally.
#[derive(Debug)]
pub struct DeviceTally {
    pub device: String,
    pub run: usize,
    pub passed: usize,
    /// Wrong numbers.
    pub mismatched: usize,
    /// A compile or run error on the device (or the reference).
    pub errors: usize,
    /// The largest relative error among the passing cases, as a fraction of the case's bound.
    pub worst_ratio: f64,
    pub failures: Vec<DiffFailure>,
}

impl DeviceTally {
    pub fn failed(&self) -> usize {
        self.mismatched + self.errors
    }
}

/// The outcome of one spec on one device: `Ok` with the comparison, or the error.
pub fn check_spec(dev: &Session, cpu: &Session, spec: &GraphSpec) -> Result<CaseResult, ParityError> {
    let s = spec.clone();
    let case = Case::new(spec.case_name(), move |c| build(&s, c)).with_tol(tolerance(spec));
    let built =
        case.instantiate().map_err(|source| ParityError::Build { case: case.name.clone(), source })?;
    let got = execute_with(dev, &case, &built, PassOptions::default())?;
    let reference = execute_with(cpu, &case, &built, PassOptions::none())?;
    Ok(CaseResult {
        name: case.name.clone(),
        tol: case.tol,
        outputs: compare_outputs_by(&reference, &got, case.tol, case.metric),
    })
}

/// Why `spec` fails on `dev`, or `None` when it passes.
pub fn failure_reason(dev: &Session, cpu: &Session, spec: &GraphSpec) -> Option<String> {
    match check_spec(dev, cpu, spec) {
        Ok(r) if r.passed() => None,
        Ok(r) => Some(
            r.outputs
                .iter()
                .filter(|o| !o.passed)
                .map(|o| {
                    format!(
                        "output {} {}: err {:.3e} > tol {:.1e}{}",
                        o.index,
                        o.ty,
                        o.err,
                        r.tol,
                        o.note.as_deref().map(|n| format!(" ({n})")).unwrap_or_default()
                    )
                })
                .collect::<Vec<_>>()
                .join("; "),
        ),
        Err(e) => Some(e.to_string()),
    }
}

fn runner(seed: u64) -> TestRunner {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    TestRunner::new_with_rng(Config::default(), TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
}

/// `cfg.cases` random specs from `cfg.seed` (the same list on every machine).
pub fn generate(cfg: &DiffConfig) -> Vec<GraphSpec> {
    let mut r = runner(cfg.seed);
    let s = spec_strategy(cfg.max_steps);
    (0..cfg.cases).filter_map(|_| s.new_tree(&mut r).ok().map(|t| t.current())).collect()
}

/// Runs `cfg.cases` random specs on each device of `devices` against `cpu`; a failing case is
/// shrunk (proptest's simplify/complicate search) to a minimal spec that still fails there.
pub fn run_differential(devices: &[&Session], cpu: &Session, cfg: &DiffConfig) -> Vec<DeviceTally> {
    let mut tallies: Vec<DeviceTally> = devices
        .iter()
        .map(|d| DeviceTally {
            device: d.device().to_string(),
            run: 0,
            passed: 0,
            mismatched: 0,
            errors: 0,
            worst_ratio: 0.0,
            failures: Vec::new(),
        })
        .collect();
    let mut r = runner(cfg.seed);
    let strategy = spec_strategy(cfg.max_steps);
    for index in 0..cfg.cases {
        let Ok(tree) = strategy.new_tree(&mut r) else { continue };
        let spec = tree.current();
        for (dev, tally) in devices.iter().zip(&mut tallies) {
            tally.run += 1;
            let outcome = check_spec(dev, cpu, &spec);
            match &outcome {
                Ok(res) if res.passed() => {
                    tally.passed += 1;
                    tally.worst_ratio = tally.worst_ratio.max(res.worst() / res.tol);
                    continue;
                }
                Ok(_) => tally.mismatched += 1,
                Err(_) => tally.errors += 1,
            }
            let failure = if tally.failures.len() < cfg.shrink_failures {
                // Each device shrinks its own copy of the tree (a fresh draw of the same case).
                shrink(dev, cpu, &strategy, cfg.seed, index, cfg.max_shrink)
            } else {
                let reason = failure_reason(dev, cpu, &spec).unwrap_or_default();
                DiffFailure { original: spec.clone(), minimal: spec.clone(), reason, dump: String::new() }
            };
            tally.failures.push(failure);
        }
    }
    tallies
}

/// Shrinks case `index` of `seed` on `dev`. Its value tree is drawn again (the draws are
/// deterministic), so each failing device shrinks from the original case.
fn shrink(
    dev: &Session,
    cpu: &Session,
    strategy: &impl Strategy<Value = GraphSpec>,
    seed: u64,
    index: usize,
    max_shrink: usize,
) -> DiffFailure {
    let mut r = runner(seed);
    let mut tree = None;
    for _ in 0..=index {
        tree = strategy.new_tree(&mut r).ok();
    }
    let spec = tree.as_ref().map(|t| t.current()).unwrap_or_else(|| GraphSpec {
        dims: vec![1],
        steps: Vec::new(),
        outputs: 0,
    });
    let mut best = spec.clone();
    let mut reason = failure_reason(dev, cpu, &spec).unwrap_or_default();
    if let Some(mut tree) = tree {
        let mut budget = max_shrink;
        let mut more = tree.simplify();
        while more && budget > 0 {
            budget -= 1;
            let cand = tree.current();
            match failure_reason(dev, cpu, &cand) {
                Some(why) => {
                    best = cand;
                    reason = why;
                    more = tree.simplify();
                }
                None => more = tree.complicate(),
            }
        }
    }
    let mut c = crate::CaseCtx::new(&best.case_name());
    let dump = build(&best, &mut c)
        .and_then(|outs| c.finish(&outs))
        .map(|b| rlx_ir::dump(&b.graph))
        .unwrap_or_else(|e| format!("(does not build: {e})"));
    DiffFailure { original: spec, minimal: best, reason, dump }
}

/// The per-device table: device, run, passed, mismatched, errors, worst err/tol.
pub fn tally_table(tallies: &[DeviceTally]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<8} {:>7} {:>7} {:>10} {:>7} {:>13}",
        "device", "run", "passed", "mismatched", "errors", "worst err/tol"
    );
    for t in tallies {
        let _ = writeln!(
            s,
            "{:<8} {:>7} {:>7} {:>10} {:>7} {:>13.3}",
            t.device, t.run, t.passed, t.mismatched, t.errors, t.worst_ratio
        );
    }
    s
}

/// Each failure: the minimal spec (the line to add to `tests/diff_regressions.txt`), why, and
/// the minimal graph.
pub fn failure_report(tallies: &[DeviceTally]) -> String {
    let mut s = String::new();
    for t in tallies {
        for f in &t.failures {
            let _ = writeln!(s, "FAIL on {}: {}", t.device, f.reason);
            let _ = writeln!(s, "  generated: {}", f.original);
            let _ = writeln!(s, "  minimal:   {}", f.minimal);
            for line in f.dump.lines() {
                let _ = writeln!(s, "    {line}");
            }
        }
    }
    s
}
