//! Decompositions of composite ops into simpler ones, used by legalize for ops a device lacks.
//!
//! Every decomposition emits through [`Emitter::emit`], so the ops it produces are themselves
//! legalized (decomposed again or expanded) as the device needs. f16 and bf16 operands are widened to f32
//! for the whole decomposition and the result is rounded back once, so a decomposed f16 norm is
//! as accurate as a native one that accumulates in f32.

use super::decompose_attention::{attention, attention_grad};
use super::decompose_vision::{conv2d, pool2d, upsample2x};
use super::legalize::Emitter;
use crate::OptError;
use rlx_ir::infer::broadcast_shapes;
use rlx_ir::{BinaryOp, DType, EwProgram, EwStep, NodeId, NormKind, Op, OpKind, ReduceOp, Shape, UnaryOp};

/// The op kinds `decompose` rewrites into other ops: a device that lacks one of these still
/// runs it, as the ops it decomposes into (so nothing ever falls back to the host). Any other
/// kind a device lacks is an `Unsupported` error.
pub const DECOMPOSABLE: [OpKind; 12] = [
    OpKind::LayerNorm,
    OpKind::RmsNorm,
    OpKind::Softmax,
    OpKind::LogSoftmax,
    OpKind::Attention,
    OpKind::AttentionGrad,
    OpKind::FusedMatMul,
    OpKind::AddNorm,
    OpKind::FusedElementwise,
    OpKind::Conv2d,
    OpKind::Pool2d,
    OpKind::Upsample2x,
];

/// The ops that compute `op` from `inputs`, or `None` when rlx has no decomposition of `op`.
pub(crate) fn decompose(
    em: &mut Emitter<'_>,
    op: &Op,
    inputs: &[NodeId],
) -> Result<Option<NodeId>, OptError> {
    match (op, inputs) {
        (Op::LayerNorm { eps }, &[x, gamma, beta]) => layer_norm(em, x, gamma, beta, *eps).map(Some),
        (Op::RmsNorm { eps }, &[x, gamma]) => rms_norm(em, x, gamma, *eps).map(Some),
        (Op::Softmax, &[x]) => softmax(em, x, false).map(Some),
        (Op::LogSoftmax, &[x]) => softmax(em, x, true).map(Some),
        (Op::Attention(spec), _) => attention(em, spec, inputs).map(Some),
        (Op::AttentionGrad { spec, part }, _) => attention_grad(em, spec, *part, inputs).map(Some),
        (Op::FusedMatMul { transpose_a, transpose_b, bias, activation }, _) => {
            let (a, b) = match inputs {
                [a, b, ..] => (*a, *b),
                _ => return Ok(None),
            };
            let mut y =
                em.emit(Op::MatMul { transpose_a: *transpose_a, transpose_b: *transpose_b }, &[a, b])?;
            if *bias {
                let Some(&bias) = inputs.get(2) else { return Ok(None) };
                y = em.emit(Op::Binary(BinaryOp::Add), &[y, bias])?;
            }
            if let Some(act) = activation {
                y = em.emit(Op::Unary(*act), &[y])?;
            }
            Ok(Some(y))
        }
        (Op::AddNorm { norm, eps }, &[x, residual, gamma, ref rest @ ..]) => {
            let sum = em.emit(Op::Binary(BinaryOp::Add), &[x, residual])?;
            match (norm, rest) {
                (NormKind::LayerNorm, &[beta]) => {
                    em.emit(Op::LayerNorm { eps: *eps }, &[sum, gamma, beta]).map(Some)
                }
                (NormKind::RmsNorm, &[]) => em.emit(Op::RmsNorm { eps: *eps }, &[sum, gamma]).map(Some),
                _ => Ok(None),
            }
        }
        (Op::FusedElementwise(prog), _) => elementwise(em, prog, inputs),
        (Op::Conv2d { stride, padding, dilation, groups }, _) => {
            conv2d(em, inputs, *stride, *padding, *dilation, *groups).map(Some)
        }
        (Op::Pool2d { kind, kernel, stride, padding }, &[x]) => {
            pool2d(em, x, *kind, *kernel, *stride, *padding).map(Some)
        }
        (Op::Upsample2x, &[x]) => upsample2x(em, x).map(Some),
        _ => Ok(None),
    }
}

/// Casts an f16 or bf16 value to f32 (other dtypes pass through).
pub(crate) fn widen(em: &mut Emitter<'_>, x: NodeId) -> Result<NodeId, OptError> {
    if matches!(em.ty(x)?.dtype, DType::F16 | DType::BF16) {
        em.emit(Op::Cast(DType::F32), &[x])
    } else {
        Ok(x)
    }
}

/// Casts a widened result back to `dtype` (a no-op unless `dtype` was narrowed by [`widen`]).
pub(crate) fn narrow(em: &mut Emitter<'_>, y: NodeId, dtype: DType) -> Result<NodeId, OptError> {
    if em.ty(y)?.dtype == dtype {
        Ok(y)
    } else {
        em.emit(Op::Cast(dtype), &[y])
    }
}

pub(crate) fn binary(em: &mut Emitter<'_>, op: BinaryOp, a: NodeId, b: NodeId) -> Result<NodeId, OptError> {
    em.emit(Op::Binary(op), &[a, b])
}

pub(crate) fn unary(em: &mut Emitter<'_>, op: UnaryOp, x: NodeId) -> Result<NodeId, OptError> {
    em.emit(Op::Unary(op), &[x])
}

/// A keepdim reduction over the last axis of `x`.
pub(crate) fn reduce_last(em: &mut Emitter<'_>, op: ReduceOp, x: NodeId) -> Result<NodeId, OptError> {
    let last = last_axis(em, x)?;
    em.emit(Op::Reduce { op, axes: vec![last], keepdim: true }, &[x])
}

