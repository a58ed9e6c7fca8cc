//! Last-axis normalisations: layer norm, RMS norm, softmax, log-softmax, and the fused
//! residual add + norm. Every row is accumulated in f64 and rounded once.

use super::elementwise::binary;
use crate::elem::{float_tensor, floats, invalid};
use crate::index::PAR_MIN;
use rayon::prelude::*;
use rlx_backend::BackendError;
use rlx_ir::{BinaryOp, NormKind, Tensor, TensorType};

/// Runs `f(row_in, row_out)` over every last-axis row of `x`, in parallel for large inputs.
fn rows(x: &[f32], d: usize, f: impl Fn(&[f32], &mut [f32]) + Sync + Send) -> Vec<f32> {
    let mut out = vec![0f32; x.len()];
    if d == 0 {
        return out;
    }
    if x.len() >= PAR_MIN {
        out.par_chunks_mut(d).zip(x.par_chunks(d)).for_each(|(o, i)| f(i, o));
    } else {
        out.chunks_mut(d).zip(x.chunks(d)).for_each(|(o, i)| f(i, o));
    }
    out
}

/// Per-channel affine parameters of length `d` (gamma or beta).
fn affine<'a>(t: &'a Tensor, d: usize, what: &str) -> Result<std::borrow::Cow<'a, [f32]>, BackendError> {
    let v = floats(t, what)?;
    if v.len() != d {
        return Err(invalid(what, format!("{} has {} elements, the last axis has {d}", what, v.len())));
    }
    Ok(v)
}

/// `(x − mean) / sqrt(var + eps) · gamma + beta` over the last axis; biased variance.
pub fn layer_norm(
    eps: f32,
    x: &Tensor,
    gamma: &Tensor,
    beta: &Tensor,
    out: &TensorType,
) -> Result<Tensor, BackendError> {
    let d = out.shape.last();
    let v = floats(x, "layer_norm")?;
    let (g, b) = (affine(gamma, d, "layer_norm gamma")?, affine(beta, d, "layer_norm beta")?);
    let eps = eps as f64;
    let r = rows(&v, d, |xi, o| {
        let n = d as f64;
        let mean = xi.iter().map(|&e| e as f64).sum::<f64>() / n;
        let var = xi.iter().map(|&e| (e as f64 - mean).powi(2)).sum::<f64>() / n;
        let inv = 1.0 / (var + eps).sqrt();
        for (j, slot) in o.iter_mut().enumerate() {
            *slot = ((xi[j] as f64 - mean) * inv * g[j] as f64 + b[j] as f64) as f32;
        }
    });
    float_tensor(&out.shape, out.dtype, r)
}

/// `x / sqrt(mean(x²) + eps) · gamma` over the last axis.
pub fn rms_norm(eps: f32, x: &Tensor, gamma: &Tensor, out: &TensorType) -> Result<Tensor, BackendError> {
    let d = out.shape.last();
    let v = floats(x, "rms_norm")?;
    let g = affine(gamma, d, "rms_norm gamma")?;
    let eps = eps as f64;
    let r = rows(&v, d, |xi, o| {
        let ms = xi.iter().map(|&e| (e as f64).powi(2)).sum::<f64>() / d as f64;
        let inv = 1.0 / (ms + eps).sqrt();
        for (j, slot) in o.iter_mut().enumerate() {
            *slot = (xi[j] as f64 * inv * g[j] as f64) as f32;
        }
    });
    float_tensor(&out.shape, out.dtype, r)
}

/// Row maximum that is NaN if any element is NaN (so a NaN row softmaxes to NaN).
fn row_max(xi: &[f32]) -> f64 {
    xi.iter().fold(f64::NEG_INFINITY, |m, &e| {
        let e = e as f64;
        if m.is_nan() || e.is_nan() {
            f64::NAN
        } else {
            m.max(e)
        }
    })
}

/// `exp(x − max) / Σ exp(x − max)` over the last axis.
pub fn softmax(x: &Tensor, out: &TensorType) -> Result<Tensor, BackendError> {
    let d = out.shape.last();
    let v = floats(x, "softmax")?;
    let r = rows(&v, d, |xi, o| {
        let m = row_max(xi);
        let e: Vec<f64> = xi.iter().map(|&t| (t as f64 - m).exp()).collect();
        let s: f64 = e.iter().sum();
        for (slot, ej) in o.iter_mut().zip(&e) {
            *slot = (ej / s) as f32;
        }
    });
    float_tensor(&out.shape, out.dtype, r)
}

/// `x − max − ln Σ exp(x − max)` over the last axis.
pub fn log_softmax(x: &Tensor, out: &TensorType) -> Result<Tensor, BackendError> {
    let d = out.shape.last();
    let v = floats(x, "log_softmax")?;
    let r = rows(&v, d, |xi, o| {
        let m = row_max(xi);
        let lse = xi.iter().map(|&t| (t as f64 - m).exp()).sum::<f64>().ln();
        for (slot, &t) in o.iter_mut().zip(xi) {
            *slot = (t as f64 - m - lse) as f32;
        }
    });
    float_tensor(&out.shape, out.dtype, r)
}

/// `norm(x + residual)`: the add rounds to the output dtype first, exactly like the unfused
/// add followed by the norm.
pub fn add_norm(
    norm: NormKind,
    eps: f32,
    x: &Tensor,
    residual: &Tensor,
    gamma: &Tensor,
    beta: Option<&Tensor>,
    out: &TensorType,
) -> Result<Tensor, BackendError> {
    let sum = binary(BinaryOp::Add, x, residual, out)?;
    match (norm, beta) {
        (NormKind::LayerNorm, Some(beta)) => layer_norm(eps, &sum, gamma, beta, out),
        (NormKind::LayerNorm, None) => Err(invalid("add_norm", "layer norm needs a beta operand")),
        (NormKind::RmsNorm, _) => rms_norm(eps, &sum, gamma, out),
    }
}
