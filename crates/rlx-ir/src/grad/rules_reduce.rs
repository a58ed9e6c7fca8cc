//! Gradients of the reductions (sum, mean, max, min, prod), top-k values, cumsum and matmul.

use super::{dims, reduce_to, scalar, At, Grads, RuleError};
use crate::{Graph, NodeId, Op, ReduceOp, Tensor, TopKOutput};

/// Sum and mean spread the gradient evenly over the reduced axes; max and min give it to the
/// elements equal to the extreme, split evenly between ties (as PyTorch's amax/amin do); prod
/// gives each element the product of the others.
pub(super) fn reduce(
    g: &mut Graph,
    at: &At<'_>,
    op: ReduceOp,
    axes: &[usize],
    keepdim: bool,
    dy: NodeId,
) -> Grads {
    let (x, dt) = (at.input(0), at.dtype());
    if !dt.is_float() {
        return Err(RuleError::NoRule(format!("{} of {dt} values has no gradient", op.name())));
    }
    let xd = dims(g, x)?;
    let mut kept = xd.clone();
    for &a in axes {
        kept[a] = 1;
    }
    let dyk = if keepdim { dy } else { g.reshape(dy, &kept)? };
    let dx = match op {
        ReduceOp::Sum => g.expand(dyk, &xd)?,
        ReduceOp::Mean => {
            let count: usize = axes.iter().map(|&a| xd[a]).product();
            let k = scalar(g, dt, 1.0 / count.max(1) as f64)?;
            let d = g.mul(dyk, k)?;
            g.expand(d, &xd)?
        }
        ReduceOp::Max | ReduceOp::Min => {
            let yk = if keepdim { at.id } else { g.reshape(at.id, &kept)? };
            let hit = g.eq(x, yk)?;
            let mask = g.cast(hit, dt)?;
            let ax: Vec<isize> = axes.iter().map(|&a| a as isize).collect();
            let ties = g.sum(mask, &ax, true)?;
            let share = g.div(dyk, ties)?;
            g.mul(mask, share)?
        }
        // dx_i = Π_{j≠i} x_j, zeros included: with P the product of the nonzero elements and
        // z the count of zeros, it is P/x_i when z = 0, P at the zero when z = 1, else 0.
        ReduceOp::Prod => {
            let ax: Vec<isize> = axes.iter().map(|&a| a as isize).collect();
            let (zero, one) = (scalar(g, dt, 0.0)?, scalar(g, dt, 1.0)?);
            let is0 = g.eq(x, zero)?;
            let nz = g.where_(is0, one, x)?;
            let p = g.prod(nz, &ax, true)?;
            let z = g.cast(is0, dt)?;
            let z = g.sum(z, &ax, true)?;
            let (no_zero, one_zero) = (g.eq(z, zero)?, g.eq(z, one)?);
            let others = g.div(p, nz)?;
            let at_nonzero = g.where_(no_zero, others, zero)?;
            let at_zero = g.where_(one_zero, p, zero)?;
            let d = g.where_(is0, at_zero, at_nonzero)?;
            g.mul(d, dyk)?
        }
    };
    Ok(vec![Some(dx)])
}

/// Top-k values: each picked element gets its value's gradient, the rest zero. The indices
/// (the op's sibling node, recomputed) scatter dy back by a one-hot contraction along the
/// axis, as gather's gradient does: [rows, k, n] for rows of n, fine for the k and n of
/// sampling and MoE routing.
pub(super) fn topk(
    g: &mut Graph,
    at: &At<'_>,
    (k, axis, largest): (usize, usize, bool),
    output: TopKOutput,
    dy: NodeId,
) -> Grads {
    let dt = at.dtype();
    if output == TopKOutput::Indices || !dt.is_float() {
        return Err(RuleError::NoRule(format!("top-k {} are discrete: no gradient", at.node.op.name())));
    }
    let x = at.input(0);
    let xd = dims(g, x)?;
    let n = xd[axis];
    let idx = g.push(Op::TopK { k, axis, largest, output: TopKOutput::Indices }, &[x])?;
    let mut perm: Vec<usize> = (0..xd.len()).filter(|&a| a != axis).collect();
    perm.push(axis);
    let mut inv = vec![0; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        inv[p] = i;
    }
    let rows: usize = xd.iter().enumerate().filter(|&(a, _)| a != axis).map(|(_, &d)| d).product();
    let idx = g.permute(idx, &perm)?;
    let idx = g.reshape(idx, &[rows, k, 1])?;
    let d = g.permute(dy, &perm)?;
    let d = g.reshape(d, &[rows, k, 1])?;
    let iota = g.constant(Tensor::from_i32([1, 1, n], (0..n).map(|i| i as i32).collect())?)?;
    let hit = g.eq(idx, iota)?;
    let onehot = g.cast(hit, dt)?;
    let spread = g.mul(onehot, d)?;
    let back = g.sum(spread, &[1], false)?;
    let pd: Vec<usize> = perm.iter().map(|&a| xd[a]).collect();
    let back = g.reshape(back, &pd)?;
    Ok(vec![Some(g.permute(back, &inv)?)])
}

/// The gradient of an inclusive prefix sum is the suffix sum of the gradient.
pub(super) fn cumsum(g: &mut Graph, at: &At<'_>, axis: usize, dy: NodeId) -> Grads {
    if !at.dtype().is_float() {
        return Err(RuleError::NoRule(format!("cumsum of {} values has no gradient", at.dtype())));
    }
    let a = axis as isize;
    let r = g.reverse(dy, &[a])?;
    let c = g.cumsum(r, a)?;
    Ok(vec![Some(g.reverse(c, &[a])?)])
}

/// y = A'·B' with A' = a or aᵀ, B' = b or bᵀ (last two dims), batch dims broadcast:
/// dA' = dy·B'ᵀ and dB' = A'ᵀ·dy, transposed back where the operand was, then summed over the
/// batch dims the operand was broadcast along.
pub(super) fn matmul(g: &mut Graph, at: &At<'_>, ta: bool, tb: bool, dy: NodeId) -> Grads {
    let (a, b) = (at.input(0), at.input(1));
    if !at.dtype().is_float() {
        return Err(RuleError::NoRule(format!("matmul of {} values has no gradient", at.dtype())));
    }
    let da = if at.need[0] {
        // ta: da = (dy·B'ᵀ)ᵀ = B'·dyᵀ.
        let d = if ta { g.matmul_t(b, dy, tb, true)? } else { g.matmul_t(dy, b, false, !tb)? };
        let s = g.ty(a)?.shape.clone();
        Some(reduce_to(g, d, &s)?)
    } else {
        None
    };
    let db = if at.need[1] {
        // tb: db = (A'ᵀ·dy)ᵀ = dyᵀ·A'.
        let d = if tb { g.matmul_t(dy, a, true, ta)? } else { g.matmul_t(a, dy, !ta, false)? };
        let s = g.ty(b)?.shape.clone();
        Some(reduce_to(g, d, &s)?)
    } else {
        None
    };
    Ok(vec![da, db])
}
