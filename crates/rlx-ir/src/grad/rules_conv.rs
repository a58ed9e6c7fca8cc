//! Gradients of 2-D convolution and pooling (NCHW), as convolutions, slices and pads.
//!
//! Per spatial axis with input length H, kernel K, stride s, padding p, dilation d and output
//! length OH, output o reads input i = o·s − p + k·d. So:
//! - d input = the output gradient with s − 1 zeros between its elements, padded so that its
//!   element 0 lands at (K − 1)·d − p, correlated (stride 1, dilation d) with the kernel flipped
//!   and its in/out channels swapped per group: a transposed convolution;
//! - d weight = a convolution of x (batch and channels swapped) with the output gradient as
//!   the kernel, stride d and dilation s: out[c, o, k] = Σₙ Σₒ x[n, c, o·s − p + k·d]·dy[n, o];
//! - pooling: for each kernel offset, the window elements at that offset get their share (avg)
//!   or, for max, the gradient of the windows whose maximum they are (the first in row-major
//!   window order on ties, as PyTorch), put back in place by the same zero-interleave and pad.

use super::{dims, scalar, At, Grads, RuleError};
use crate::{DType, Graph, IrError, NodeId, PoolKind};

pub(super) fn conv2d(
    g: &mut Graph,
    at: &At<'_>,
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
    groups: usize,
    dy: NodeId,
) -> Grads {
    if !at.dtype().is_float() {
        return Err(RuleError::NoRule(format!("conv2d of {} values has no gradient", at.dtype())));
    }
    let (x, w) = (at.input(0), at.input(1));
    let (xd, wd) = (dims(g, x)?, dims(g, w)?);
    let (n, c) = (xd[0], xd[1]);
    let (o, cg, k) = (wd[0], wd[1], [wd[2], wd[3]]);
    let og = o / groups.max(1);
    let dx = if at.need[0] {
        // The kernel flipped, with in/out channels swapped per group: [C, O/G, KH, KW].
        let t = g.reshape(w, &[groups, og, cg, k[0], k[1]])?;
        let t = g.permute(t, &[0, 2, 1, 3, 4])?;
        let t = g.reshape(t, &[c, og, k[0], k[1]])?;
        let wt = g.reverse(t, &[2, 3])?;
        let mut z = dy;
        for ax in 0..2 {
            z = dilate(g, z, ax + 2, stride[ax])?;
            let ext = dilation[ax] * (k[ax] - 1);
            z = place(g, z, ax + 2, ext as isize - padding[ax] as isize, xd[ax + 2] + ext)?;
        }
        Some(g.conv2d(z, wt, None, [1, 1], [0, 0], dilation, groups)?)
    } else {
        None
    };
    let dw = if at.need[1] {
        // x as [C/G, G·N, H, W] (groups of N channels), dy as the kernel [O, N, OH, OW].
        let xt = g.reshape(x, &[n, groups, cg, xd[2], xd[3]])?;
        let xt = g.permute(xt, &[2, 1, 0, 3, 4])?;
        let xt = g.reshape(xt, &[cg, groups * n, xd[2], xd[3]])?;
        let kt = g.permute(dy, &[1, 0, 2, 3])?;
        let mut r = g.conv2d(xt, kt, None, dilation, padding, stride, groups)?;
        // Its extent may pass the kernel's (windows the stride skipped): keep the kernel's.
        for (ax, &kk) in k.iter().enumerate() {
            if dims(g, r)?[ax + 2] != kk {
                r = g.slice(r, ax as isize + 2, 0, kk, 1)?;
            }
        }
        Some(g.permute(r, &[1, 0, 2, 3])?)
    } else {
        None
    };
    let mut grads = vec![dx, dw];
    if at.node.inputs.len() == 3 {
        grads.push(if at.need[2] { Some(g.sum(dy, &[0, 2, 3], false)?) } else { None });
    }
    Ok(grads)
}

