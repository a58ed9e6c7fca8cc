//! The grouped family (shape rules and flop counts): `GroupedMatMul`, x [T, S, K] (S = 1 or k),
//! w [E, N, K] (E matrices stored out × in, like `nn.Linear` weights), ids I32 [T, k] →
//! [T, k, N]; and `QuantGroupedMatMul`, the same with w a packed U8 stack [E, N, row_bytes] of
//! [`QuantType`] blocks → F32 [T, k, N]. Each message names the three shapes and the dim that
//! disagrees.

use super::{arity, dims, float, mismatch, not_in_family, same_dtype, want_dtype};
use crate::{DType, IrError, Op, OpFamily, QuantType, Shape, TensorType};

pub(super) fn infer(op: &Op, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    match op {
        Op::GroupedMatMul => grouped_matmul(op.name(), inputs),
        Op::QuantGroupedMatMul { quant } => quant_grouped_matmul(op.name(), *quant, inputs),
        _ => Err(not_in_family(op, inputs, OpFamily::Grouped)),
    }
}

/// x [T, S, K] (float), w [E, N, K] in x's dtype, ids I32 [T, k] → [T, k, N] in x's dtype.
fn grouped_matmul(op: &'static str, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    arity(op, inputs, 3)?;
    let (t, k, top) = x_and_ids(op, inputs)?;
    same_dtype(op, inputs, 0, 1)?;
    let &[_, n, wk] = inputs[1].shape.dims() else {
        return Err(mismatch(op, inputs, "w must be 3-D [experts, N, K]: one out × in matrix per expert"));
    };
    if wk != k {
        return Err(mismatch(
            op,
            inputs,
            format!("x's last dim K = {k} differs from w's last dim {wk}; w must be [experts, N, {k}]"),
        ));
    }
    Ok(TensorType::new(Shape(vec![t, top, n]), inputs[0].dtype))
}

/// x [T, S, K] (float), w U8 [E, N, K / block_elems · block_bytes], ids I32 [T, k] → F32
/// [T, k, N].
fn quant_grouped_matmul(
    op: &'static str,
    quant: QuantType,
    inputs: &[&TensorType],
) -> Result<TensorType, IrError> {
    arity(op, inputs, 3)?;
    let (t, k, top) = x_and_ids(op, inputs)?;
    let w = inputs[1];
    want_dtype(op, 1, w.dtype, DType::U8)?;
    let &[_, n, row_bytes] = w.shape.dims() else {
        return Err(mismatch(
            op,
            inputs,
            "w must be a 3-D U8 stack [experts, N, bytes per row] of quantized blocks; a stack stored \
             as [experts · N, bytes per row] (GGUF's layout) reshapes to it as a view",
        ));
    };
    let need = quant.byte_len(k).map_err(|e| {
        mismatch(
            op,
            inputs,
            format!(
                "x's last dim K = {k} must be whole {quant} blocks of {} elements ({e})",
                quant.block_elems()
            ),
        )
    })?;
    if need != row_bytes {
        let held = quant.elem_count(row_bytes).map(|e| format!(" ({e} elements)")).unwrap_or_default();
        return Err(mismatch(
            op,
            inputs,
            format!(
                "K = {k} elements of {quant} take {need} bytes per expert row, but w's rows have \
                 {row_bytes}{held}; w must be [experts, N, {need}] for this x"
            ),
        ));
    }
    Ok(TensorType::new(Shape(vec![t, top, n]), DType::F32))
}

/// The checks both ops make of x [T, S, K] (float) and ids I32 [T, k]: (T, K, k).
fn x_and_ids(op: &'static str, inputs: &[&TensorType]) -> Result<(usize, usize, usize), IrError> {
    let (x, ids) = (inputs[0], inputs[2]);
    float(op, 0, x.dtype)?;
    want_dtype(op, 2, ids.dtype, DType::I32)?;
    let &[t, s, k] = x.shape.dims() else {
        return Err(mismatch(
            op,
            inputs,
            "x must be 3-D [tokens, slots, K] with slots 1 (shared by every expert) or k \
             (one row per chosen expert); reshape it",
        ));
    };
    let &[ti, top] = ids.shape.dims() else {
        return Err(mismatch(op, inputs, "ids must be 2-D I32 [tokens, k]: each token's chosen experts"));
    };
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
    Ok((t, k, top))
}

/// out [T, k, N]: each element is one dot of K (x's last dim).
pub(super) fn flops(op: &Op, inputs: &[&TensorType], out: &TensorType) -> f64 {
    if !matches!(op, Op::GroupedMatMul | Op::QuantGroupedMatMul { .. }) {
        return 0.0;
    }
    2.0 * out.shape.numel() as f64 * dims(inputs, 0).last().copied().unwrap_or(0) as f64
}
