//! Vision ops in terms of data movement and matmul, for devices without native kernels:
//! - conv2d as im2col + matmul: pad, one strided slice of the input per kernel tap, stacked into
//!   columns [N, groups, C/groups·KH·KW, OH·OW], multiplied by the weight reshaped to
//!   [groups, O/groups, C/groups·KH·KW] (batch dims broadcast), then the bias;
//! - pool2d as an elementwise maximum (or sum × 1/area) over the same per-tap strided slices of
//!   the padded input (−∞ padding for max; zero padding counted in the area for avg, as the op
//!   defines);
//! - upsample ×2 as reshape → expand → reshape.
//!
//! The slices are where the GPU's generic strided copy does the work; the matmul is the tiled
//! kernel, so conv2d gets the same rung as every other matmul.

use super::decompose::binary;
use super::legalize::Emitter;
use crate::OptError;
use rlx_ir::{BinaryOp, IrError, NodeId, Op, PoolKind, Shape};

fn dims4(em: &Emitter<'_>, x: NodeId, op: &'static str) -> Result<[usize; 4], OptError> {
    match em.dims(x)?.as_slice() {
        &[n, c, h, w] => Ok([n, c, h, w]),
        other => Err(IrError::Attribute {
            op,
            attr: "input rank",
            shape: Shape::new(other),
            reason: "expected [N, C, H, W]".into(),
        }
        .into()),
    }
}

/// Zero-or-more padding of H and W with `value`.
fn pad_hw(em: &mut Emitter<'_>, x: NodeId, padding: [usize; 2], value: f64) -> Result<NodeId, OptError> {
    if padding == [0, 0] {
        return Ok(x);
    }
    let pads = vec![(0, 0), (0, 0), (padding[0], padding[0]), (padding[1], padding[1])];
    em.emit(Op::Pad { pads, value }, &[x])
}

/// The input positions one kernel tap (kh, kw) reads for every output position: [N, C, OH, OW].
fn tap(
    em: &mut Emitter<'_>,
    xp: NodeId,
    start: [usize; 2],
    out_hw: [usize; 2],
    stride: [usize; 2],
) -> Result<NodeId, OptError> {
    let mut y = xp;
    for (i, axis) in [2usize, 3].into_iter().enumerate() {
        let end = start[i] + (out_hw[i] - 1) * stride[i] + 1;
        y = em.emit(Op::Slice { axis, start: start[i], end, step: stride[i] }, &[y])?;
    }
    Ok(y)
}

/// One output extent. The IR's inference has checked that it is ≥ 1 and fits `usize`, but not
/// that the padded input does (a huge padding with a huge stride); it is computed in u128 like
/// inference, and a padded input past `usize` is refused here, since the decomposition builds it.
fn out_size(
    op: &'static str,
    x: [usize; 4],
    [input, pad, dilation, kernel, stride]: [usize; 5],
) -> Result<usize, OptError> {
    let padded = input as u128 + 2 * pad as u128;
    let window = dilation as u128 * (kernel.saturating_sub(1) as u128) + 1;
    let too_large = || IrError::Attribute {
        op,
        attr: "padding",
        shape: Shape::new(&x),
        reason: format!(
            "the padded input ({input} + 2·{pad}) is too large to decompose into slices; \
             use a smaller padding"
        ),
    };
    if usize::try_from(padded).is_err() {
        return Err(too_large().into());
    }
    usize::try_from(padded.saturating_sub(window) / stride.max(1) as u128 + 1).map_err(|_| too_large().into())
}

