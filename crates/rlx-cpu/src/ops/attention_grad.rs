//! The gradient of attention, part by part ([`AttnGradPart`]), in f64: the reference for the
//! GPU's flash-attention backward kernels.
//!
//! With s the scaled (and soft-capped) score of query i and key j, lse the log-sum-exp of row
//! i's visible scores and δ = Σ dy·o over row i: p = exp(s − lse), dp = dy·v,
//! ds = p·(dp − δ)·(1 − t²)·scale (t = tanh of the capped score, 1 − t² = 1 without a cap).
//! Then dq = Σⱼ ds·k, dk = Σᵢ ds·q, dv = Σᵢ p·dy, sums over the query heads of a kv head for
//! dk and dv. A row that sees no key (lse = −∞) adds nothing.

use super::attention::{place, row_max, Heads, View};
use crate::elem::{float_tensor, floats, invalid};
use rayon::prelude::*;
use rlx_backend::BackendError;
use rlx_ir::{AttentionSpec, AttnGradPart, MaskKind, Tensor, TensorType};
use std::borrow::Cow;

pub fn attention_grad(
    spec: &AttentionSpec,
    part: AttnGradPart,
    inputs: &[&Tensor],
    out: &TensorType,
) -> Result<Tensor, BackendError> {
    const OP: &str = "attention_grad";
    let [q, k, v, x, y, rest @ ..] = inputs else {
        return Err(invalid(OP, format!("needs q, k, v and two more operands, got {}", inputs.len())));
    };
    let mut fwd = vec![*q, *k, *v];
    if spec.mask == MaskKind::Padding {
        fwd.extend(rest.first().copied());
    }
    let heads = Heads::new(OP, spec, &fwd)?;
    let g = Grad { h: &heads, x: floats(x, OP)?, y: floats(y, OP)? };
    let (qv, kv, vv) = (heads.q.0, heads.k.0, heads.v.0);
    let (b, hq, hkv) = (qv.b, qv.h, kv.h);
    let res = match part {
        AttnGradPart::Stats => {
            let rows: Vec<Vec<f32>> =
                (0..b * hq).into_par_iter().map(|bh| g.stats(bh / hq, bh % hq)).collect();
            rows.concat()
        }
        AttnGradPart::Q => {
            let blocks: Vec<Vec<f64>> =
                (0..b * hq).into_par_iter().map(|bh| g.dq(bh / hq, bh % hq)).collect();
            place(&blocks, qv, hq, |x| x as f32)
        }
        AttnGradPart::K | AttnGradPart::V => {
            let of_v = part == AttnGradPart::V;
            let blocks: Vec<Vec<f64>> =
                (0..b * hkv).into_par_iter().map(|bh| g.dkv(bh / hkv, bh % hkv, of_v)).collect();
            place(&blocks, if of_v { vv } else { kv }, hkv, |x| x as f32)
        }
    };
    float_tensor(&out.shape, out.dtype, res)
}

/// The forward's operands with the part's two extra ones: (o, dy) for the statistics,
/// (dy, stats) for the gradients.
struct Grad<'a> {
    h: &'a Heads<'a>,
    x: Cow<'a, [f32]>,
    y: Cow<'a, [f32]>,
}

/// One visible score: its value as the softmax sees it and the soft-cap's derivative factor.
#[derive(Clone, Copy)]
struct Score {
    s: f64,
    dcap: f64,
}

