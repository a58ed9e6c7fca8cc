//! Scaled dot-product attention, one (batch, head) at a time, in f64.
//!
//! Per query row: scores = q·kᵀ · scale → soft-cap → mask (causal/sliding window/padding hide
//! keys; a bias is added) → softmax over the visible keys → · v. A row with no visible key, or
//! whose visible scores are all −∞, gives zeros.

use crate::elem::{float_tensor, floats, invalid};
use crate::index::broadcast_strides;
use rayon::prelude::*;
use rlx_backend::BackendError;
use rlx_ir::{AttentionSpec, AttnLayout, MaskKind, Tensor, TensorType};
use std::borrow::Cow;

/// A rank-4 attention operand viewed as (batch, seq, heads, dim) whatever its layout.
#[derive(Clone, Copy)]
pub(crate) struct View {
    pub layout: AttnLayout,
    pub b: usize,
    pub s: usize,
    pub h: usize,
    pub d: usize,
}

impl View {
    pub(crate) fn new(layout: AttnLayout, dims: &[usize], what: &str) -> Result<Self, BackendError> {
        let &[b, x, y, d] = dims else {
            return Err(invalid(what, format!("operand of shape {dims:?} is not rank 4")));
        };
        let (s, h) = match layout {
            AttnLayout::Bshd => (x, y),
            AttnLayout::Bhsd => (y, x),
        };
        Ok(View { layout, b, s, h, d })
    }

    /// Offset of element 0 of the row (batch, seq, head).
    pub(crate) fn row(&self, b: usize, s: usize, h: usize) -> usize {
        match self.layout {
            AttnLayout::Bshd => ((b * self.s + s) * self.h + h) * self.d,
            AttnLayout::Bhsd => ((b * self.h + h) * self.s + s) * self.d,
        }
    }
}

/// The mask operand, read as "may query i see key j" plus an additive term.
enum Mask {
    None,
    /// [B, Sk], nonzero = attend.
    Padding(Vec<f64>),
    /// Bias data with its strides broadcast to [B, Hq, Sq, Sk].
    Bias(Vec<f32>, Vec<isize>),
}

pub fn attention(spec: &AttentionSpec, inputs: &[&Tensor], out: &TensorType) -> Result<Tensor, BackendError> {
    let heads = Heads::new("attention", spec, inputs)?;
    let (b, hq, dv) = (heads.q.0.b, heads.q.0.h, heads.v.0.d);
    // Each (batch, head) yields its [Sq, Dv] block; blocks are scattered by layout afterwards.
    let blocks: Vec<Vec<f32>> = (0..b * hq).into_par_iter().map(|bh| heads.block(bh / hq, bh % hq)).collect();
    let ov = View { layout: spec.layout, b, s: heads.q.0.s, h: hq, d: dv };
    float_tensor(&out.shape, out.dtype, place(&blocks, ov, hq, |x| x))
}

/// Blocks of [S, D] rows, one per (batch, head) in that order (`heads` heads a batch), placed
/// per `view`'s layout into one f32 tensor, each value through `to_f32`: the forward's output
/// and the gradient parts of `attention_grad.rs`.
pub(crate) fn place<T: Copy>(
    blocks: &[Vec<T>],
    view: View,
    heads: usize,
    to_f32: impl Fn(T) -> f32,
) -> Vec<f32> {
    let mut res = vec![0f32; view.b * view.s * view.h * view.d];
    for (bh, block) in blocks.iter().enumerate() {
        for (i, row) in block.chunks(view.d.max(1)).enumerate() {
            let at = view.row(bh / heads, i, bh % heads);
            for (o, &x) in res[at..at + view.d].iter_mut().zip(row) {
                *o = to_f32(x);
            }
        }
    }
    res
}

