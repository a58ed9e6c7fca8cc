//! Matmul epilogue fusion: MatMul → Add(bias) → activation becomes one FusedMatMul.

use super::{output_mask, sole_user, users, Rewriter};
use crate::OptError;
use rlx_backend::Capabilities;
use rlx_ir::{BinaryOp, Graph, NodeId, Op, OpKind, Shape, UnaryOp};
use std::collections::HashMap;

/// Activations a fused matmul epilogue may apply.
const EPILOGUE_ACTIVATIONS: [UnaryOp; 6] =
    [UnaryOp::Gelu, UnaryOp::GeluTanh, UnaryOp::Relu, UnaryOp::Silu, UnaryOp::Sigmoid, UnaryOp::Tanh];

/// One planned fusion, emitted at the position of its last node.
struct Epilogue {
    a: NodeId,
    b: NodeId,
    transpose_a: bool,
    transpose_b: bool,
    bias: Option<NodeId>,
    activation: Option<UnaryOp>,
}

/// Fuses `MatMul` + `Add` of a bias of shape \[N\] (or [1, …, 1, N]) + optionally one activation
/// (gelu, gelu_tanh, relu, silu, sigmoid, tanh) into `FusedMatMul`; a matmul followed directly by
/// one of those activations fuses too. Only when every intermediate value has no other reader and
/// is not a graph output, and only if the device runs `FusedMatMul` (and `Reshape`, when a
/// [1, …, 1, N] bias must become \[N\]).
pub fn fuse_matmul_epilogue(g: &Graph, caps: &Capabilities) -> Result<Graph, OptError> {
    let mut rw = Rewriter::new(g, "fuse_matmul_epilogue");
    let (plans, absorbed) =
        if caps.supports(OpKind::FusedMatMul) { plan(g, caps)? } else { Default::default() };
    for i in 0..g.len() {
        let id = NodeId(i as u32);
        if absorbed.get(i).copied().unwrap_or(false) {
            continue;
        }
        let Some(p) = plans.get(&i) else {
            rw.copy(id)?;
            continue;
        };
        let mut inputs = vec![rw.get(p.a)?, rw.get(p.b)?];
        if let Some(bias) = p.bias {
            let mut bias = rw.get(bias)?;
            let ty = rw.new.ty(bias)?;
            if ty.shape.rank() != 1 {
                let n = ty.shape.last();
                bias = rw.new.push(Op::Reshape(Shape::new(&[n])), &[bias])?;
            }
            inputs.push(bias);
        }
        let op = Op::FusedMatMul {
            transpose_a: p.transpose_a,
            transpose_b: p.transpose_b,
            bias: p.bias.is_some(),
            activation: p.activation,
        };
        rw.replace(id, op, &inputs)?;
    }
    rw.finish().map(|(g, _)| g)
}

type Plan = (HashMap<usize, Epilogue>, Vec<bool>);

fn plan(g: &Graph, caps: &Capabilities) -> Result<Plan, OptError> {
    let users = users(g);
    let outs = output_mask(g);
    let mut plans = HashMap::new();
    let mut absorbed = vec![false; g.len()];
    // Nodes already part of some chain: an Add of two matmuls could otherwise end two chains.
    let mut claimed = vec![false; g.len()];
    for (i, node) in g.nodes().iter().enumerate() {
        let Op::MatMul { transpose_a, transpose_b } = node.op else { continue };
        let &[a, b] = node.inputs.as_slice() else { continue };
        let m = NodeId(i as u32);
        let mut chain = vec![m];
        let mut next = sole_user(&users, &outs, m);

        let mut bias = None;
        if let Some(u) = next {
            let add = g.node(u)?;
            let other = match *add.inputs.as_slice() {
                [x, y] if x == m => Some(y),
                [x, y] if y == m => Some(x),
                _ => None,
            };
            if let (Op::Binary(BinaryOp::Add), Some(other)) = (&add.op, other) {
                let other = through_expand(g, other)?;
                if add.ty == node.ty && is_bias(g, other, &node.ty.shape, caps)? {
                    bias = Some(other);
                    chain.push(u);
                    next = sole_user(&users, &outs, u);
                }
            }
        }

        let mut activation = None;
        if let Some(u) = next {
            if let Op::Unary(act) = g.node(u)?.op {
                if EPILOGUE_ACTIVATIONS.contains(&act) {
                    activation = Some(act);
                    chain.push(u);
                }
            }
        }

        let taken = chain.iter().any(|n| claimed.get(n.index()).copied().unwrap_or(true));
        if taken || (bias.is_none() && activation.is_none()) {
            continue;
        }
        for n in &chain {
            if let Some(slot) = claimed.get_mut(n.index()) {
                *slot = true;
            }
        }
        let Some((&root, inner)) = chain.split_last() else { continue };
        for n in inner {
            if let Some(slot) = absorbed.get_mut(n.index()) {
                *slot = true;
            }
        }
        plans.insert(root.index(), Epilogue { a, b, transpose_a, transpose_b, bias, activation });
    }
    Ok((plans, absorbed))
}

/// The operand of an `Expand`, else `id` itself. On devices without native broadcasting,
/// legalize has expanded the bias to the matmul's shape; the fused op broadcasts it itself.
fn through_expand(g: &Graph, id: NodeId) -> Result<NodeId, OptError> {
    let node = g.node(id)?;
    Ok(match (&node.op, node.inputs.as_slice()) {
        (Op::Expand(_), &[src]) => src,
        _ => id,
    })
}

/// Whether `id` is a bias for a matmul of output shape `out`: same dtype, [N] or [1, …, 1, N]
/// with N the output's last dim (a [1, …, 1, N] one only when the device can reshape it).
fn is_bias(g: &Graph, id: NodeId, out: &Shape, caps: &Capabilities) -> Result<bool, OptError> {
    let ty = g.ty(id)?;
    let dims = ty.shape.dims();
    let Some((&n, lead)) = dims.split_last() else { return Ok(false) };
    let shape_ok = n == out.last() && lead.iter().all(|&d| d == 1) && dims.len() <= out.rank();
    Ok(shape_ok && (lead.is_empty() || caps.supports(OpKind::Reshape)))
}
