//! Inference for matmul, norms, softmax, attention, RoPE, convolution, pooling and the fused
//! forms created by rlx-opt.

use super::{arity, arity_range, attr_err, broadcast_shapes, float, mismatch, same_dtype, want_dtype};
use crate::{AttentionSpec, AttnLayout, DType, EwStep, IrError, MaskKind, NormKind, Op, Shape, TensorType};

pub(super) fn infer_nn_op(op: &Op, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    let name = op.name();
    match op {
        Op::MatMul { transpose_a, transpose_b } => {
            arity(name, inputs, 2)?;
            matmul(name, inputs, *transpose_a, *transpose_b)
        }
        Op::FusedMatMul { transpose_a, transpose_b, bias, .. } => {
            arity(name, inputs, if *bias { 3 } else { 2 })?;
            let out = matmul(name, &inputs[..2], *transpose_a, *transpose_b)?;
            if *bias {
                let n = out.shape.last();
                if inputs[2].shape.dims() != [n] {
                    return Err(mismatch(
                        name,
                        inputs,
                        format!("bias must be 1-D [{n}] (the output's last dim)"),
                    ));
                }
                same_dtype(name, inputs, 0, 2)?;
            }
            Ok(out)
        }
        Op::LayerNorm { eps } | Op::RmsNorm { eps } => {
            let n_in = if matches!(op, Op::LayerNorm { .. }) { 3 } else { 2 };
            arity(name, inputs, n_in)?;
            check_eps(name, &inputs[0].shape, *eps)?;
            norm_params(name, inputs, 0, 1)?;
            Ok(inputs[0].clone())
        }
        Op::AddNorm { norm, eps } => {
            let n_in = if *norm == NormKind::LayerNorm { 4 } else { 3 };
            arity(name, inputs, n_in)?;
            check_eps(name, &inputs[0].shape, *eps)?;
            same_dtype(name, inputs, 0, 1)?;
            let s = broadcast_shapes(name, &inputs[0].shape, &inputs[1].shape)?;
            let x = TensorType::new(s, inputs[0].dtype);
            let mut rest: Vec<&TensorType> = vec![&x];
            rest.extend_from_slice(&inputs[2..]);
            norm_params(name, &rest, 0, 1).map_err(|e| match e {
                IrError::ShapeMismatch { reason, .. } => mismatch(name, inputs, reason),
                IrError::DType { op, operand, got, expected } => {
                    IrError::DType { op, operand: operand + 1, got, expected }
                }
                other => other,
            })?;
            Ok(x)
        }
        Op::Softmax | Op::LogSoftmax => {
            arity(name, inputs, 1)?;
            float(name, 0, inputs[0].dtype)?;
            if inputs[0].shape.rank() == 0 {
                return Err(attr_err(
                    name,
                    "rank",
                    &inputs[0].shape,
                    "needs rank ≥ 1; reshape the scalar to [1]",
                ));
            }
            Ok(inputs[0].clone())
        }
        Op::Attention(spec) => attention(name, spec, inputs),
        Op::Rope { layout, rotary_dims, .. } => {
            arity(name, inputs, 3)?;
            let x = inputs[0];
            float(name, 0, x.dtype)?;
            let [_, s, _, d] = rank4(name, "x", x, *layout)?;
            if *rotary_dims == 0 || rotary_dims % 2 != 0 || *rotary_dims > d {
                return Err(attr_err(
                    name,
                    "rotary_dims",
                    &x.shape,
                    format!("rotary_dims = {rotary_dims}; it must be even, ≥ 2 and ≤ head dim {d}"),
                ));
            }
            for i in 1..3 {
                want_dtype(name, i, inputs[i].dtype, DType::F32)?;
                if inputs[i].shape.dims() != [s, rotary_dims / 2] {
                    return Err(mismatch(
                        name,
                        inputs,
                        format!("cos and sin must be [{s}, {}] ([seq, rotary_dims / 2])", rotary_dims / 2),
                    ));
                }
            }
            Ok(x.clone())
        }
        Op::Conv2d { stride, padding, dilation, groups } => {
            conv2d(name, inputs, *stride, *padding, *dilation, *groups)
        }
        Op::Pool2d { kernel, stride, padding, .. } => {
            arity(name, inputs, 1)?;
            let x = inputs[0];
            float(name, 0, x.dtype)?;
            let [n, c, h, w] = nchw(name, x)?;
            for i in 0..2 {
                if kernel[i] < 1 || stride[i] < 1 {
                    return Err(attr_err(name, "kernel/stride", &x.shape, "kernel and stride must be ≥ 1"));
                }
                if padding[i] > kernel[i] / 2 {
                    return Err(attr_err(
                        name,
                        "padding",
                        &x.shape,
                        format!("padding {padding:?} exceeds half the kernel {kernel:?}; use padding ≤ kernel / 2"),
                    ));
                }
            }
            let oh = out_size(name, inputs, h, kernel[0], stride[0], padding[0], 1, "height")?;
            let ow = out_size(name, inputs, w, kernel[1], stride[1], padding[1], 1, "width")?;
            Ok(TensorType::new([n, c, oh, ow], x.dtype))
        }
        Op::Upsample2x => {
            arity(name, inputs, 1)?;
            let [n, c, h, w] = nchw(name, inputs[0])?;
            let big = |v: usize| v.checked_mul(2).ok_or_else(|| mismatch(name, inputs, "size overflow"));
            Ok(TensorType::new([n, c, big(h)?, big(w)?], inputs[0].dtype))
        }
        Op::FusedElementwise(prog) => {
            for (i, t) in inputs.iter().enumerate() {
                want_dtype(name, i, t.dtype, DType::F32)?;
            }
            let mut shape = Shape::scalar();
            for t in inputs {
                shape = broadcast_shapes(name, &shape, &t.shape).map_err(|_| {
                    mismatch(name, inputs, "the inputs of a fused elementwise node must broadcast together")
                })?;
            }
            if prog.steps.is_empty() {
                return Err(attr_err(name, "program", &shape, "the program has no steps"));
            }
            for (i, step) in prog.steps.iter().enumerate() {
                let bad = match step {
                    EwStep::Input(n) => *n >= inputs.len(),
                    EwStep::Scalar(_) => false,
                    EwStep::Unary(_, r) => *r >= i,
                    EwStep::Binary(_, a, b) => *a >= i || *b >= i,
                };
                if bad {
                    return Err(attr_err(
                        name,
                        "program",
                        &shape,
                        format!(
                            "step {i} ({step:?}) reads a missing input or a register not computed \
                             before it ({} inputs)",
                            inputs.len()
                        ),
                    ));
                }
            }
            Ok(TensorType::new(shape, DType::F32))
        }
        _ => Err(mismatch(name, inputs, "internal: not an nn op")),
    }
}

