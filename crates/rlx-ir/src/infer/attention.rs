//! The attention family: scaled dot-product `Attention` ([`AttentionSpec`]). Shape rule and
//! flop count; [`rank4`] reads a `[B, S, H, D]` operand per layout for RoPE too.

use super::broadcast_shapes;
use super::{arity, attr_err, dims, float, mismatch, not_in_family, same_dtype, want_dtype};
use crate::{
    AttentionSpec, AttnGradPart, AttnLayout, DType, IrError, MaskKind, Op, OpFamily, Shape, TensorType,
};

pub(super) fn infer(op: &Op, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    let name = op.name();
    match op {
        Op::Attention(spec) => attention(name, spec, inputs),
        Op::AttentionGrad { spec, part } => attention_grad(name, spec, *part, inputs),
        _ => Err(not_in_family(op, inputs, OpFamily::Attention)),
    }
}

/// q·kᵀ then p·v: out is [B, Sq, Hq, Dv] (or Bhsd); each output row needs Sk·(D+Dv)
/// multiply-adds, per output element Sk·(D+Dv)/Dv.
pub(super) fn flops(op: &Op, inputs: &[&TensorType], out: &TensorType) -> f64 {
    if let Op::AttentionGrad { spec, part } = op {
        return grad_flops(spec, *part, inputs);
    }
    let Op::Attention(spec) = op else { return 0.0 };
    let seq = |d: &[usize]| match spec.layout {
        AttnLayout::Bshd => d.get(1).copied(),
        AttnLayout::Bhsd => d.get(2).copied(),
    };
    let (d, dv) =
        (dims(inputs, 0).last().copied().unwrap_or(0), dims(inputs, 2).last().copied().unwrap_or(0));
    match (seq(dims(inputs, 1)), dv) {
        (Some(sk), dv) if dv > 0 => 2.0 * out.shape.numel() as f64 * sk as f64 * (d + dv) as f64 / dv as f64,
        _ => 0.0,
    }
}

/// The flops of an attention gradient part: the products it recomputes and makes, per query
/// row and key (2·(D + Dv) for the scores and dp = dy·vᵀ, 2·D or 2·Dv for its own product;
/// the statistics recompute only the scores).
fn grad_flops(spec: &AttentionSpec, part: AttnGradPart, inputs: &[&TensorType]) -> f64 {
    let (Ok([b, sq, hq, d]), Ok([_, sk, _, _]), Some(&dv)) = (
        rank4("attention_grad", "q", inputs[0], spec.layout),
        rank4("attention_grad", "k", inputs[1], spec.layout),
        dims(inputs, 2).last(),
    ) else {
        return 0.0;
    };
    let per = match part {
        AttnGradPart::Stats => 2 * d,
        AttnGradPart::Q => 2 * (d + dv) + 2 * d,
        AttnGradPart::K => 2 * (d + dv) + 2 * d,
        AttnGradPart::V => 2 * d + 2 * dv,
    };
    // Causal masks see about half the keys.
    let seen = if matches!(spec.mask, MaskKind::Causal | MaskKind::SlidingWindow(_)) { 0.5 } else { 1.0 };
    (b * hq * sq * sk * per) as f64 * seen
}

/// An attention gradient part: the forward's checks on q, k, v and the mask, then dy (and o)
/// of the forward output's type and the statistics of [`AttnGradPart::Stats`]'s.
fn attention_grad(
    name: &'static str,
    spec: &AttentionSpec,
    part: AttnGradPart,
    inputs: &[&TensorType],
) -> Result<TensorType, IrError> {
    if !spec.flash_grad() {
        return Err(attr_err(
            name,
            "spec",
            &inputs.first().map(|t| t.shape.clone()).unwrap_or_else(Shape::scalar),
            "attention_grad takes no bias mask and no kv lengths; differentiate those through the \
             composed gradient (rlx_ir::grad picks it)",
        ));
    }
    let has_mask = spec.mask == MaskKind::Padding;
    arity(name, inputs, 5 + has_mask as usize)?;
    let mut fwd: Vec<&TensorType> = inputs[..3].to_vec();
    if has_mask {
        fwd.push(inputs[5]);
    }
    // The gradient keeps one dtype for q, k and v.
    same_dtype(name, inputs, 0, 1)?;
    same_dtype(name, inputs, 0, 2)?;
    let out = attention(name, spec, &fwd)?;
    let [b, sq, hq, _] = rank4(name, "q", inputs[0], spec.layout)?;
    let stats = TensorType::new([b, hq, sq, 2], DType::F32);
    let (x, y) = (inputs[3], inputs[4]);
    let (want_x, want_y) = match part {
        AttnGradPart::Stats => (&out, &out),
        _ => (&out, &stats),
    };
    let what = match part {
        AttnGradPart::Stats => ["o (the forward's output)", "dy (its gradient)"],
        _ => ["dy (the gradient of the forward's output)", "the stats (an AttentionGrad Stats node)"],
    };
    for (operand, (got, want), what) in [(3, (x, want_x), what[0]), (4, (y, want_y), what[1])] {
        if got != want {
            return Err(mismatch(
                name,
                inputs,
                format!("operand {operand}, {what}, is {got}; expected {want}"),
            ));
        }
    }
    Ok(match part {
        AttnGradPart::Stats => stats,
        AttnGradPart::Q => inputs[0].clone(),
        AttnGradPart::K => inputs[1].clone(),
        AttnGradPart::V => inputs[2].clone(),
    })
}

/// `[B, S, H, D]` of a rank-4 operand, read per layout.
pub(super) fn rank4(
    name: &'static str,
    what: &str,
    t: &TensorType,
    layout: AttnLayout,
) -> Result<[usize; 4], IrError> {
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
    // k and v share a dtype, which may be narrower than q's: a KV cache held in f16 under f32
    // queries (the output takes q's dtype).
    float(name, 0, q.dtype)?;
    float(name, 1, k.dtype)?;
    same_dtype(name, inputs, 1, 2)?;
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