/// Everything one (batch, head) block needs, shared by all blocks.
pub(crate) struct Heads<'a> {
    pub spec: &'a AttentionSpec,
    pub q: (View, Cow<'a, [f32]>),
    pub k: (View, Cow<'a, [f32]>),
    pub v: (View, Cow<'a, [f32]>),
    mask: Mask,
    pub scale: f64,
    /// Valid keys per batch (Sk without `kv_lengths`): query row i sits at absolute position
    /// i + (len − Sq), and keys at or past len are invisible.
    lens: Vec<usize>,
    /// Query heads per kv head.
    pub group: usize,
}

impl<'a> Heads<'a> {
    /// Reads q, k, v, then the mask where the spec has one, then the kv lengths where it has
    /// them, checking that they fit together (`op` names the op in errors).
    pub(crate) fn new(
        op: &str,
        spec: &'a AttentionSpec,
        inputs: &[&'a Tensor],
    ) -> Result<Self, BackendError> {
        let [q, k, v, rest @ ..] = inputs else {
            return Err(invalid(
                op,
                format!("needs q, k, v (and a mask for padding/bias), got {} operands", inputs.len()),
            ));
        };
        let (qv, kv, vv) = (
            View::new(spec.layout, q.dims(), op)?,
            View::new(spec.layout, k.dims(), op)?,
            View::new(spec.layout, v.dims(), op)?,
        );
        let (b, sq, hq, dh) = (qv.b, qv.s, qv.h, qv.d);
        let (sk, hkv) = (kv.s, kv.h);
        if kv.b != b || vv.b != b || vv.s != sk || vv.h != hkv || kv.d != dh {
            return Err(invalid(
                op,
                format!("q {:?}, k {:?}, v {:?} do not fit together", q.dims(), k.dims(), v.dims()),
            ));
        }
        let group = match hq.checked_div(hkv) {
            Some(g) if g * hkv == hq => g,
            _ if hq == 0 => 1,
            _ => return Err(invalid(op, format!("{hq} query heads are not a multiple of {hkv} kv heads"))),
        };
        let (rest, lens) = match (spec.kv_lengths, rest.split_last()) {
            (true, Some((l, rest))) => {
                // Clamped to [0, Sk], as the GPU kernels clamp it.
                let lens =
                    l.to_f64_vec().iter().map(|&x| x.clamp(0.0, sk as f64) as usize).collect::<Vec<_>>();
                if lens.len() != b {
                    return Err(invalid(op, format!("kv lengths {:?} are not [batch = {b}]", l.dims())));
                }
                (rest, lens)
            }
            (true, None) => return Err(invalid(op, "kv_lengths is set but the lengths operand is missing")),
            (false, _) => (rest, vec![sk; b]),
        };
        let mask = match (spec.mask, rest.first()) {
            (MaskKind::Padding, Some(m)) if m.dims() == [b, sk] => Mask::Padding(m.to_f64_vec()),
            (MaskKind::Bias, Some(m)) => {
                Mask::Bias(floats(m, op)?.into_owned(), broadcast_strides(m.dims(), &[b, hq, sq, sk]))
            }
            (MaskKind::Padding | MaskKind::Bias, _) => {
                return Err(invalid(
                    op,
                    format!("mask {:?} needs a fourth operand of a fitting shape", spec.mask),
                ))
            }
            _ => Mask::None,
        };
        Ok(Heads {
            spec,
            q: (qv, floats(q, op)?),
            k: (kv, floats(k, op)?),
            v: (vv, floats(v, op)?),
            mask,
            scale: spec.scale.map_or(1.0 / (dh as f64).sqrt(), |s| s as f64),
            lens,
            group,
        })
    }

    /// The [Sq, Dv] output of query head `h` of batch `b`.
    fn block(&self, b: usize, h: usize) -> Vec<f32> {
        let ((qv, qd), (kv, kd), (vv, vd)) = (&self.q, &self.k, &self.v);
        let (sk, dh, dv) = (kv.s, qv.d, vv.d);
        let kh = h / self.group;
        let mut block = vec![0f32; qv.s * dv];
        // None = key hidden by the mask; Some(score) otherwise.
        let mut scores: Vec<Option<f64>> = vec![None; sk];
        for i in 0..qv.s {
            let qrow = &qd[qv.row(b, i, h)..][..dh];
            for (j, slot) in scores.iter_mut().enumerate() {
                *slot = self.visible(b, i, j).then(|| {
                    let krow = &kd[kv.row(b, j, kh)..][..dh];
                    let dot: f64 = qrow.iter().zip(krow).map(|(&x, &y)| x as f64 * y as f64).sum();
                    self.adjust(dot * self.scale, b, h, i, j)
                });
            }
            let Some(m) = row_max(&scores) else {
                continue; // fully masked: the row stays zero
            };
            let mut acc = vec![0f64; dv];
            let mut sum = 0f64;
            for (j, s) in scores.iter().enumerate() {
                let Some(s) = s else { continue };
                let p = (s - m).exp();
                sum += p;
                for (a, &x) in acc.iter_mut().zip(&vd[vv.row(b, j, kh)..][..dv]) {
                    *a += p * x as f64;
                }
            }
            for (o, a) in block[i * dv..(i + 1) * dv].iter_mut().zip(&acc) {
                *o = (a / sum) as f32;
            }
        }
        block
    }

    /// Whether query `i` of batch `b` may see key `j` (causal, sliding window, padding).
    pub(crate) fn visible(&self, b: usize, i: usize, j: usize) -> bool {
        let len = self.lens.get(b).copied().unwrap_or(0);
        if j >= len {
            return false;
        }
        let (pos, j_) = (i as isize + len as isize - self.q.0.s as isize, j as isize);
        match (&self.mask, self.spec.mask) {
            (_, MaskKind::Causal) => j_ <= pos,
            // Windows wider than isize::MAX (usize::MAX included) are saturated, not wrapped to
            // a negative width that would hide every key.
            (_, MaskKind::SlidingWindow(w)) => {
                j_ <= pos && j_ > pos.saturating_sub(isize::try_from(w).unwrap_or(isize::MAX))
            }
            (Mask::Padding(p), _) => p[b * self.k.0.s + j] != 0.0,
            _ => true,
        }
    }

    /// Soft-cap, then the additive bias, applied to a scaled score.
    pub(crate) fn adjust(&self, mut s: f64, b: usize, h: usize, i: usize, j: usize) -> f64 {
        if let Some(cap) = self.spec.softcap {
            let cap = cap as f64;
            s = cap * (s / cap).tanh();
        }
        if let Mask::Bias(bias, st) = &self.mask {
            let off = b as isize * st[0] + h as isize * st[1] + i as isize * st[2] + j as isize * st[3];
            s += bias[off as usize] as f64;
        }
        s
    }
}

/// Maximum of the visible scores (NaN if any is NaN); `None` when no key is visible or all
/// visible scores are −∞, i.e. the row is fully masked.
pub(crate) fn row_max(scores: &[Option<f64>]) -> Option<f64> {
    let m =
        scores.iter().flatten().try_fold(
            f64::NEG_INFINITY,
            |m, &s| {
                if s.is_nan() {
                    Err(())
                } else {
                    Ok(m.max(s))
                }
            },
        );
    match m {
        Err(()) => Some(f64::NAN),
        Ok(m) if m == f64::NEG_INFINITY => None,
        Ok(m) => Some(m),
    }
}
