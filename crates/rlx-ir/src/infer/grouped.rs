//! The grouped family, `GroupedMatMul` (shape rule and flop count): x [T, S, K] (S = 1 or k), w [E, N, K] (E matrices stored
//! out × in, like `nn.Linear` weights), ids I32 [T, k] → [T, k, N]. Each message names the three
//! shapes and the dim that disagrees.

use super::{arity, dims, float, mismatch, not_in_family, same_dtype, want_dtype};
use crate::{DType, IrError, Op, OpFamily, Shape, TensorType};

pub(super) fn infer(op: &Op, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    if !matches!(op, Op::GroupedMatMul) {
        return Err(not_in_family(op, inputs, OpFamily::Grouped));
    }
    let op = op.name();
    arity(op, inputs, 3)?;
    let (x, w, ids) = (inputs[0], inputs[1], inputs[2]);
    float(op, 0, x.dtype)?;
    same_dtype(op, inputs, 0, 1)?;
    want_dtype(op, 2, ids.dtype, DType::I32)?;
    let &[t, s, k] = x.shape.dims() else {
        return Err(mismatch(
            op,
            inputs,
            "x must be 3-D [tokens, slots, K] with slots 1 (shared by every expert) or k \
             (one row per chosen expert); reshape it",
        ));
    };
    let &[_, n, wk] = w.shape.dims() else {
        return Err(mismatch(op, inputs, "w must be 3-D [experts, N, K]: one out × in matrix per expert"));
    };
    let &[ti, top] = ids.shape.dims() else {
        return Err(mismatch(op, inputs, "ids must be 2-D I32 [tokens, k]: each token's chosen experts"));
    };
    if wk != k {
        return Err(mismatch(
            op,
            inputs,
            format!("x's last dim K = {k} differs from w's last dim {wk}; w must be [experts, N, {k}]"),
        ));
    }
    if ti != t {
        return Err(mismatch(op, inputs, format!("x has {t} tokens but ids has {ti} rows; they must match")));
    }
    if s != 1 && s != top {
        return Err(mismatch(
            op,
            inputs,
            format!("x has {s} slots per token; it must be 1 (broadcast) or ids' k = {top}"),
        ));
    }
    Ok(TensorType::new(Shape(vec![t, top, n]), x.dtype))
}

/// out [T, k, N]: each element is one dot of K (x's last dim).
pub(super) fn flops(op: &Op, inputs: &[&TensorType], out: &TensorType) -> f64 {
    let Op::GroupedMatMul = op else { return 0.0 };
    2.0 * out.shape.numel() as f64 * dims(inputs, 0).last().copied().unwrap_or(0) as f64
}
