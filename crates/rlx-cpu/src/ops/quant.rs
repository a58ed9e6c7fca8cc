//! The ops on block-quantized weights: `QuantMatMul` (x · dequant(w)ᵀ) and `QuantGather`
//! (decoded rows of a quantized table). Blocks are decoded with the reference decoder
//! ([`crate::quant::dequantize`]) a slab of weight rows at a time, so a large weight never
//! exists in f32 all at once; each slab's product runs through the f32 matmul (gemm) like
//! `MatMul` with `transpose_b`.

use super::matmul::matmul_f32;
use crate::elem::{elems, float_tensor, floats, invalid};
use crate::quant::dequantize;
use rlx_backend::BackendError;
use rlx_ir::{DType, QuantType, Tensor, TensorType};

/// f32 values of one decoded slab of weight rows, at most (4 Mi floats, 16 MiB).
const SLAB_ELEMS: usize = 1 << 22;

/// The rows, bytes per row and elements per row of a packed [rows, row_bytes] operand.
fn packed_geometry(op: &str, quant: QuantType, w: &Tensor) -> Result<(usize, usize, usize), BackendError> {
    let &[rows, row_bytes] = w.dims() else {
        return Err(invalid(op, format!("packed operand of shape {} is not 2-D", w.shape())));
    };
    let k = quant.elem_count(row_bytes).map_err(|e| invalid(op, e.to_string()))?;
    Ok((rows, row_bytes, k))
}

/// `x · dequant(w)ᵀ`: x [..., K] (any float dtype), w U8 [N, row_bytes] → F32 [..., N].
pub fn quant_matmul(
    quant: QuantType,
    x: &Tensor,
    w: &Tensor,
    out: &TensorType,
) -> Result<Tensor, BackendError> {
    const OP: &str = "quant_matmul";
    let (n, row_bytes, k) = packed_geometry(OP, quant, w)?;
    let bytes: &[u8] = elems(w, OP)?;
    let xs = floats(x, OP)?;
    let m: usize = out.shape.dims().split_last().map_or(1, |(_, lead)| lead.iter().product());
    if xs.len() != m * k {
        return Err(invalid(OP, format!("x {} is not [{m} rows, K = {k}]", x.shape())));
    }
    let mut res = vec![0f32; m * n];
    if k == 0 || m == 0 {
        // An empty contraction: every output is 0.
        return float_tensor(&out.shape, DType::F32, res);
    }
    let slab_rows = (SLAB_ELEMS / k).clamp(1, n.max(1));
    let mut decoded = vec![0f32; slab_rows * k];
    for r0 in (0..n).step_by(slab_rows) {
        let rows = slab_rows.min(n - r0);
        let src = bytes
            .get(r0 * row_bytes..(r0 + rows) * row_bytes)
            .ok_or_else(|| invalid(OP, "weight shorter than its shape"))?;
        let slab = &mut decoded[..rows * k];
        dequantize(quant, src, slab).map_err(|e| invalid(OP, e.to_string()))?;
        let part = matmul_f32(&xs, &[m, k], slab, &[rows, k], false, true, &[m, rows])?;
        for (dst, src) in res.chunks_exact_mut(n).zip(part.chunks_exact(rows)) {
            dst[r0..r0 + rows].copy_from_slice(src);
        }
    }
    float_tensor(&out.shape, DType::F32, res)
}

/// Rows `ids` of the quantized table, decoded: F32 [ids..., K]; an id outside [0, V) gives
/// zeros.
pub fn quant_gather(
    quant: QuantType,
    table: &Tensor,
    ids: &Tensor,
    out: &TensorType,
) -> Result<Tensor, BackendError> {
    const OP: &str = "quant_gather";
    let (v, row_bytes, k) = packed_geometry(OP, quant, table)?;
    let bytes: &[u8] = elems(table, OP)?;
    let ids: &[i32] = elems(ids, OP)?;
    let mut res = vec![0f32; ids.len() * k];
    for (&id, dst) in ids.iter().zip(res.chunks_exact_mut(k.max(1))) {
        let Some(row) = usize::try_from(id).ok().filter(|&r| r < v) else {
            continue;
        };
        let src = bytes
            .get(row * row_bytes..(row + 1) * row_bytes)
            .ok_or_else(|| invalid(OP, "table shorter than its shape"))?;
        dequantize(quant, src, dst).map_err(|e| invalid(OP, e.to_string()))?;
    }
    float_tensor(&out.shape, DType::F32, res)
}
