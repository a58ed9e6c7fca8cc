//! Shared by the integration tests: device discovery with the skip/require policy, data, the
//! error measure and a plain CPU reference (f64 loops).
#![allow(dead_code)]

use rlx_vulkan::{Context, ContextOptions, MemoryStrategy};
use std::io::Write as _;

/// True when a missing device must fail the test instead of skipping it.
pub fn gpu_required() -> bool {
    std::env::var("RLX_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// Reports a missing device: a failure under RLX_REQUIRE_GPU=1, a loud skip otherwise.
pub fn no_device(reason: &str) {
    assert!(!gpu_required(), "RLX_REQUIRE_GPU=1 but no Vulkan device: {reason}");
    // Straight to the stderr handle: the test harness captures eprintln! of passing tests.
    let _ = writeln!(std::io::stderr(), "SKIPPED: no Vulkan device: {reason}");
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
            let forced = ContextOptions { adapter: Some(a.index), memory: Some(MemoryStrategy::Discrete) };
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

/// Deterministic values in [lo, hi) (xorshift; no dependency).
pub fn data(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let u = (s >> 40) as f32 / (1u64 << 24) as f32;
            lo + (hi - lo) * u
        })
        .collect()
}

/// ‖out − ref‖₂ / ‖ref‖₂ over the finite elements (absolute ‖out − ref‖₂ when the reference
/// is all zeros). NaN where one side has a NaN the other lacks, infinite where one side has an
/// infinity the other lacks: both fail any bound.
pub fn rel_err(out: &[f32], reference: &[f64]) -> f64 {
    assert_eq!(out.len(), reference.len(), "length");
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (&o, &r) in out.iter().zip(reference) {
        let o = o as f64;
        if o.is_nan() || r.is_nan() {
            if o.is_nan() != r.is_nan() {
                return f64::NAN;
            }
            continue;
        }
        if !o.is_finite() || !r.is_finite() {
            if o != r {
                return f64::INFINITY;
            }
            continue;
        }
        num += (o - r) * (o - r);
        den += r * r;
    }
    if den == 0.0 {
        num.sqrt()
    } else {
        (num / den).sqrt()
    }
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
