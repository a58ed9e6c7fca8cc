//! Attention as matmul → scale → soft-cap → mask → softmax → matmul.
//!
//! Works in [B, H, S, D]: a [B, S, H, D] operand is permuted in and the result permuted back.
//! Grouped-query attention repeats each kv head Hq/Hkv times (reshape → expand → reshape), so query
//! head h reads kv head h / (Hq/Hkv). Causal and sliding-window masks become a constant Bool
//! [Sq, Sk] table selecting between the score and −∞; a padding mask selects the same way per
//! key; a bias is added. Rows where every key is masked (possible with padding or bias) give
//! zeros, as the op's definition says, instead of the NaN a plain softmax of −∞ would give.

use super::decompose::{binary, narrow, reduce_last, unary, widen};
use super::legalize::Emitter;
use crate::OptError;
use rlx_ir::{
    AttentionSpec, AttnGradPart, AttnLayout, BinaryOp, CompareOp, DType, Graph, IrError, MaskKind, NodeId,
    Op, ReduceOp, Shape, Tensor, UnaryOp,
};

const TO_BHSD: [usize; 4] = [0, 2, 1, 3];

/// A part of attention's gradient as rlx-ir's composition of forward ops
/// (`rlx_ir::attention_grad_composed`, which holds the [B, H, Sq, Sk] matrix), built in a
/// scratch graph over the operands' types and emitted op by op (each legalized in turn).
pub(crate) fn attention_grad(
    em: &mut Emitter<'_>,
    spec: &AttentionSpec,
    part: AttnGradPart,
    inputs: &[NodeId],
) -> Result<NodeId, OptError> {
    let mut g = Graph::new("attention_grad");
    let mut leaves = Vec::with_capacity(inputs.len());
    for (i, &x) in inputs.iter().enumerate() {
        let ty = em.ty(x)?.clone();
        leaves.push(g.input(&format!("operand{i}"), ty.shape.dims(), ty.dtype)?);
    }
    let out = rlx_ir::attention_grad_composed(&mut g, spec, part, &leaves)?;
    // The inputs are the scratch graph's first nodes, in order.
    let mut map: Vec<NodeId> = Vec::with_capacity(g.len());
    for node in g.nodes() {
        let id = match &node.op {
            Op::Input { .. } => inputs[map.len()],
            // The parts of one attention's gradient recompute the same scores and
            // probabilities from the same operands: each is emitted once.
            op => {
                let ins: Vec<NodeId> = node.inputs.iter().map(|i| map[i.0 as usize]).collect();
                em.emit_shared(op.clone(), &ins)?
            }
        };
        map.push(id);
    }
    Ok(map[out.0 as usize])
}