impl Grad<'_> {
    /// Row i's scores of query head h, batch b (`None` for hidden keys).
    fn scores(&self, b: usize, h: usize, i: usize) -> Vec<Option<Score>> {
        let ((qv, qd), (kv, kd)) = (&self.h.q, &self.h.k);
        let (dh, kh) = (qv.d, h / self.h.group);
        let qrow = &qd[qv.row(b, i, h)..][..dh];
        (0..kv.s)
            .map(|j| {
                self.h.visible(b, i, j).then(|| {
                    let krow = &kd[kv.row(b, j, kh)..][..dh];
                    let dot: f64 = qrow.iter().zip(krow).map(|(&x, &y)| x as f64 * y as f64).sum();
                    let raw = dot * self.h.scale;
                    let dcap = self.h.spec.softcap.map_or(1.0, |c| {
                        let t = (raw / c as f64).tanh();
                        1.0 - t * t
                    });
                    Score { s: self.h.adjust(raw, b, h, i, j), dcap }
                })
            })
            .collect()
    }

    /// dy (operand 4 of the statistics, 3 of the gradients) row i of head h.
    fn dy(&self, b: usize, h: usize, i: usize, stats_part: bool) -> &[f32] {
        let ov = View { d: self.h.v.0.d, ..self.h.q.0 };
        let data = if stats_part { &self.y } else { &self.x };
        &data[ov.row(b, i, h)..][..ov.d]
    }

    /// [Sq, 2] of (lse, δ) for query head h of batch b.
    fn stats(&self, b: usize, h: usize) -> Vec<f32> {
        let qv = self.h.q.0;
        let ov = View { d: self.h.v.0.d, ..qv };
        let mut res = Vec::with_capacity(qv.s * 2);
        for i in 0..qv.s {
            let sc: Vec<Option<f64>> = self.scores(b, h, i).iter().map(|s| s.map(|s| s.s)).collect();
            let lse = match row_max(&sc) {
                None => f64::NEG_INFINITY,
                Some(m) => m + sc.iter().flatten().map(|s| (s - m).exp()).sum::<f64>().ln(),
            };
            let o = &self.x[ov.row(b, i, h)..][..ov.d];
            let delta: f64 = o.iter().zip(self.dy(b, h, i, true)).map(|(&a, &d)| a as f64 * d as f64).sum();
            res.extend([lse as f32, delta as f32]);
        }
        res
    }

    /// For each visible key j of row i: (j, p, ds) with ds already times the scale.
    fn weights(&self, b: usize, h: usize, i: usize) -> Vec<(usize, f64, f64)> {
        let qv = self.h.q.0;
        let at = ((b * qv.h + h) * qv.s + i) * 2;
        let (lse, delta) = (self.y[at] as f64, self.y[at + 1] as f64);
        if lse == f64::NEG_INFINITY {
            return Vec::new();
        }
        let (vv, vd) = (&self.h.v.0, &self.h.v.1);
        let kh = h / self.h.group;
        let dy = self.dy(b, h, i, false);
        let mut w = Vec::new();
        for (j, sc) in self.scores(b, h, i).into_iter().enumerate() {
            let Some(sc) = sc else { continue };
            let p = (sc.s - lse).exp();
            let vrow = &vd[vv.row(b, j, kh)..][..vv.d];
            let dp: f64 = dy.iter().zip(vrow).map(|(&a, &c)| a as f64 * c as f64).sum();
            w.push((j, p, p * (dp - delta) * sc.dcap * self.h.scale));
        }
        w
    }

    /// [Sq, D] of dq for query head h of batch b.
    fn dq(&self, b: usize, h: usize) -> Vec<f64> {
        let (qv, (kv, kd)) = (self.h.q.0, (&self.h.k.0, &self.h.k.1));
        let kh = h / self.h.group;
        let mut res = vec![0f64; qv.s * qv.d];
        for i in 0..qv.s {
            let acc = &mut res[i * qv.d..][..qv.d];
            for (j, _, ds) in self.weights(b, h, i) {
                for (a, &x) in acc.iter_mut().zip(&kd[kv.row(b, j, kh)..][..kv.d]) {
                    *a += ds * x as f64;
                }
            }
        }
        res
    }

    /// [Sk, D] of dk (or [Sk, Dv] of dv) for kv head kh of batch b: the sum over its query
    /// heads and rows.
    fn dkv(&self, b: usize, kh: usize, of_v: bool) -> Vec<f64> {
        let ((qv, qd), kv) = (&self.h.q, self.h.k.0);
        let d = if of_v { self.h.v.0.d } else { kv.d };
        let mut res = vec![0f64; kv.s * d];
        for h in kh * self.h.group..(kh + 1) * self.h.group {
            for i in 0..qv.s {
                let src = if of_v { self.dy(b, h, i, false) } else { &qd[qv.row(b, i, h)..][..qv.d] };
                for (j, p, ds) in self.weights(b, h, i) {
                    let w = if of_v { p } else { ds };
                    for (a, &x) in res[j * d..][..d].iter_mut().zip(src) {
                        *a += w * x as f64;
                    }
                }
            }
        }
        res
    }
}