fn check_eps(name: &'static str, shape: &Shape, eps: f32) -> Result<(), IrError> {
    if !(eps.is_finite() && eps >= 0.0) {
        return Err(attr_err(
            name,
            "eps",
            shape,
            format!("eps = {eps}; use a finite value ≥ 0 such as 1e-5"),
        ));
    }
    Ok(())
}

/// `inputs[x]` is float with rank ≥ 1; every operand after it is 1-D of its last dim, same dtype.
fn norm_params(name: &'static str, inputs: &[&TensorType], x: usize, first: usize) -> Result<(), IrError> {
    let xt = inputs[x];
    float(name, x, xt.dtype)?;
    if xt.shape.rank() == 0 {
        return Err(attr_err(name, "rank", &xt.shape, "needs rank ≥ 1; reshape the scalar to [1]"));
    }
    let last = xt.shape.last();
    for i in first..inputs.len() {
        same_dtype(name, inputs, x, i)?;
        if inputs[i].shape.dims() != [last] {
            return Err(mismatch(
                name,
                inputs,
                format!("gamma/beta must be 1-D [{last}], the size of the normalised last axis"),
            ));
        }
    }
    Ok(())
}

fn matmul(name: &'static str, inputs: &[&TensorType], ta: bool, tb: bool) -> Result<TensorType, IrError> {
    let (a, b) = (inputs[0], inputs[1]);
    float(name, 0, a.dtype)?;
    same_dtype(name, inputs, 0, 1)?;
    let (ra, rb) = (a.shape.rank(), b.shape.rank());
    if ra < 2 || rb < 2 {
        return Err(mismatch(
            name,
            inputs,
            "both operands need rank ≥ 2; reshape a 1-D vector to [1, K] (or [K, 1]) first",
        ));
    }
    let (ad, bd) = (a.shape.dims(), b.shape.dims());
    let (m, ka) = if ta { (ad[ra - 1], ad[ra - 2]) } else { (ad[ra - 2], ad[ra - 1]) };
    let (kb, n) = if tb { (bd[rb - 1], bd[rb - 2]) } else { (bd[rb - 2], bd[rb - 1]) };
    if ka != kb {
        return Err(mismatch(
            name,
            inputs,
            format!(
                "inner dims differ: a gives K = {ka}, b gives K = {kb} (transpose_a = {ta}, \
                 transpose_b = {tb}); transpose or reshape an operand so they agree"
            ),
        ));
    }
    let batch = broadcast_shapes(name, &Shape::new(&ad[..ra - 2]), &Shape::new(&bd[..rb - 2]))
        .map_err(|_| mismatch(name, inputs, "batch dims (all but the last two) do not broadcast"))?;
    let mut out = batch.0;
    out.extend([m, n]);
    Ok(TensorType::new(out, a.dtype))
}