pub(crate) fn attention(
    em: &mut Emitter<'_>,
    spec: &AttentionSpec,
    inputs: &[NodeId],
) -> Result<NodeId, OptError> {
    if spec.kv_lengths {
        return Err(em.unsupported(
            "attention",
            "attention with run-time kv lengths has no decomposition; run it on a device with \
             native attention (every rlx backend has it)"
                .into(),
        ));
    }
    let (q, k, v, mask) = match inputs {
        [q, k, v] => (*q, *k, *v, None),
        [q, k, v, m] => (*q, *k, *v, Some(*m)),
        _ => {
            return Err(
                IrError::Arity { op: "attention", expected: "3 or 4".into(), got: inputs.len() }.into()
            )
        }
    };
    let dtype = em.ty(q)?.dtype;
    let (mut q, mut k, mut v) = (widen(em, q)?, widen(em, k)?, widen(em, v)?);
    if spec.layout == AttnLayout::Bshd {
        q = em.emit(Op::Permute(TO_BHSD.to_vec()), &[q])?;
        k = em.emit(Op::Permute(TO_BHSD.to_vec()), &[k])?;
        v = em.emit(Op::Permute(TO_BHSD.to_vec()), &[v])?;
    }
    let (hq, sq, d) = match em.dims(q)?.as_slice() {
        &[_, hq, sq, d] => (hq, sq, d),
        _ => return Err(rank_error(em, q)?),
    };
    let (hkv, sk) = match em.dims(k)?.as_slice() {
        &[_, hkv, sk, _] => (hkv, sk),
        _ => return Err(rank_error(em, k)?),
    };
    if hq != hkv && hkv != 0 {
        k = repeat_heads(em, k, hq / hkv)?;
        v = repeat_heads(em, v, hq / hkv)?;
    }

    let mut scores = em.emit(Op::MatMul { transpose_a: false, transpose_b: true }, &[q, k])?;
    let scale = spec.scale.map(f64::from).unwrap_or_else(|| 1.0 / (d as f64).sqrt());
    let scale = em.scalar(DType::F32, scale)?;
    scores = binary(em, BinaryOp::Mul, scores, scale)?;
    if let Some(cap) = spec.softcap {
        let cap = em.scalar(DType::F32, f64::from(cap))?;
        let t = binary(em, BinaryOp::Div, scores, cap)?;
        let t = unary(em, UnaryOp::Tanh, t)?;
        scores = binary(em, BinaryOp::Mul, t, cap)?;
    }

    let neg_inf = em.scalar(DType::F32, f64::NEG_INFINITY)?;
    let mut may_mask_whole_rows = false;
    match (spec.mask, mask) {
        (MaskKind::None, _) => {}
        (MaskKind::Causal, _) => {
            let visible = position_mask(em, sq, sk, None)?;
            scores = em.emit(Op::Where, &[visible, scores, neg_inf])?;
        }
        (MaskKind::SlidingWindow(window), _) => {
            let visible = position_mask(em, sq, sk, Some(window))?;
            scores = em.emit(Op::Where, &[visible, scores, neg_inf])?;
        }
        (MaskKind::Padding, Some(m)) => {
            let visible = padding_mask(em, m)?;
            scores = em.emit(Op::Where, &[visible, scores, neg_inf])?;
            may_mask_whole_rows = true;
        }
        (MaskKind::Bias, Some(bias)) => {
            let bias = widen(em, bias)?;
            scores = binary(em, BinaryOp::Add, scores, bias)?;
            may_mask_whole_rows = true;
        }
        (MaskKind::Padding | MaskKind::Bias, None) => {
            return Err(
                IrError::Arity { op: "attention", expected: "4 (q, k, v, mask)".into(), got: 3 }.into()
            )
        }
    }

    let mut probs = em.emit(Op::Softmax, &[scores])?;
    if may_mask_whole_rows {
        // A row whose maximum is −∞ has no visible key: its output is zeros. (A NaN row keeps
        // its NaN: NaN is not equal to −∞.)
        let row_max = reduce_last(em, ReduceOp::Max, scores)?;
        let dead = em.emit(Op::Compare(CompareOp::Eq), &[row_max, neg_inf])?;
        let zero = em.scalar(DType::F32, 0.0)?;
        probs = em.emit(Op::Where, &[dead, zero, probs])?;
    }
    let mut out = em.emit(Op::MatMul { transpose_a: false, transpose_b: false }, &[probs, v])?;
    if spec.layout == AttnLayout::Bshd {
        out = em.emit(Op::Permute(TO_BHSD.to_vec()), &[out])?;
    }
    narrow(em, out, dtype)
}

/// [B, Hkv, S, D] → [B, Hkv·groups, S, D], each head repeated `groups` times in a row.
fn repeat_heads(em: &mut Emitter<'_>, x: NodeId, groups: usize) -> Result<NodeId, OptError> {
    let (b, h, s, d) = match em.dims(x)?.as_slice() {
        &[b, h, s, d] => (b, h, s, d),
        _ => return Err(rank_error(em, x)?),
    };
    let x = em.emit(Op::Reshape(Shape::new(&[b, h, 1, s, d])), &[x])?;
    let x = em.emit(Op::Expand(Shape::new(&[b, h, groups, s, d])), &[x])?;
    em.emit(Op::Reshape(Shape::new(&[b, h * groups, s, d])), &[x])
}

/// Bool [Sq, Sk]: key j visible to query i (at absolute position i + Sk − Sq) when j ≤ that
/// position and, with a window w, j > position − w.
fn position_mask(
    em: &mut Emitter<'_>,
    sq: usize,
    sk: usize,
    window: Option<usize>,
) -> Result<NodeId, OptError> {
    let offset = sk.saturating_sub(sq);
    let mut visible = Vec::with_capacity(sq * sk);
    for i in 0..sq {
        let pos = i + offset;
        for j in 0..sk {
            let in_window = window.is_none_or(|w| j + w > pos);
            visible.push(j <= pos && in_window);
        }
    }
    em.constant(Tensor::from_bool(Shape::new(&[sq, sk]), visible)?)
}

/// The padding mask [B, Sk] (nonzero = attend) as Bool [B, 1, 1, Sk].
fn padding_mask(em: &mut Emitter<'_>, m: NodeId) -> Result<NodeId, OptError> {
    let ty = em.ty(m)?.clone();
    let (b, sk) = match ty.shape.dims() {
        &[b, sk] => (b, sk),
        _ => return Err(rank_error(em, m)?),
    };
    let visible = if ty.dtype == DType::Bool {
        m
    } else {
        let zero = em.scalar(ty.dtype, 0.0)?;
        em.emit(Op::Compare(CompareOp::Ne), &[m, zero])?
    };
    em.emit(Op::Reshape(Shape::new(&[b, 1, 1, sk])), &[visible])
}

fn rank_error(em: &Emitter<'_>, x: NodeId) -> Result<OptError, OptError> {
    Ok(IrError::Attribute {
        op: "attention",
        attr: "operand rank",
        shape: em.ty(x)?.shape.clone(),
        reason: "q, k and v must be rank 4 and the padding mask rank 2".into(),
    }
    .into())
}
