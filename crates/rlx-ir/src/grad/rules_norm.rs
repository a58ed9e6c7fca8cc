//! Gradients of softmax, log-softmax, layer norm and RMS norm (all over the last axis, as the
//! ops are; the builders permute other axes there). The norms' statistics are recomputed from
//! x by forward ops rather than kept from the forward kernel, which does not output them.

use super::{reduce_to, scalar, At, Grads, RuleError};
use crate::{Graph, IrError, NodeId, Shape};

fn float_only(at: &At<'_>, what: &str) -> Result<(), RuleError> {
    if at.dtype().is_float() {
        Ok(())
    } else {
        Err(RuleError::NoRule(format!("{what} of {} values has no gradient", at.dtype())))
    }
}

/// dx = y·(dy − Σ dy·y), the sum over the last axis.
pub(super) fn softmax(g: &mut Graph, at: &At<'_>, dy: NodeId) -> Grads {
    float_only(at, "softmax")?;
    let y = at.id;
    let p = g.mul(dy, y)?;
    let s = g.sum(p, &[-1], true)?;
    let d = g.sub(dy, s)?;
    Ok(vec![Some(g.mul(y, d)?)])
}

/// dx = dy − softmax(x)·Σ dy, with softmax(x) = exp(y).
pub(super) fn log_softmax(g: &mut Graph, at: &At<'_>, dy: NodeId) -> Grads {
    float_only(at, "log_softmax")?;
    let p = g.exp(at.id)?;
    let s = g.sum(dy, &[-1], true)?;
    let ps = g.mul(p, s)?;
    Ok(vec![Some(g.sub(dy, ps)?)])
}

/// x̂ = (x − μ)·r with r = 1/√(var + eps) (biased variance, as the op): dγ = Σ dy·x̂,
/// dβ = Σ dy (over every axis but the last), and with g = dy·γ:
/// dx = r·(g − mean(g) − x̂·mean(g·x̂)).
pub(super) fn layer_norm(g: &mut Graph, at: &At<'_>, eps: f32, dy: NodeId) -> Grads {
    float_only(at, "layer_norm")?;
    let (x, gamma, beta) = (at.input(0), at.input(1), at.input(2));
    let dt = at.dtype();
    let mu = g.mean(x, &[-1], true)?;
    let xc = g.sub(x, mu)?;
    let sq = g.square(xc)?;
    let var = g.mean(sq, &[-1], true)?;
    let e = scalar(g, dt, eps as f64)?;
    let ve = g.add(var, e)?;
    let r = g.rsqrt(ve)?;
    let xhat = g.mul(xc, r)?;
    let dgamma = if at.need[1] { Some(param_grad(g, dy, Some(xhat), gamma)?) } else { None };
    let dbeta = if at.need[2] { Some(param_grad(g, dy, None, beta)?) } else { None };
    let dx = if at.need[0] {
        let gy = g.mul(dy, gamma)?;
        let m1 = g.mean(gy, &[-1], true)?;
        let gx = g.mul(gy, xhat)?;
        let m2 = g.mean(gx, &[-1], true)?;
        let t = g.mul(xhat, m2)?;
        let d = g.sub(gy, m1)?;
        let d = g.sub(d, t)?;
        Some(g.mul(d, r)?)
    } else {
        None
    };
    Ok(vec![dx, dgamma, dbeta])
}

/// x̂ = x·r with r = 1/√(mean(x²) + eps): dγ = Σ dy·x̂, and with g = dy·γ:
/// dx = r·(g − x̂·mean(g·x̂)).
pub(super) fn rms_norm(g: &mut Graph, at: &At<'_>, eps: f32, dy: NodeId) -> Grads {
    float_only(at, "rms_norm")?;
    let (x, gamma) = (at.input(0), at.input(1));
    let dt = at.dtype();
    let sq = g.square(x)?;
    let ms = g.mean(sq, &[-1], true)?;
    let e = scalar(g, dt, eps as f64)?;
    let me = g.add(ms, e)?;
    let r = g.rsqrt(me)?;
    let xhat = g.mul(x, r)?;
    let dgamma = if at.need[1] { Some(param_grad(g, dy, Some(xhat), gamma)?) } else { None };
    let dx = if at.need[0] {
        let gy = g.mul(dy, gamma)?;
        let gx = g.mul(gy, xhat)?;
        let m = g.mean(gx, &[-1], true)?;
        let t = g.mul(xhat, m)?;
        let d = g.sub(gy, t)?;
        Some(g.mul(d, r)?)
    } else {
        None
    };
    Ok(vec![dx, dgamma])
}

/// Σ dy·x̂ (or Σ dy) over every axis but the last, shaped like the affine param `p` ([D]).
fn param_grad(g: &mut Graph, dy: NodeId, xhat: Option<NodeId>, p: NodeId) -> Result<NodeId, IrError> {
    let v = match xhat {
        Some(h) => g.mul(dy, h)?,
        None => dy,
    };
    let s: Shape = g.ty(p)?.shape.clone();
    reduce_to(g, v, &s)
}