/// `[B, S, H, D]` of a rank-4 operand, read per layout.
fn rank4(name: &'static str, what: &str, t: &TensorType, layout: AttnLayout) -> Result<[usize; 4], IrError> {
    let d = t.shape.dims();
    let [b, x, y, hd] = d else {
        let want = match layout {
            AttnLayout::Bshd => "[batch, seq, heads, head_dim]",
            AttnLayout::Bhsd => "[batch, heads, seq, head_dim]",
        };
        return Err(attr_err(name, "rank", &t.shape, format!("{what} must be rank 4 {want}")));
    };
    Ok(match layout {
        AttnLayout::Bshd => [*b, *x, *y, *hd],
        AttnLayout::Bhsd => [*b, *y, *x, *hd],
    })
}

fn attention(
    name: &'static str,
    spec: &AttentionSpec,
    inputs: &[&TensorType],
) -> Result<TensorType, IrError> {
    let has_mask = matches!(spec.mask, MaskKind::Padding | MaskKind::Bias);
    arity(name, inputs, 3 + has_mask as usize + spec.kv_lengths as usize)?;
    let (q, k, v) = (inputs[0], inputs[1], inputs[2]);
    float(name, 0, q.dtype)?;
    same_dtype(name, inputs, 0, 1)?;
    same_dtype(name, inputs, 0, 2)?;
    let [bq, sq, hq, dq] = rank4(name, "q", q, spec.layout)?;
    let [bk, sk, hk, dk] = rank4(name, "k", k, spec.layout)?;
    let [bv, sv, hv, dv] = rank4(name, "v", v, spec.layout)?;
    let bad = |reason: String| Err(mismatch(name, inputs, reason));
    if bq != bk || bq != bv {
        return bad(format!("batch sizes differ (q {bq}, k {bk}, v {bv}); they must be equal"));
    }
    if sk != sv || hk != hv {
        return bad(format!("k and v must share seq and heads (k: {sk}, {hk}; v: {sv}, {hv})"));
    }
    if dq != dk {
        return bad(format!("q and k head dims differ ({dq} vs {dk}); they must be equal"));
    }
    if hk == 0 || hq % hk != 0 {
        return bad(format!(
            "q has {hq} heads, k/v have {hk}; the q heads must be a multiple of the k/v heads"
        ));
    }
    if let Some(s) = spec.scale.filter(|s| !s.is_finite()) {
        return Err(attr_err(name, "scale", &q.shape, format!("scale = {s}; use a finite value or None")));
    }
    if let Some(c) = spec.softcap.filter(|c| !(c.is_finite() && *c > 0.0)) {
        return Err(attr_err(
            name,
            "softcap",
            &q.shape,
            format!("softcap = {c}; use a finite value > 0 or None"),
        ));
    }
    match spec.mask {
        MaskKind::Causal | MaskKind::SlidingWindow(_) if sk < sq => {
            return bad(format!(
                "causal masks need at least as many keys as queries (Sk = {sk} < Sq = {sq}); check \
                 the seq dims or use MaskKind::None"
            ));
        }
        MaskKind::SlidingWindow(0) => {
            return Err(attr_err(
                name,
                "window",
                &q.shape,
                "sliding window 0 hides every key; use window ≥ 1",
            ));
        }
        MaskKind::Padding => {
            let m = inputs[3];
            if !matches!(m.dtype, DType::Bool | DType::I32 | DType::F32) {
                return Err(IrError::DType {
                    op: name,
                    operand: 3,
                    got: m.dtype,
                    expected: "bool, i32 or f32".into(),
                });
            }
            if m.shape.dims() != [bq, sk] {
                return bad(format!("the padding mask must be [batch, Sk] = [{bq}, {sk}]"));
            }
        }
        MaskKind::Bias => {
            let m = inputs[3];
            want_dtype(name, 3, m.dtype, DType::F32)?;
            let target = Shape::new(&[bq, hq, sq, sk]);
            let ok =
                m.shape.rank() <= 4 && broadcast_shapes(name, &m.shape, &target).is_ok_and(|s| s == target);
            if !ok {
                return bad(format!("the bias must broadcast to [B, Hq, Sq, Sk] = {target}"));
            }
        }
        _ => {}
    }
    if spec.kv_lengths {
        let at = inputs.len() - 1;
        let lens = inputs[at];
        want_dtype(name, at, lens.dtype, DType::I32)?;
        if lens.shape.dims() != [bq] {
            return bad(format!("the kv lengths must be I32 [batch] = [{bq}], one count per sequence"));
        }
    }
    let out = match spec.layout {
        AttnLayout::Bshd => [bq, sq, hq, dv],
        AttnLayout::Bhsd => [bq, hq, sq, dv],
    };
    Ok(TensorType::new(out, q.dtype))
}

