//! Residual add + norm fusion.

use super::{output_mask, sole_user, users, Rewriter};
use crate::OptError;
use rlx_backend::Capabilities;
use rlx_ir::{BinaryOp, Graph, NodeId, NormKind, Op, OpKind};
use std::collections::HashMap;

/// Fuses `Add(x, residual)` (same shape and dtype, no broadcasting) whose only reader is a
/// `LayerNorm`/`RmsNorm` normalising it into `AddNorm`, if the device runs `AddNorm`. The sum
/// must not be a graph output (the fused op does not return it).
pub fn fuse_add_norm(g: &Graph, caps: &Capabilities) -> Result<Graph, OptError> {
    let mut rw = Rewriter::new(g, "fuse_add_norm");
    if !caps.supports(OpKind::AddNorm) {
        for i in 0..g.len() {
            rw.copy(NodeId(i as u32))?;
        }
        return rw.finish().map(|(g, _)| g);
    }
    let users = users(g);
    let outs = output_mask(g);
    // Plan first: the sum precedes its norm, so it must be known as absorbed before the walk.
    let mut plans = HashMap::new();
    let mut absorbed = vec![false; g.len()];
    for (i, node) in g.nodes().iter().enumerate() {
        let id = NodeId(i as u32);
        let plan = match (&node.op, node.inputs.as_slice()) {
            (Op::LayerNorm { eps }, &[sum, gamma, beta]) => residual_operands(g, &users, &outs, sum, id)?
                .map(|(x, r)| (sum, NormKind::LayerNorm, *eps, vec![x, r, gamma, beta])),
            (Op::RmsNorm { eps }, &[sum, gamma]) => residual_operands(g, &users, &outs, sum, id)?
                .map(|(x, r)| (sum, NormKind::RmsNorm, *eps, vec![x, r, gamma])),
            _ => None,
        };
        if let Some((sum, norm, eps, inputs)) = plan {
            if let Some(slot) = absorbed.get_mut(sum.index()) {
                *slot = true;
            }
            plans.insert(i, (Op::AddNorm { norm, eps }, inputs));
        }
    }
    for i in 0..g.len() {
        let id = NodeId(i as u32);
        if absorbed.get(i).copied().unwrap_or(false) {
            continue;
        }
        match plans.get(&i) {
            Some((op, old_inputs)) => {
                let inputs = old_inputs.iter().map(|&n| rw.get(n)).collect::<Result<Vec<_>, _>>()?;
                rw.replace(id, op.clone(), &inputs)?;
            }
            None => {
                rw.copy(id)?;
            }
        }
    }
    rw.finish().map(|(g, _)| g)
}

/// `(x, residual)` when `sum` is an `Add` of two same-typed values whose only reader is `norm`.
fn residual_operands(
    g: &Graph,
    users: &[Vec<NodeId>],
    outs: &[bool],
    sum: NodeId,
    norm: NodeId,
) -> Result<Option<(NodeId, NodeId)>, OptError> {
    let node = g.node(sum)?;
    let (Op::Binary(BinaryOp::Add), &[x, r]) = (&node.op, node.inputs.as_slice()) else { return Ok(None) };
    if sole_user(users, outs, sum) != Some(norm) {
        return Ok(None);
    }
    Ok((g.ty(x)? == &node.ty && g.ty(r)? == &node.ty).then_some((x, r)))
}
