//! The quant family, the ops on block-quantized weights (shape rules and flop count): `QuantMatMul` (x · dequant(w)ᵀ) and
//! `QuantGather` (rows of a quantized table). The weight is U8 bytes [rows, row_bytes] whose
//! rows are whole blocks of the op's [`QuantType`]; each message names the shapes and the
//! byte width a row of K elements needs.

use super::{arity, dims, float, mismatch, not_in_family, want_dtype};
use crate::{DType, IrError, Op, OpFamily, QuantType, Shape, TensorType};

pub(super) fn infer(op: &Op, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    match op {
        Op::QuantMatMul { quant } => quant_matmul(op.name(), *quant, inputs),
        Op::QuantGather { quant } => quant_gather(op.name(), *quant, inputs),
        _ => Err(not_in_family(op, inputs, OpFamily::Quant)),
    }
}

/// x [..., K] times a weight of N rows: each output element is one dot of K. A gather is
/// bandwidth-bound.
pub(super) fn flops(op: &Op, inputs: &[&TensorType], out: &TensorType) -> f64 {
    let Op::QuantMatMul { .. } = op else { return 0.0 };
    2.0 * out.shape.numel() as f64 * dims(inputs, 0).last().copied().unwrap_or(0) as f64
}

/// Elements in one row of `row_bytes` bytes of `quant` blocks, or why there is no whole number.
fn row_elems(
    op: &'static str,
    quant: QuantType,
    inputs: &[&TensorType],
    row_bytes: usize,
) -> Result<usize, IrError> {
    quant.elem_count(row_bytes).map_err(|e| {
        mismatch(
            op,
            inputs,
            format!(
                "a weight row of {row_bytes} bytes is not whole {quant} blocks ({e}); each row holds \
                 K / {} blocks of {} bytes",
                quant.block_elems(),
                quant.block_bytes()
            ),
        )
    })
}

/// The [rows, row_bytes] dims of a packed U8 weight at `operand`.
fn packed_dims(
    op: &'static str,
    inputs: &[&TensorType],
    operand: usize,
    what: &str,
) -> Result<(usize, usize), IrError> {
    let w = inputs[operand];
    want_dtype(op, operand, w.dtype, DType::U8)?;
    match w.shape.dims() {
        &[rows, bytes] => Ok((rows, bytes)),
        _ => Err(mismatch(
            op,
            inputs,
            format!("the {what} must be 2-D U8 [rows, bytes per row] (GGUF's layout of quantized blocks)"),
        )),
    }
}

/// x [..., K] (float), w U8 [N, K / block_elems · block_bytes] → F32 [..., N].
fn quant_matmul(op: &'static str, quant: QuantType, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    arity(op, inputs, 2)?;
    let x = inputs[0];
    float(op, 0, x.dtype)?;
    let (n, row_bytes) = packed_dims(op, inputs, 1, "weight")?;
    let Some((&k, batch)) = x.shape.dims().split_last() else {
        return Err(mismatch(op, inputs, "x must have rank ≥ 1 ([..., K]); reshape the scalar to [1]"));
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
        let held =
            row_elems(op, quant, inputs, row_bytes).map(|e| format!(" ({e} elements)")).unwrap_or_default();
        return Err(mismatch(
            op,
            inputs,
            format!(
                "K = {k} elements of {quant} take {need} bytes per weight row, but the weight has \
                 {row_bytes}{held}; the weight must be [N, {need}] for this x"
            ),
        ));
    }
    let mut dims = batch.to_vec();
    dims.push(n);
    Ok(TensorType::new(Shape(dims), DType::F32))
}

/// table U8 [V, row_bytes], ids I32 (any shape) → F32 [ids..., K].
fn quant_gather(op: &'static str, quant: QuantType, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    arity(op, inputs, 2)?;
    let (_, row_bytes) = packed_dims(op, inputs, 0, "table")?;
    want_dtype(op, 1, inputs[1].dtype, DType::I32)?;
    let k = row_elems(op, quant, inputs, row_bytes)?;
    let mut dims = inputs[1].shape.dims().to_vec();
    dims.push(k);
    Ok(TensorType::new(Shape(dims), DType::F32))
}