fn nchw(name: &'static str, x: &TensorType) -> Result<[usize; 4], IrError> {
    match x.shape.dims() {
        [n, c, h, w] => Ok([*n, *c, *h, *w]),
        _ => Err(attr_err(name, "rank", &x.shape, "x must be rank 4 [N, C, H, W]; reshape it first")),
    }
}

/// `floor((size + 2·pad − dil·(k − 1) − 1) / stride) + 1`, or an error when the (dilated)
/// window does not fit in the padded input at least once.
#[allow(clippy::too_many_arguments)]
fn out_size(
    name: &'static str,
    inputs: &[&TensorType],
    size: usize,
    k: usize,
    stride: usize,
    pad: usize,
    dil: usize,
    which: &str,
) -> Result<usize, IrError> {
    let padded = size as u128 + 2 * pad as u128;
    let window = dil as u128 * (k as u128 - 1) + 1;
    if window > padded {
        return Err(mismatch(
            name,
            inputs,
            format!(
                "the {which} window spans {window} but the padded input has only {padded} ({size} + \
                 2·{pad}), giving an empty output; use a smaller kernel/dilation or more padding"
            ),
        ));
    }
    usize::try_from((padded - window) / stride as u128 + 1)
        .map_err(|_| mismatch(name, inputs, "size overflow"))
}

fn conv2d(
    name: &'static str,
    inputs: &[&TensorType],
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
    groups: usize,
) -> Result<TensorType, IrError> {
    arity_range(name, inputs, 2, 3)?;
    let (x, w) = (inputs[0], inputs[1]);
    float(name, 0, x.dtype)?;
    same_dtype(name, inputs, 0, 1)?;
    let [n, c, h, wd] = nchw(name, x)?;
    let [o, ci, kh, kw] = match w.shape.dims() {
        [o, ci, kh, kw] => [*o, *ci, *kh, *kw],
        _ => return Err(mismatch(name, inputs, "w must be rank 4 [O, C / groups, KH, KW]")),
    };
    if groups < 1 || stride.contains(&0) || dilation.contains(&0) {
        return Err(attr_err(
            name,
            "groups/stride/dilation",
            &x.shape,
            "groups, stride and dilation must be ≥ 1",
        ));
    }
    if c % groups != 0 || o % groups != 0 {
        return Err(mismatch(
            name,
            inputs,
            format!("groups = {groups} must divide both the input channels {c} and the output channels {o}"),
        ));
    }
    if ci != c / groups {
        return Err(mismatch(
            name,
            inputs,
            format!(
                "w has {ci} input channels per group but x has {c} channels / {groups} groups = {}",
                c / groups
            ),
        ));
    }
    if kh == 0 || kw == 0 {
        return Err(mismatch(name, inputs, "the kernel has a zero-sized dim"));
    }
    if let Some(bias) = inputs.get(2) {
        same_dtype(name, inputs, 0, 2)?;
        if bias.shape.dims() != [o] {
            return Err(mismatch(name, inputs, format!("bias must be 1-D [{o}] (one per output channel)")));
        }
    }
    let oh = out_size(name, inputs, h, kh, stride[0], padding[0], dilation[0], "height")?;
    let ow = out_size(name, inputs, wd, kw, stride[1], padding[1], dilation[1], "width")?;
    Ok(TensorType::new([n, o, oh, ow], x.dtype))
}
