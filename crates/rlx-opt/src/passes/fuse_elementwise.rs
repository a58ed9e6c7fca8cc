//! Elementwise fusion: trees of f32 unary/binary ops become one FusedElementwise.

use super::{output_mask, sole_user, users, Rewriter};
use crate::OptError;
use rlx_backend::Capabilities;
use rlx_ir::infer::broadcast_shapes;
use rlx_ir::{DType, EwProgram, EwStep, Graph, NodeId, Op, OpKind, Shape};
use std::collections::hash_map::Entry;
use std::collections::HashMap;

/// Fuses every maximal tree of f32 `Unary`/`Binary` ops with at least two ops into one
/// `FusedElementwise`, if the device runs it. An op joins its reader's tree when that reader is
/// its only one and it is not a graph output; the tree's leaves become the fused node's inputs
/// (each once), except rank-0 f32 constants (or expands of them), which become `EwStep::Scalar`.
pub fn fuse_elementwise(g: &Graph, caps: &Capabilities) -> Result<Graph, OptError> {
    let mut rw = Rewriter::new(g, "fuse_elementwise");
    let supported = caps.supports(OpKind::FusedElementwise);
    let fusible: Vec<bool> = g
        .nodes()
        .iter()
        .map(|n| supported && matches!(n.op, Op::Unary(_) | Op::Binary(_)) && n.ty.dtype == DType::F32)
        .collect();
    let users = users(g);
    let outs = output_mask(g);
    let absorbed: Vec<bool> = (0..g.len())
        .map(|i| {
            let is = |n: usize| fusible.get(n).copied().unwrap_or(false);
            is(i) && sole_user(&users, &outs, NodeId(i as u32)).is_some_and(|u| is(u.index()))
        })
        .collect();

    for i in 0..g.len() {
        let id = NodeId(i as u32);
        if absorbed.get(i).copied().unwrap_or(false) {
            continue;
        }
        let node = g.node(id)?;
        let has_absorbed_operand =
            node.inputs.iter().any(|n| absorbed.get(n.index()).copied().unwrap_or(false));
        if !(fusible.get(i).copied().unwrap_or(false) && has_absorbed_operand) {
            rw.copy(id)?;
            continue;
        }
        let mut region = build_program(g, id, &absorbed, true)?;
        if broadcast_all(g, &region.leaves)? != node.ty.shape || region.leaves.is_empty() {
            // Turning constants into scalars would change the output shape (the scalars were all
            // that fixed it): keep every leaf an input.
            region = build_program(g, id, &absorbed, false)?;
        }
        let inputs = region.leaves.iter().map(|&n| rw.get(n)).collect::<Result<Vec<_>, _>>()?;
        rw.replace(id, Op::FusedElementwise(EwProgram { steps: region.steps }), &inputs)?;
    }
    rw.finish().map(|(g, _)| g)
}

struct Region {
    steps: Vec<EwStep>,
    /// Old ids of the fused node's inputs, in `EwStep::Input` order.
    leaves: Vec<NodeId>,
}

/// The program computing `root` from the leaves of its tree, operands before the ops reading
/// them. Iterative, so a chain of thousands of ops cannot overflow the stack.
fn build_program(g: &Graph, root: NodeId, absorbed: &[bool], scalars: bool) -> Result<Region, OptError> {
    let mut steps = Vec::new();
    let mut leaves = Vec::new();
    let mut reg: HashMap<NodeId, usize> = HashMap::new();
    let mut stack = vec![(root, false)];
    while let Some((n, operands_done)) = stack.pop() {
        let node = g.node(n)?;
        if operands_done {
            let r = |i: usize| -> Result<usize, OptError> {
                node.inputs.get(i).and_then(|inp| reg.get(inp)).copied().ok_or_else(|| OptError::Invariant {
                    pass: "fuse_elementwise",
                    node: n,
                    reason: "operand has no register".into(),
                })
            };
            let step = match node.op {
                Op::Unary(op) => EwStep::Unary(op, r(0)?),
                Op::Binary(op) => EwStep::Binary(op, r(0)?, r(1)?),
                _ => {
                    return Err(OptError::Invariant {
                        pass: "fuse_elementwise",
                        node: n,
                        reason: format!("{} is not a fusible op", node.op.name()),
                    })
                }
            };
            steps.push(step);
            reg.insert(n, steps.len() - 1);
            continue;
        }
        stack.push((n, true));
        for &inp in node.inputs.iter().rev() {
            if absorbed.get(inp.index()).copied().unwrap_or(false) {
                stack.push((inp, false));
            } else if let Entry::Vacant(slot) = reg.entry(inp) {
                let step = match scalar_value(g, inp)? {
                    Some(v) if scalars => EwStep::Scalar(v),
                    _ => {
                        leaves.push(inp);
                        EwStep::Input(leaves.len() - 1)
                    }
                };
                steps.push(step);
                slot.insert(steps.len() - 1);
            }
        }
    }
    Ok(Region { steps, leaves })
}

/// The value of a rank-0 f32 constant, or of an `Expand` of one (what legalize makes of a
/// scalar operand on a device without native broadcasting).
fn scalar_value(g: &Graph, id: NodeId) -> Result<Option<f32>, OptError> {
    let node = g.node(id)?;
    Ok(match (&node.op, node.inputs.as_slice()) {
        (Op::Constant(t), _) if t.shape().rank() == 0 => t.as_f32().and_then(|v| v.first().copied()),
        (Op::Expand(_), &[src]) => match &g.node(src)?.op {
            Op::Constant(t) if t.shape().rank() == 0 => t.as_f32().and_then(|v| v.first().copied()),
            _ => None,
        },
        _ => None,
    })
}

fn broadcast_all(g: &Graph, ids: &[NodeId]) -> Result<Shape, OptError> {
    let mut out = Shape::scalar();
    for &i in ids {
        out = broadcast_shapes("fused_elementwise", &out, &g.ty(i)?.shape)?;
    }
    Ok(out)
}
