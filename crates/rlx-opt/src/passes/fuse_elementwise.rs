//! Elementwise fusion: trees of f32 unary/binary ops and wheres become one FusedElementwise.

use super::{output_mask, sole_user, users, Rewriter};
use crate::OptError;
use rlx_backend::{Capabilities, FusionLimits};
use rlx_ir::infer::broadcast_shapes;
use rlx_ir::{DType, EwProgram, EwStep, Graph, NodeId, Op, OpKind, Shape};
use std::collections::hash_map::Entry;
use std::collections::HashMap;

/// Fuses every maximal tree of f32 `Unary`/`Binary`/`Where` ops with at least two ops into one
/// `FusedElementwise`, if the device runs it. An op joins its reader's tree when that reader is
/// its only one and it is not a graph output; the tree's leaves become the fused node's inputs
/// (each once), except rank-0 f32 constants (or expands of them), which become `EwStep::Scalar`.
/// A where's condition (Bool) is always an input. A tree past the device's
/// [`Capabilities::fusion_limits`] is cut below its root (the root's operands become roots of
/// their own trees) until every tree fits.
pub fn fuse_elementwise(g: &Graph, caps: &Capabilities) -> Result<Graph, OptError> {
    let mut rw = Rewriter::new(g, "fuse_elementwise");
    let supported = caps.supports(OpKind::FusedElementwise);
    let fusible: Vec<bool> = g
        .nodes()
        .iter()
        .map(|n| {
            supported && matches!(n.op, Op::Unary(_) | Op::Binary(_) | Op::Where) && n.ty.dtype == DType::F32
        })
        .collect();
    let is = |n: usize| fusible.get(n).copied().unwrap_or(false);
    let users = users(g);
    let outs = output_mask(g);
    let mut absorbed: Vec<bool> = (0..g.len())
        .map(|i| is(i) && sole_user(&users, &outs, NodeId(i as u32)).is_some_and(|u| is(u.index())))
        .collect();
    // Roots: fusible nodes that are not absorbed but have an absorbed operand.
    let is_root = |absorbed: &[bool], i: usize| -> Result<bool, OptError> {
        let node = g.node(NodeId(i as u32))?;
        Ok(is(i)
            && !absorbed.get(i).copied().unwrap_or(false)
            && node.inputs.iter().any(|n| absorbed.get(n.index()).copied().unwrap_or(false)))
    };
    if let Some(limits) = caps.fusion_limits {
        fit_limits(g, &limits, &mut absorbed)?;
        // A tree whose inputs are not each one run of its output's dims (which only the root
        // knows) is cut below its root, until none is (each round only clears flags: it ends).
        loop {
            let mut cut = false;
            for i in 0..g.len() {
                if !is_root(&absorbed, i)? {
                    continue;
                }
                let id = NodeId(i as u32);
                let region = region_of(g, id, &absorbed)?;
                let shapes = region
                    .leaves
                    .iter()
                    .map(|&l| g.ty(l).map(|t| t.shape.dims()))
                    .collect::<Result<Vec<_>, _>>()?;
                let out = g.ty(id)?.shape.dims();
                if !limits.admits(&EwProgram { steps: region.steps }, &shapes, out) {
                    for &n in &g.node(id)?.inputs {
                        if let Some(a) = absorbed.get_mut(n.index()) {
                            cut |= *a;
                            *a = false;
                        }
                    }
                }
            }
            if !cut {
                break;
            }
        }
    }

    for i in 0..g.len() {
        let id = NodeId(i as u32);
        if absorbed.get(i).copied().unwrap_or(false) {
            continue;
        }
        if !is_root(&absorbed, i)? {
            rw.copy(id)?;
            continue;
        }
        let region = region_of(g, id, &absorbed)?;
        let inputs = region.leaves.iter().map(|&n| rw.get(n)).collect::<Result<Vec<_>, _>>()?;
        rw.replace(id, Op::FusedElementwise(EwProgram { steps: region.steps }), &inputs)?;
    }
    rw.finish().map(|(g, _)| g)
}

/// Cuts trees to the device's input and word limits, bottom-up in graph order: each fusible
/// node takes its absorbed operands' trees (the cheapest first) while the words and the
/// distinct inputs stay within `limits`; an operand that does not fit stops being absorbed and
/// becomes an input (the root of its own tree, which already fits). Words and inputs are
/// counted as `build_program` makes them, rank-0 constants as scalar words, so that a long
/// chain becomes fused nodes of about `max_words` ops each.
fn fit_limits(g: &Graph, limits: &FusionLimits, absorbed: &mut [bool]) -> Result<(), OptError> {
    let n = g.len();
    let mut words = vec![0usize; n];
    let mut leaves: Vec<Vec<NodeId>> = vec![Vec::new(); n];
    let take = |ins: &mut Vec<NodeId>, x: NodeId| {
        if !ins.contains(&x) {
            ins.push(x);
        }
    };
    for i in 0..n {
        let node = g.node(NodeId(i as u32))?;
        let is_absorbed = |x: NodeId| absorbed.get(x.index()).copied().unwrap_or(false);
        if !matches!(node.op, Op::Unary(_) | Op::Binary(_) | Op::Where) || node.ty.dtype != DType::F32 {
            continue;
        }
        let mut w = 1;
        let mut ins: Vec<NodeId> = Vec::new();
        let mut parts: Vec<NodeId> = Vec::new();
        for &x in &node.inputs {
            if is_absorbed(x) {
                parts.push(x);
            } else if scalar_value(g, x)?.is_some() {
                w += 1;
            } else {
                take(&mut ins, x);
            }
        }
        parts.sort_by_key(|x| words.get(x.index()).copied().unwrap_or(0));
        let base = (w, ins.clone());
        let mut cut = Vec::new();
        for x in parts.iter().copied() {
            let mut merged = ins.clone();
            for &l in leaves.get(x.index()).map(Vec::as_slice).unwrap_or(&[]) {
                take(&mut merged, l);
            }
            let xw = words.get(x.index()).copied().unwrap_or(0);
            if w + xw <= limits.max_words && merged.len() <= limits.max_inputs {
                w += xw;
                ins = merged;
            } else {
                cut.push(x);
                take(&mut ins, x);
            }
        }
        if ins.len() > limits.max_inputs || w > limits.max_words {
            // Cutting some made too many inputs: take none of the operands' trees.
            (w, ins) = base;
            cut = parts.clone();
            for &x in &parts {
                take(&mut ins, x);
            }
        }
        for x in cut {
            if let Some(a) = absorbed.get_mut(x.index()) {
                *a = false;
            }
        }
        words[i] = w;
        leaves[i] = ins;
    }
    Ok(())
}

/// The fused program of the tree rooted at `root`: rank-0 constants as scalars, unless that
/// would change the output shape (the scalars were all that fixed it), then every leaf an input.
fn region_of(g: &Graph, root: NodeId, absorbed: &[bool]) -> Result<Region, OptError> {
    let region = build_program(g, root, absorbed, true)?;
    if broadcast_all(g, &region.leaves)? != g.ty(root)?.shape || region.leaves.is_empty() {
        return build_program(g, root, absorbed, false);
    }
    Ok(region)
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
                Op::Where => EwStep::Where(r(0)?, r(1)?, r(2)?),
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
