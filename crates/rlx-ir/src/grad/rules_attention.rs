//! The gradient of scaled dot-product attention. Where [`AttentionSpec::flash_grad`] allows
//! (every mask but a bias, no kv lengths) it is `Graph::attention_grad`'s nodes, which never
//! hold the [B, H, Sq, Sk] matrix. Otherwise it is composed by recomputing that matrix from its
//! parts: P = softmax(mask(bias + softcap(scale·Q·Kᵀ))), O = P·V, then
//! dV = Pᵀ·dO, dP = dO·Vᵀ, dS = P ⊙ (dP − Σⱼ dP ⊙ P) and dQ = dS·K, dK = dSᵀ·Q (times the
//! scale and the soft-cap's derivative). This holds the [B, H, Sq, Sk] matrix in memory, as
//! unfused attention does; a flash-attention backward kernel is the step for long sequences.
//! Every mask kind is covered except a run-time `kv_lengths` (a KV cache: not a training graph).

use super::{dims, reduce_to, scalar, At, Grads, RuleError};
use crate::{
    AttentionSpec, AttnGradPart, AttnLayout, DType, Graph, IrError, MaskKind, NodeId, Tensor, UnaryOp,
};

pub(super) fn attention(g: &mut Graph, at: &At<'_>, spec: &AttentionSpec, dy: NodeId) -> Grads {
    let dt = at.dtype();
    if !dt.is_float() {
        return Err(RuleError::NoRule(format!("attention on {dt} values has no gradient")));
    }
    if spec.kv_lengths {
        return Err(RuleError::NoRule(
            "attention with run-time kv_lengths (a KV cache) has no gradient rule; differentiate \
             attention over whole sequences (a Padding mask marks the valid keys)"
                .into(),
        ));
    }
    let has_mask = matches!(spec.mask, MaskKind::Padding | MaskKind::Bias);
    if has_mask && at.need[3] && spec.mask == MaskKind::Padding {
        return Err(RuleError::NoRule("a padding mask is discrete: it has no gradient".into()));
    }
    if spec.flash_grad() {
        let mask = (spec.mask == MaskKind::Padding).then(|| at.input(3));
        let [q, k, v] = [at.input(0), at.input(1), at.input(2)];
        let want = [at.need[0], at.need[1], at.need[2]];
        let [dq, dk, dv] = g.attention_grad([q, k, v], at.id, dy, mask, *spec, want)?;
        let mut grads = vec![dq, dk, dv];
        if mask.is_some() {
            grads.push(None);
        }
        return Ok(grads);
    }
    let mask = has_mask.then(|| at.input(3));
    let f = Fwd::recompute(g, spec, dt, [at.input(0), at.input(1), at.input(2)], mask)?;
    let dout = to_bhsd(g, dy, f.bshd)?;
    let dv = if at.need[2] { Some(f.dv(g, dout)?) } else { None };
    let dp = g.matmul_t(dout, f.vx, false, true)?;
    let pp = g.mul(dp, f.p)?;
    let row = g.sum(pp, &[-1], true)?;
    let centered = g.sub(dp, row)?;
    let ds = g.mul(f.p, centered)?;
    let dbias = if spec.mask == MaskKind::Bias && at.need[3] {
        let shape = g.ty(at.input(3))?.shape.clone();
        Some(reduce_to(g, ds, &shape)?)
    } else {
        None
    };
    let ds = f.score_grad(g, ds)?;
    let dq = if at.need[0] { Some(f.dq(g, ds)?) } else { None };
    let dk = if at.need[1] { Some(f.dk(g, ds)?) } else { None };
    let mut grads = vec![dq, dk, dv];
    if has_mask {
        grads.push(dbias);
    }
    Ok(grads)
}