pub(super) fn pool2d(
    g: &mut Graph,
    at: &At<'_>,
    kind: PoolKind,
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 2],
    dy: NodeId,
) -> Grads {
    let dt = at.dtype();
    if !dt.is_float() {
        return Err(RuleError::NoRule(format!("pool2d of {dt} values has no gradient")));
    }
    let x = at.input(0);
    let (xd, yd) = (dims(g, x)?, dims(g, at.id)?);
    let zero = scalar(g, dt, 0.0)?;
    // Max: the input padded with −∞ (padding never wins), and which windows are claimed.
    let (xp, mut claimed) = match kind {
        PoolKind::Max => {
            let pads = [(0, 0), (0, 0), (padding[0], padding[0]), (padding[1], padding[1])];
            let xp = g.pad(x, &pads, f64::NEG_INFINITY)?;
            let no = g.full(&[], DType::Bool, 0.0)?;
            (Some(xp), Some(g.expand(no, &yd)?))
        }
        PoolKind::Avg => (None, None),
    };
    let share = match kind {
        PoolKind::Avg => {
            let k = scalar(g, dt, 1.0 / (kernel[0] * kernel[1]) as f64)?;
            Some(g.mul(dy, k)?)
        }
        PoolKind::Max => None,
    };
    let mut dx: Option<NodeId> = None;
    for a in 0..kernel[0] {
        for b in 0..kernel[1] {
            let mut part = match (xp, share) {
                (Some(xp), _) => {
                    let win = g.slice(xp, 2, a, a + (yd[2] - 1) * stride[0] + 1, stride[0])?;
                    let win = g.slice(win, 3, b, b + (yd[3] - 1) * stride[1] + 1, stride[1])?;
                    let hit = g.eq(win, at.id)?;
                    let (yes, no) = (g.full(&[], DType::Bool, 1.0)?, g.full(&[], DType::Bool, 0.0)?);
                    let prev = claimed.unwrap_or(no);
                    let first = g.where_(prev, no, hit)?;
                    claimed = Some(g.where_(hit, yes, prev)?);
                    g.where_(first, dy, zero)?
                }
                (None, Some(s)) => s,
                (None, None) => return Err(RuleError::NoRule("pool2d: unknown kind".into())),
            };
            for (ax, off) in [(0, a), (1, b)] {
                part = dilate(g, part, ax + 2, stride[ax])?;
                part = place(g, part, ax + 2, off as isize - padding[ax] as isize, xd[ax + 2])?;
            }
            dx = Some(match dx {
                None => part,
                Some(acc) => g.add(acc, part)?,
            });
        }
    }
    Ok(vec![dx])
}

/// `t` with `s − 1` zeros between consecutive elements along `axis`.
fn dilate(g: &mut Graph, t: NodeId, axis: usize, s: usize) -> Result<NodeId, IrError> {
    let d = dims(g, t)?;
    let n = d[axis];
    if s <= 1 || n == 0 {
        return Ok(t);
    }
    let mut e = d.clone();
    e.insert(axis + 1, 1);
    let t = g.reshape(t, &e)?;
    let mut pads = vec![(0, 0); e.len()];
    pads[axis + 1] = (0, s - 1);
    let t = g.pad(t, &pads, 0.0)?;
    let mut m = d;
    m[axis] = n * s;
    let t = g.reshape(t, &m)?;
    g.slice(t, axis as isize, 0, (n - 1) * s + 1, 1)
}

/// `t` placed along `axis` in a zero tensor of length `total` with its element 0 at `before`
/// (cropped where it falls outside, at either end).
fn place(g: &mut Graph, t: NodeId, axis: usize, before: isize, total: usize) -> Result<NodeId, IrError> {
    let len = dims(g, t)?[axis];
    let cut = usize::try_from(-before).unwrap_or(0).min(len);
    let begin = usize::try_from(before).unwrap_or(0).min(total);
    let keep = (len - cut).min(total - begin);
    let t = if cut > 0 || keep < len - cut { g.slice(t, axis as isize, cut, cut + keep, 1)? } else { t };
    let rank = dims(g, t)?.len();
    let mut pads = vec![(0, 0); rank];
    pads[axis] = (begin, total - begin - keep);
    g.pad(t, &pads, 0.0)
}