fn last_axis(em: &Emitter<'_>, x: NodeId) -> Result<usize, OptError> {
    let ty = em.ty(x)?;
    ty.shape.rank().checked_sub(1).ok_or_else(|| {
        rlx_ir::IrError::Attribute {
            op: "reduce",
            attr: "axis",
            shape: ty.shape.clone(),
            reason: "a norm or softmax needs at least one axis".into(),
        }
        .into()
    })
}

/// (x − mean) · rsqrt(mean((x − mean)²) + eps) · gamma + beta over the last axis (biased
/// variance, eps inside the root: the PyTorch definition).
fn layer_norm(
    em: &mut Emitter<'_>,
    x: NodeId,
    gamma: NodeId,
    beta: NodeId,
    eps: f32,
) -> Result<NodeId, OptError> {
    let dtype = em.ty(x)?.dtype;
    let (x, gamma, beta) = (widen(em, x)?, widen(em, gamma)?, widen(em, beta)?);
    let mean = reduce_last(em, ReduceOp::Mean, x)?;
    let centered = binary(em, BinaryOp::Sub, x, mean)?;
    let squared = binary(em, BinaryOp::Mul, centered, centered)?;
    let var = reduce_last(em, ReduceOp::Mean, squared)?;
    let eps = em.scalar(DType::F32, f64::from(eps))?;
    let var_eps = binary(em, BinaryOp::Add, var, eps)?;
    let inv = unary(em, UnaryOp::Rsqrt, var_eps)?;
    let normed = binary(em, BinaryOp::Mul, centered, inv)?;
    let scaled = binary(em, BinaryOp::Mul, normed, gamma)?;
    let y = binary(em, BinaryOp::Add, scaled, beta)?;
    narrow(em, y, dtype)
}

/// x · rsqrt(mean(x²) + eps) · gamma over the last axis.
fn rms_norm(em: &mut Emitter<'_>, x: NodeId, gamma: NodeId, eps: f32) -> Result<NodeId, OptError> {
    let dtype = em.ty(x)?.dtype;
    let (x, gamma) = (widen(em, x)?, widen(em, gamma)?);
    let squared = binary(em, BinaryOp::Mul, x, x)?;
    let mean_sq = reduce_last(em, ReduceOp::Mean, squared)?;
    let eps = em.scalar(DType::F32, f64::from(eps))?;
    let shifted = binary(em, BinaryOp::Add, mean_sq, eps)?;
    let inv = unary(em, UnaryOp::Rsqrt, shifted)?;
    let normed = binary(em, BinaryOp::Mul, x, inv)?;
    let y = binary(em, BinaryOp::Mul, normed, gamma)?;
    narrow(em, y, dtype)
}

/// Softmax (or log-softmax) over the last axis. The row maximum is subtracted first so exp never
/// overflows; a NaN anywhere in a row makes the whole row NaN.
pub(crate) fn softmax(em: &mut Emitter<'_>, x: NodeId, log: bool) -> Result<NodeId, OptError> {
    let dtype = em.ty(x)?.dtype;
    let x = widen(em, x)?;
    let max = reduce_last(em, ReduceOp::Max, x)?;
    let shifted = binary(em, BinaryOp::Sub, x, max)?;
    let exp = unary(em, UnaryOp::Exp, shifted)?;
    let sum = reduce_last(em, ReduceOp::Sum, exp)?;
    let y = if log {
        let log_sum = unary(em, UnaryOp::Log, sum)?;
        binary(em, BinaryOp::Sub, shifted, log_sum)?
    } else {
        binary(em, BinaryOp::Div, exp, sum)?
    };
    narrow(em, y, dtype)
}

/// Replays a fused elementwise program as separate ops.
fn elementwise(
    em: &mut Emitter<'_>,
    prog: &EwProgram,
    inputs: &[NodeId],
) -> Result<Option<NodeId>, OptError> {
    let mut regs: Vec<NodeId> = Vec::with_capacity(prog.steps.len());
    for step in &prog.steps {
        let reg = |r: usize| regs.get(r).copied();
        let id = match step {
            EwStep::Input(i) => inputs.get(*i).copied(),
            EwStep::Scalar(c) => Some(em.scalar(DType::F32, f64::from(*c))?),
            EwStep::Unary(op, a) => match reg(*a) {
                Some(a) => Some(unary(em, *op, a)?),
                None => None,
            },
            EwStep::Binary(op, a, b) => match (reg(*a), reg(*b)) {
                (Some(a), Some(b)) => Some(binary(em, *op, a, b)?),
                _ => None,
            },
            // The condition register is a Bool input (EwProgram::check), read as it is.
            EwStep::Where(c, a, b) => match (reg(*c), reg(*a), reg(*b)) {
                (Some(c), Some(a), Some(b)) => Some(em.emit(Op::Where, &[c, a, b])?),
                _ => None,
            },
        };
        // An out-of-range register cannot pass the IR's checks; refuse rather than guess.
        let Some(id) = id else { return Ok(None) };
        regs.push(id);
    }
    let Some(&last) = regs.last() else { return Ok(None) };
    // The fused op's output is the broadcast of all its inputs, even those the program ignores.
    let mut out = Shape::scalar();
    for &i in inputs {
        out = broadcast_shapes("fused_elementwise", &out, &em.ty(i)?.shape)?;
    }
    if em.ty(last)?.shape == out {
        Ok(Some(last))
    } else {
        em.emit(Op::Expand(out), &[last]).map(Some)
    }
}