pub(crate) fn conv2d(
    em: &mut Emitter<'_>,
    inputs: &[NodeId],
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
    groups: usize,
) -> Result<NodeId, OptError> {
    let (x, w, bias) = match inputs {
        [x, w] => (*x, *w, None),
        [x, w, b] => (*x, *w, Some(*b)),
        _ => return Err(IrError::Arity { op: "conv2d", expected: "2 or 3".into(), got: inputs.len() }.into()),
    };
    let [n, c, h, wd] = dims4(em, x, "conv2d")?;
    let [o, cg, kh, kw] = dims4(em, w, "conv2d")?;
    let oh = out_size("conv2d", [n, c, h, wd], [h, padding[0], dilation[0], kh, stride[0]])?;
    let ow = out_size("conv2d", [n, c, h, wd], [wd, padding[1], dilation[1], kw, stride[1]])?;
    let xp = pad_hw(em, x, padding, 0.0)?;
    let mut taps = Vec::with_capacity(kh * kw);
    for i in 0..kh {
        for j in 0..kw {
            let t = tap(em, xp, [i * dilation[0], j * dilation[1]], [oh, ow], stride)?;
            taps.push(em.emit(Op::Reshape(Shape::new(&[n, c, 1, oh * ow])), &[t])?);
        }
    }
    // [N, C, KH·KW, OH·OW]: channel-major then tap, the order of the weight's flattening.
    let cols = if taps.len() == 1 { taps[0] } else { em.emit(Op::Concat { axis: 2 }, &taps)? };
    let ck = cg * kh * kw;
    let cols = em.emit(Op::Reshape(Shape::new(&[n, groups, ck, oh * ow])), &[cols])?;
    let wr = em.emit(Op::Reshape(Shape::new(&[groups, o / groups, ck])), &[w])?;
    let y = em.emit(Op::MatMul { transpose_a: false, transpose_b: false }, &[wr, cols])?;
    let y = em.emit(Op::Reshape(Shape::new(&[n, o, oh, ow])), &[y])?;
    match bias {
        None => Ok(y),
        Some(b) => {
            let b = em.emit(Op::Reshape(Shape::new(&[o, 1, 1])), &[b])?;
            binary(em, BinaryOp::Add, y, b)
        }
    }
}

pub(crate) fn pool2d(
    em: &mut Emitter<'_>,
    x: NodeId,
    kind: PoolKind,
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 2],
) -> Result<NodeId, OptError> {
    let x4 = dims4(em, x, "pool2d")?;
    let [_, _, h, w] = x4;
    let oh = out_size("pool2d", x4, [h, padding[0], 1, kernel[0], stride[0]])?;
    let ow = out_size("pool2d", x4, [w, padding[1], 1, kernel[1], stride[1]])?;
    let fill = match kind {
        PoolKind::Max => f64::NEG_INFINITY,
        PoolKind::Avg => 0.0,
    };
    let xp = pad_hw(em, x, padding, fill)?;
    let combine = match kind {
        PoolKind::Max => BinaryOp::Maximum,
        PoolKind::Avg => BinaryOp::Add,
    };
    let mut acc: Option<NodeId> = None;
    for i in 0..kernel[0] {
        for j in 0..kernel[1] {
            let t = tap(em, xp, [i, j], [oh, ow], stride)?;
            acc = Some(match acc {
                None => t,
                Some(a) => binary(em, combine, a, t)?,
            });
        }
    }
    let acc = acc.ok_or_else(|| IrError::Attribute {
        op: "pool2d",
        attr: "kernel",
        shape: Shape::new(&[h, w]),
        reason: "kernel has no taps".into(),
    })?;
    match kind {
        PoolKind::Max => Ok(acc),
        PoolKind::Avg => {
            let dtype = em.ty(acc)?.dtype;
            let inv = em.scalar(dtype, 1.0 / (kernel[0] * kernel[1]) as f64)?;
            binary(em, BinaryOp::Mul, acc, inv)
        }
    }
}

pub(crate) fn upsample2x(em: &mut Emitter<'_>, x: NodeId) -> Result<NodeId, OptError> {
    let [n, c, h, w] = dims4(em, x, "upsample2x")?;
    let y = em.emit(Op::Reshape(Shape::new(&[n, c, h, 1, w, 1])), &[x])?;
    let y = em.emit(Op::Expand(Shape::new(&[n, c, h, 2, w, 2])), &[y])?;
    em.emit(Op::Reshape(Shape::new(&[n, c, 2 * h, 2 * w])), &[y])
}
