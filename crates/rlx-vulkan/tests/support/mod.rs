//! Shared by the integration tests: device discovery with the skip/require policy, data, the
//! error measure and a plain CPU reference (f64 loops).
#![allow(dead_code)]

use rlx_vulkan::{Context, ContextOptions, MemoryStrategy};

/// Reports a missing device: a failure under RLX_REQUIRE_GPU=1, a loud skip otherwise.
pub fn no_device(reason: &str) {
    rlx_test_support::no_gpu("Vulkan device", reason);
}

/// Every usable device, plus — on a unified-memory device — the same device forced onto the
/// discrete-GPU memory strategy, so the staging paths run on lavapipe too. Empty (after a
/// loud skip) when there is no device.
pub fn contexts() -> Vec<Context> {
    let adapters = match rlx_vulkan::probe() {
        Ok(a) => a,
        Err(e) => {
            no_device(&e.to_string());
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for a in adapters.iter().filter(|a| a.is_usable()) {
        let ctx = Context::with_adapter(a.index).unwrap_or_else(|e| panic!("opening {}: {e}", a.summary()));
        let unified = ctx.memory_strategy() == MemoryStrategy::Unified;
        out.push(ctx);
        if unified {
            let forced = ContextOptions {
                adapter: Some(a.index),
                memory: Some(MemoryStrategy::Discrete),
                ..ContextOptions::default()
            };
            out.push(
                Context::with_options(forced).unwrap_or_else(|e| panic!("opening {}: {e}", a.summary())),
            );
        }
    }
    if out.is_empty() {
        no_device(&format!("no usable adapter among {} listed", adapters.len()));
    }
    out
}

/// Names a context in assertion messages.
pub fn tag(ctx: &Context) -> String {
    format!("{} ({:?})", ctx.info().name, ctx.memory_strategy())
}

/// Deterministic values in [lo, hi) (rlx-test-support's generator).
pub fn data(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    rlx_test_support::Rng::new(seed).uniform(n, lo, hi)
}

/// ‖out − ref‖₂ / ‖ref‖₂ over the finite elements (absolute ‖out − ref‖₂ when the reference
/// is all zeros). NaN where one side has a NaN the other lacks, infinite where one side has an
/// infinity the other lacks: both fail any bound.
pub fn rel_err(out: &[f32], reference: &[f64]) -> f64 {
    let out: Vec<f64> = out.iter().map(|&v| f64::from(v)).collect();
    rlx_test_support::rel_err(&out, reference)
}

/// Asserts the 1e-5 relative bound of DESIGN.md's numerics.
pub fn assert_close(what: &str, out: &[f32], reference: &[f64]) {
    let e = rel_err(out, reference);
    assert!(e <= 1e-5, "{what}: relative error {e:e} > 1e-5");
}

/// CPU reference of a 2-D matmul [m, k] × [k, n], in f64.
pub fn cpu_matmul(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(m * n);
    for i in 0..m {
        for j in 0..n {
            out.push((0..k).map(|l| a[i * k + l] as f64 * b[l * n + j] as f64).sum());
        }
    }
    out
}