/// One part of [`crate::Op::AttentionGrad`] composed from forward ops (the same math as its
/// kernels, holding the [B, H, Sq, Sk] matrix): rlx-opt's decomposition of the op, for a
/// device that runs the composition better or lacks the kernel. `inputs` are the op's.
pub fn attention_grad_composed(
    g: &mut Graph,
    spec: &AttentionSpec,
    part: AttnGradPart,
    inputs: &[NodeId],
) -> Result<NodeId, IrError> {
    let (&[q, k, v, x, y], mask) = match inputs {
        [q, k, v, x, y] => (&[*q, *k, *v, *x, *y], None),
        [q, k, v, x, y, m] => (&[*q, *k, *v, *x, *y], Some(*m)),
        _ => {
            return Err(IrError::Arity { op: "attention_grad", expected: "5 or 6".into(), got: inputs.len() })
        }
    };
    let dt = g.ty(q)?.dtype;
    let f = Fwd::recompute(g, spec, dt, [q, k, v], mask)?;
    let dout = to_bhsd(g, if part == AttnGradPart::Stats { y } else { x }, f.bshd)?;
    match part {
        AttnGradPart::Stats => {
            // lse = m + log Σ exp(s − m); a row that sees no key has m = −∞: 0 in its place
            // keeps exp(s − m) at 0, so its lse is −∞, as the kernels write.
            let mut m = g.max(f.s, &[-1], true)?;
            if let Some(rv) = f.row_visible {
                let zero = scalar(g, dt, 0.0)?;
                m = g.where_(rv, m, zero)?;
            }
            let z = g.sub(f.s, m)?;
            let e = g.unary(UnaryOp::Exp, z)?;
            let l = g.sum(e, &[-1], true)?;
            let l = g.unary(UnaryOp::Log, l)?;
            let lse = g.add(m, l)?;
            let o = to_bhsd(g, x, f.bshd)?;
            let od = g.mul(o, dout)?;
            let delta = g.sum(od, &[-1], true)?;
            let stats = g.concat(&[lse, delta], -1)?;
            g.cast(stats, DType::F32)
        }
        AttnGradPart::V => f.dv(g, dout),
        AttnGradPart::Q | AttnGradPart::K => {
            let dp = g.matmul_t(dout, f.vx, false, true)?;
            let delta = g.narrow(y, -1, 1, 1)?;
            let delta = g.cast(delta, dt)?;
            let centered = g.sub(dp, delta)?;
            let ds = g.mul(f.p, centered)?;
            let ds = f.score_grad(g, ds)?;
            if part == AttnGradPart::Q {
                f.dq(g, ds)
            } else {
                f.dk(g, ds)
            }
        }
    }
}

/// The forward recomputed for the composed gradient, in [B, H, S, D].
struct Fwd {
    /// q as [B, Hq, Sq, D]; k and v with each kv head repeated for its query heads.
    q: NodeId,
    kx: NodeId,
    vx: NodeId,
    /// The masked scores (−∞ where hidden) and their softmax P (0 on rows that see no key).
    s: NodeId,
    p: NodeId,
    /// The scale, as a scalar of the dtype.
    ks: NodeId,
    /// tanh(scale·q·k / cap) under a soft-cap.
    capped: Option<NodeId>,
    /// Which rows see a key, where some do not.
    row_visible: Option<NodeId>,
    hkv: usize,
    group: usize,
    bshd: bool,
}

impl Fwd {
    fn recompute(
        g: &mut Graph,
        spec: &AttentionSpec,
        dt: DType,
        [q, k, v]: [NodeId; 3],
        mask: Option<NodeId>,
    ) -> Result<Fwd, IrError> {
        let bshd = spec.layout == AttnLayout::Bshd;
        let q = to_bhsd(g, q, bshd)?;
        let k = to_bhsd(g, k, bshd)?;
        let v = to_bhsd(g, v, bshd)?;
        let (qd, kd) = (dims(g, q)?, dims(g, k)?);
        let (b, hq, sq, d) = (qd[0], qd[1], qd[2], qd[3]);
        let (hkv, sk) = (kd[1], kd[2]);
        let group = hq / hkv.max(1);
        let kx = widen_heads(g, k, group)?;
        let vx = widen_heads(g, v, group)?;

        let scale = spec.scale.map(f64::from).unwrap_or(1.0 / (d.max(1) as f64).sqrt());
        let ks = scalar(g, dt, scale)?;
        let s = g.matmul_t(q, kx, false, true)?;
        let mut s = g.mul(s, ks)?;
        let mut capped = None;
        if let Some(cap) = spec.softcap {
            let inv = scalar(g, dt, 1.0 / cap as f64)?;
            let t = g.mul(s, inv)?;
            let t = g.tanh(t)?;
            let kc = scalar(g, dt, cap as f64)?;
            s = g.mul(t, kc)?;
            capped = Some(t);
        }
        if spec.mask == MaskKind::Bias {
            if let Some(bias) = mask {
                s = g.add(s, bias)?;
            }
        }
        let (visible, row_visible) = visibility(g, spec.mask, mask, [b, sq, sk])?;
        let s = match visible {
            Some(vis) => {
                let ninf = scalar(g, dt, f64::NEG_INFINITY)?;
                g.where_(vis, s, ninf)?
            }
            None => s,
        };
        let mut p = g.softmax(s, -1)?;
        if let Some(rv) = row_visible {
            // Rows that see no key give zeros (their softmax is NaN).
            let zero = scalar(g, dt, 0.0)?;
            p = g.where_(rv, p, zero)?;
        }
        Ok(Fwd { q, kx, vx, s, p, ks, capped, row_visible, hkv, group, bshd })
    }

