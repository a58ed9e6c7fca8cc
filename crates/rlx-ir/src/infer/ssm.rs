//! The ssm family, shape rules and flop counts for the recurrences of [`crate::ssm`]: `SelectiveScan` (u, delta [B, D, L],
//! a [D, N], b, c [B, G, N, L]) and `GatedDeltaRule` (q, k [B, L, H, K], v [B, L, H, V],
//! g, beta [B, L, H]). All operands are F32; each message names every shape and the dim that
//! disagrees.

use super::{arity, attr_err, dims, mismatch, not_in_family, want_dtype};
use crate::{DType, IrError, Op, OpFamily, ScanOutput, Shape, TensorType};

/// Both recurrences take five F32 operands; then each checks its own shapes.
pub(super) fn infer(op: &Op, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    if matches!(op, Op::SelectiveScan { .. } | Op::GatedDeltaRule { .. }) {
        arity(op.name(), inputs, 5)?;
        for (i, t) in inputs.iter().enumerate() {
            want_dtype(op.name(), i, t.dtype, DType::F32)?;
        }
    }
    match op {
        Op::SelectiveScan { output, .. } => selective_scan(op.name(), *output, inputs),
        Op::GatedDeltaRule { scale, output } => gated_delta_rule(op.name(), *scale, *output, inputs),
        _ => Err(not_in_family(op, inputs, OpFamily::Ssm)),
    }
}

pub(super) fn flops(op: &Op, inputs: &[&TensorType], _out: &TensorType) -> f64 {
    let steps = dims(inputs, 0).iter().product::<usize>() as f64;
    let state = dims(inputs, 2).last().copied().unwrap_or(0) as f64;
    match op {
        // u [B, D, L] with a state of N (A [D, N]) per channel: an exp and three multiply-adds
        // per (b, d, t, n).
        Op::SelectiveScan { .. } => 8.0 * steps * state,
        // q [B, L, H, K] with v [B, L, H, V]: three K × V passes over the state per step.
        Op::GatedDeltaRule { .. } => 6.0 * steps * state,
        _ => 0.0,
    }
}

fn selective_scan(
    op: &'static str,
    output: ScanOutput,
    inputs: &[&TensorType],
) -> Result<TensorType, IrError> {
    let &[b, d, l] = inputs[0].shape.dims() else {
        return Err(mismatch(op, inputs, "u must be 3-D [batch, channels D, length L]; reshape it"));
    };
    if inputs[1].shape.dims() != [b, d, l] {
        return Err(mismatch(op, inputs, format!("delta must have u's shape [{b}, {d}, {l}]")));
    }
    let &[ad, n] = inputs[2].shape.dims() else {
        return Err(mismatch(op, inputs, "A must be 2-D [channels D, state N]"));
    };
    if ad != d {
        return Err(mismatch(
            op,
            inputs,
            format!("A has {ad} rows but u has D = {d} channels; A must be [{d}, N]"),
        ));
    }
    for (which, t) in [("B", inputs[3]), ("C", inputs[4])] {
        let &[bb, g, bn, bl] = t.shape.dims() else {
            return Err(mismatch(
                op,
                inputs,
                format!("{which} must be 4-D [batch, groups G, state N, length L]; reshape a 3-D one to [B, 1, N, L]"),
            ));
        };
        if bb != b || bn != n || bl != l {
            return Err(mismatch(
                op,
                inputs,
                format!("{which} must be [{b}, G, {n}, {l}] (batch, groups, N, L)"),
            ));
        }
        if g == 0 || d % g != 0 {
            return Err(mismatch(op, inputs, format!("{which} has {g} groups, which must divide D = {d}")));
        }
    }
    if inputs[3].shape.dims()[1] != inputs[4].shape.dims()[1] {
        return Err(mismatch(op, inputs, "B and C must have the same number of groups"));
    }
    let dims = match output {
        ScanOutput::Y => vec![b, d, l],
        ScanOutput::LastState => vec![b, d, n],
    };
    Ok(TensorType::new(Shape(dims), DType::F32))
}

fn gated_delta_rule(
    op: &'static str,
    scale: f32,
    output: ScanOutput,
    inputs: &[&TensorType],
) -> Result<TensorType, IrError> {
    if !scale.is_finite() {
        return Err(attr_err(op, "scale", &inputs[0].shape, format!("scale {scale} must be finite")));
    }
    let &[b, l, h, k] = inputs[0].shape.dims() else {
        return Err(mismatch(op, inputs, "q must be 4-D [batch, length, heads, K]; reshape it"));
    };
    if inputs[1].shape.dims() != [b, l, h, k] {
        return Err(mismatch(op, inputs, format!("k must have q's shape [{b}, {l}, {h}, {k}]")));
    }
    let &[vb, vl, vh, v] = inputs[2].shape.dims() else {
        return Err(mismatch(op, inputs, "v must be 4-D [batch, length, heads, V]"));
    };
    if [vb, vl, vh] != [b, l, h] {
        return Err(mismatch(op, inputs, format!("v must be [{b}, {l}, {h}, V] (q's batch, length, heads)")));
    }
    for (which, t) in [("g", inputs[3]), ("beta", inputs[4])] {
        if t.shape.dims() != [b, l, h] {
            return Err(mismatch(
                op,
                inputs,
                format!("{which} must be [{b}, {l}, {h}]: one value per step and head"),
            ));
        }
    }
    let dims = match output {
        ScanOutput::Y => vec![b, l, h, v],
        ScanOutput::LastState => vec![b, h, k, v],
    };
    Ok(TensorType::new(Shape(dims), DType::F32))
}
