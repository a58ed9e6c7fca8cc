//! Gradients of the data-movement ops: each puts the output's gradient back where its values
//! came from (reshape, permute, slice, concat, expand, gather, pad, reverse, upsample), and of
//! two linear maps given by their adjoints: RoPE (a rotation, whose transpose rotates by the
//! opposite angle) and the FFT (whose adjoint is the conjugate transform: N·ifft for the
//! unscaled forward transform, fft/N for the inverse).

use super::{dims, reduce_to, At, Grads, RuleError};
use crate::{Graph, IrError, NodeId, Op};

pub(super) fn shape(g: &mut Graph, at: &At<'_>, dy: NodeId) -> Grads {
    let x = at.input(0);
    let dt = at.dtype();
    if !dt.is_float() {
        return Err(RuleError::NoRule(format!("{} of {dt} values has no gradient", at.node.op.name())));
    }
    let xd = dims(g, x)?;
    let dx = match &at.node.op {
        Op::Reshape(_) => g.reshape(dy, &xd)?,
        Op::Permute(perm) => {
            let mut inv = vec![0; perm.len()];
            for (i, &p) in perm.iter().enumerate() {
                inv[p] = i;
            }
            g.permute(dy, &inv)?
        }
        Op::Expand(_) => {
            let s = g.ty(x)?.shape.clone();
            reduce_to(g, dy, &s)?
        }
        Op::Slice { axis, start, end: _, step } => slice_back(g, dy, &xd, *axis, *start, *step)?,
        Op::Concat { axis } => return concat(g, at, *axis, dy),
        Op::Gather { axis } => gather(g, x, at.input(1), *axis, dy)?,
        Op::Pad { pads, .. } => {
            let mut d = dy;
            for (a, &(before, _)) in pads.iter().enumerate() {
                if dims(g, d)?[a] != xd[a] {
                    d = g.slice(d, a as isize, before, before + xd[a], 1)?;
                }
            }
            d
        }
        Op::Reverse { axes } => {
            let ax: Vec<isize> = axes.iter().map(|&a| a as isize).collect();
            g.reverse(dy, &ax)?
        }
        // Each input pixel was copied to a 2×2 block: sum the block.
        Op::Upsample2x => {
            let (n, c, h, w) = (xd[0], xd[1], xd[2], xd[3]);
            let d = g.reshape(dy, &[n, c, h, 2, w, 2])?;
            g.sum(d, &[3, 5], false)?
        }
        Op::Rope { .. } => {
            if at.need[1] || at.need[2] {
                return Err(RuleError::NoRule(
                    "rope's gradient with respect to its cos/sin tables is not implemented; make \
                     the tables inputs or constants"
                        .into(),
                ));
            }
            let (cos, sin) = (at.input(1), at.input(2));
            let nsin = g.neg(sin)?;
            g.push(at.node.op.clone(), &[dy, cos, nsin])?
        }
        Op::Fft { inverse } => {
            let n = xd[xd.len() - 2];
            let t = g.push(Op::Fft { inverse: !inverse }, &[dy])?;
            let k = super::scalar(g, dt, if *inverse { 1.0 / n as f64 } else { n as f64 })?;
            g.mul(t, k)?
        }
        other => return Err(RuleError::NoRule(format!("{} is not a shape op", other.name()))),
    };
    let mut grads = vec![None; at.node.inputs.len()];
    grads[0] = Some(dx);
    Ok(grads)
}

/// The gradient of a slice `start, start + step, …` along `axis`: dy's elements put back at
/// those positions of a zero tensor of x's shape (zeros interleaved for step > 1, then padded).
fn slice_back(
    g: &mut Graph,
    dy: NodeId,
    xd: &[usize],
    axis: usize,
    start: usize,
    step: usize,
) -> Result<NodeId, IrError> {
    let mut dd = dims(g, dy)?;
    let n = dd[axis];
    let len = xd[axis];
    let dt = g.ty(dy)?.dtype;
    if n == 0 {
        return zeros(g, xd, dt);
    }
    let mut d = dy;
    let mut span = n;
    if step > 1 {
        let mut e = dd.clone();
        e.insert(axis + 1, 1);
        d = g.reshape(d, &e)?;
        let mut pads = vec![(0, 0); e.len()];
        pads[axis + 1] = (0, step - 1);
        d = g.pad(d, &pads, 0.0)?;
        span = n * step;
        dd[axis] = span;
        d = g.reshape(d, &dd)?;
    }
    // The trailing zeros after the last element may run past x's end: trim them.
    let room = len.saturating_sub(start);
    if span > room {
        d = g.slice(d, axis as isize, 0, room, 1)?;
        span = room;
    }
    let mut pads = vec![(0, 0); xd.len()];
    pads[axis] = (start, len - start - span);
    g.pad(d, &pads, 0.0)
}

fn zeros(g: &mut Graph, d: &[usize], dt: crate::DType) -> Result<NodeId, IrError> {
    let z = g.full(&[], dt, 0.0)?;
    g.expand(z, d)
}

/// Each operand gets its own stretch of dy along `axis`.
fn concat(g: &mut Graph, at: &At<'_>, axis: usize, dy: NodeId) -> Grads {
    let mut off = 0;
    let mut grads = Vec::with_capacity(at.node.inputs.len());
    for (i, &x) in at.node.inputs.iter().enumerate() {
        let len = dims(g, x)?[axis];
        grads.push(if at.need[i] { Some(g.slice(dy, axis as isize, off, off + len, 1)?) } else { None });
        off += len;
    }
    Ok(grads)
}

/// The gradient of a gather (an embedding lookup on axis 0) puts dy back into the rows its
/// indices picked: a native [`Op::ScatterAdd`], which sums each row's contributions in
/// increasing index order, so the gradient is bit-identical run to run on every backend. It
/// reads dy once and writes the table's gradient once (the one-hot matmul it replaces
/// materialised an [n, V] matrix: 2 GB for a BERT vocabulary and 16384 tokens). Out-of-range
/// indices (which gather as zeros) add nothing. An empty table (V = 0) gets an empty gradient.
fn gather(g: &mut Graph, data: NodeId, ids: NodeId, axis: usize, dy: NodeId) -> Result<NodeId, IrError> {
    let dd = dims(g, data)?;
    let v = dd[axis];
    if v == 0 {
        return zeros(g, &dd, g.ty(data)?.dtype);
    }
    g.scatter_add(ids, dy, axis as isize, v)
}

/// The gradient of a scatter-add with respect to its source: each source row received by row
/// v of the output gets dy's row v, a gather of dy by the same ids (an id outside [0, len) added
/// nothing, and gathers zeros). The ids are integers and get none.
pub(super) fn scatter_add(g: &mut Graph, at: &At<'_>, axis: usize, dy: NodeId) -> Grads {
    if at.need[0] {
        return Err(RuleError::NoRule(
            "scatter_add's ids are integers and have no gradient; differentiate with respect to \
             its source"
                .into(),
        ));
    }
    let ds = g.gather(dy, at.input(0), axis as isize)?;
    Ok(vec![None, Some(ds)])
}