    /// dS times the soft-cap's derivative and the scale: the gradient of q·kᵀ.
    fn score_grad(&self, g: &mut Graph, mut ds: NodeId) -> Result<NodeId, IrError> {
        if let Some(t) = self.capped {
            let dt = g.ty(t)?.dtype;
            let one = scalar(g, dt, 1.0)?;
            let t2 = g.square(t)?;
            let sech2 = g.sub(one, t2)?;
            ds = g.mul(ds, sech2)?;
        }
        g.mul(ds, self.ks)
    }

    fn dv(&self, g: &mut Graph, dout: NodeId) -> Result<NodeId, IrError> {
        let dvx = g.matmul_t(self.p, dout, true, false)?;
        let dv = fold_heads(g, dvx, self.hkv, self.group)?;
        to_bhsd(g, dv, self.bshd)
    }

    fn dq(&self, g: &mut Graph, ds: NodeId) -> Result<NodeId, IrError> {
        let dq = g.matmul(ds, self.kx)?;
        to_bhsd(g, dq, self.bshd)
    }

    fn dk(&self, g: &mut Graph, ds: NodeId) -> Result<NodeId, IrError> {
        let dkx = g.matmul_t(ds, self.q, true, false)?;
        let dk = fold_heads(g, dkx, self.hkv, self.group)?;
        to_bhsd(g, dk, self.bshd)
    }
}

/// [B, S, H, D] ↔ [B, H, S, D] (the permutation is its own inverse).
fn to_bhsd(g: &mut Graph, x: NodeId, bshd: bool) -> Result<NodeId, IrError> {
    if bshd {
        g.permute(x, &[0, 2, 1, 3])
    } else {
        Ok(x)
    }
}

/// K or V [B, Hkv, S, D] with each head repeated `group` times: [B, Hkv·group, S, D] (query
/// head h reads key head h / group).
fn widen_heads(g: &mut Graph, x: NodeId, group: usize) -> Result<NodeId, IrError> {
    if group == 1 {
        return Ok(x);
    }
    let d = dims(g, x)?;
    let x = g.reshape(x, &[d[0], d[1], 1, d[2], d[3]])?;
    let x = g.expand(x, &[d[0], d[1], group, d[2], d[3]])?;
    g.reshape(x, &[d[0], d[1] * group, d[2], d[3]])
}

/// The transpose of [`widen_heads`]: the gradients of a key head's copies summed.
fn fold_heads(g: &mut Graph, x: NodeId, hkv: usize, group: usize) -> Result<NodeId, IrError> {
    if group == 1 {
        return Ok(x);
    }
    let d = dims(g, x)?;
    let x = g.reshape(x, &[d[0], hkv, group, d[2], d[3]])?;
    g.sum(x, &[2], false)
}

/// Which keys each query sees, as a Bool broadcastable to [B, H, Sq, Sk], and which rows see
/// at least one key (when some do not). `None` where everything is visible.
fn visibility(
    g: &mut Graph,
    mask: MaskKind,
    mask_input: Option<NodeId>,
    [b, sq, sk]: [usize; 3],
) -> Result<(Option<NodeId>, Option<NodeId>), IrError> {
    let window = match mask {
        MaskKind::Causal => None,
        MaskKind::SlidingWindow(w) => Some(w),
        MaskKind::Padding => {
            let Some(m) = mask_input else { return Ok((None, None)) };
            let mt = g.ty(m)?.dtype;
            let vis = if mt == DType::Bool {
                m
            } else {
                let zero = g.full(&[], mt, 0.0)?;
                g.ne(m, zero)?
            };
            let vis = g.reshape(vis, &[b, 1, 1, sk])?;
            let f = g.cast(vis, DType::F32)?;
            let any = g.max(f, &[-1], true)?;
            let zero = g.full(&[], DType::F32, 0.0)?;
            let row = g.gt(any, zero)?;
            return Ok((Some(vis), Some(row)));
        }
        MaskKind::None | MaskKind::Bias => return Ok((None, None)),
    };
    let off = sk as isize - sq as isize;
    let mut vis = Vec::with_capacity(sq * sk);
    let mut rows = Vec::with_capacity(sq);
    for i in 0..sq as isize {
        let pos = i + off;
        let lo = window.map_or(isize::MIN, |w| pos.saturating_sub(isize::try_from(w).unwrap_or(isize::MAX)));
        let before = vis.len();
        vis.extend((0..sk as isize).map(|j| j <= pos && j > lo));
        rows.push(vis[before..].iter().any(|&x| x));
    }
    let all_rows = rows.iter().all(|&r| r);
    let vis = g.constant(Tensor::from_bool([sq, sk], vis)?)?;
    let row = if all_rows { None } else { Some(g.constant(Tensor::from_bool([sq, 1], rows)?)?) };
    Ok((Some(vis), row))
}
