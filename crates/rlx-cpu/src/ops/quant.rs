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
    quant_matmul_in_slabs(quant, x, w, out, SLAB_ELEMS)
}

/// [`quant_matmul`] decoding at most `slab_elems` weights (at least one row) at a time.
fn quant_matmul_in_slabs(
    quant: QuantType,
    x: &Tensor,
    w: &Tensor,
    out: &TensorType,
    slab_elems: usize,
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
    let slab_rows = (slab_elems / k).clamp(1, n.max(1));
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn slabs_of_any_size_give_the_same_product() {
        let q = QuantType::Q8_0;
        let (m, n, k) = (3, 7, 64);
        let mut bytes: Vec<u8> = (0..n * 68).map(|i| (i * 37 % 251) as u8).collect();
        for block in bytes.chunks_exact_mut(34) {
            block[..2].copy_from_slice(&half::f16::from_f32(0.01).to_le_bytes());
        }
        let w = Tensor::from_u8([n, 68], bytes).unwrap();
        let x = Tensor::from_f32([m, k], (0..m * k).map(|i| (i % 13) as f32 - 6.0).collect()).unwrap();
        let out = TensorType::new([m, n], DType::F32);
        let whole = quant_matmul_in_slabs(q, &x, &w, &out, SLAB_ELEMS).unwrap().to_f32_vec();
        assert!(whole.iter().any(|&v| v != 0.0));
        for slab in [1, k, 2 * k, 5 * k] {
            let sliced = quant_matmul_in_slabs(q, &x, &w, &out, slab).unwrap().to_f32_vec();
            // gemm may order a dot's terms by its tile shape: equal to f32 rounding.
            for (a, b) in sliced.iter().zip(&whole) {
                assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "slab of {slab} weights: {a} vs {b}");
            }
        }
    }
}
