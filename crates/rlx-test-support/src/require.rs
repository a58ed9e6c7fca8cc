//! The skip/require policy, for every test that needs a GPU: without one, a loud skip; under
//! `RLX_REQUIRE_GPU=1` (CI), a failure. And the relative error the GPU tests measure.

use std::io::Write as _;

/// `RLX_REQUIRE_GPU=1`: a GPU device that cannot be opened is a failure, not a skip.
pub fn gpu_required() -> bool {
    std::env::var("RLX_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// A loud skip line. Straight to the stderr handle: the harness captures `eprintln!` of passing
/// tests, and a skip should be seen.
pub fn skip(what: &str) {
    let _ = writeln!(std::io::stderr(), "SKIPPED: {what}");
}

/// No `device` (e.g. "Vulkan device", "wgpu adapter") because of `reason`: a panic (test
/// failure) under `RLX_REQUIRE_GPU=1`, else a loud skip.
pub fn no_gpu(device: &str, reason: &str) {
    if gpu_required() {
        panic!("RLX_REQUIRE_GPU=1 but no {device}: {reason}");
    }
    skip(&format!("no {device}: {reason}"));
}

/// [`rel_err`] of f32 output against an f64 reference (model outputs against transformers').
pub fn rel_err_f32(out: &[f32], reference: &[f64]) -> f64 {
    let out: Vec<f64> = out.iter().map(|&v| f64::from(v)).collect();
    rel_err(&out, reference)
}

/// ‖out − ref‖₂ / ‖ref‖₂ over the finite elements (absolute ‖out − ref‖₂ when the reference is
/// all zeros). NaN where one side has a NaN the other lacks, infinite where one side has an
/// infinity the other lacks: both fail any bound.
pub fn rel_err(out: &[f64], reference: &[f64]) -> f64 {
    assert_eq!(out.len(), reference.len(), "length");
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (&o, &r) in out.iter().zip(reference) {
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
