//! The gradient of scaled dot-product attention, by recomputing the attention matrix from its
//! parts: P = softmax(mask(bias + softcap(scale·Q·Kᵀ))), O = P·V, then
//! dV = Pᵀ·dO, dP = dO·Vᵀ, dS = P ⊙ (dP − Σⱼ dP ⊙ P) and dQ = dS·K, dK = dSᵀ·Q (times the
//! scale and the soft-cap's derivative). This holds the [B, H, Sq, Sk] matrix in memory, as
//! unfused attention does; a flash-attention backward kernel is the step for long sequences.
//! Every mask kind is covered except a run-time `kv_lengths` (a KV cache: not a training graph).

use super::{dims, reduce_to, scalar, At, Grads, RuleError};
use crate::{AttentionSpec, AttnLayout, DType, Graph, IrError, MaskKind, NodeId, Tensor};

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
    let bshd = spec.layout == AttnLayout::Bshd;
    let q = to_bhsd(g, at.input(0), bshd)?;
    let k = to_bhsd(g, at.input(1), bshd)?;
    let v = to_bhsd(g, at.input(2), bshd)?;
    let (qd, kd) = (dims(g, q)?, dims(g, k)?);
    let (b, hq, sq, d) = (qd[0], qd[1], qd[2], qd[3]);
    let (hkv, sk) = (kd[1], kd[2]);
    let group = hq / hkv.max(1);
    let kx = widen_heads(g, k, group)?;
    let vx = widen_heads(g, v, group)?;

    // The forward scores, recomputed.
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
        s = g.add(s, at.input(3))?;
    }
    let (visible, row_visible) = visibility(g, spec.mask, has_mask.then(|| at.input(3)), [b, sq, sk])?;
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

    let dout = to_bhsd(g, dy, bshd)?;
    let dv = if at.need[2] {
        let dvx = g.matmul_t(p, dout, true, false)?;
        let dv = fold_heads(g, dvx, hkv, group)?;
        Some(to_bhsd(g, dv, bshd)?)
    } else {
        None
    };
    let dp = g.matmul_t(dout, vx, false, true)?;
    let pp = g.mul(dp, p)?;
    let row = g.sum(pp, &[-1], true)?;
    let centered = g.sub(dp, row)?;
    let mut ds = g.mul(p, centered)?;
    let dbias = if spec.mask == MaskKind::Bias && at.need[3] {
        let shape = g.ty(at.input(3))?.shape.clone();
        Some(reduce_to(g, ds, &shape)?)
    } else {
        None
    };
    if let Some(t) = capped {
        let one = scalar(g, dt, 1.0)?;
        let t2 = g.square(t)?;
        let sech2 = g.sub(one, t2)?;
        ds = g.mul(ds, sech2)?;
    }
    let ds = g.mul(ds, ks)?;
    let dq = if at.need[0] {
        let dq = g.matmul(ds, kx)?;
        Some(to_bhsd(g, dq, bshd)?)
    } else {
        None
    };
    let dk = if at.need[1] {
        let dkx = g.matmul_t(ds, q, true, false)?;
        let dk = fold_heads(g, dkx, hkv, group)?;
        Some(to_bhsd(g, dk, bshd)?)
    } else {
        None
    };
    let mut grads = vec![dq, dk, dv];
    if has_mask {
        grads.push(dbias);
    }
    Ok(grads)
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
