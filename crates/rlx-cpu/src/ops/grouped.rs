//! `GroupedMatMul` and `QuantGroupedMatMul`: the experts of a mixture-of-experts layer. For
//! every token t and slot j, `out[t, j, :] = w[ids[t, j]] · x[t, j or 0, :]`, in plain loops with
//! f64 accumulation (one dot per output element, so the reference does not depend on a blocking
//! order). An id outside [0, E) gives a row of zeros.
//!
//! - `GroupedMatMul` (float stack): rows run in parallel (rayon), one (t, j) slot per task.
//! - `QuantGroupedMatMul` (packed stack of blocks): each chosen expert is one task, which
//!   decodes its rows one at a time with the reference decoder ([`crate::quant::dequantize`])
//!   and uses each decoded row for every slot that chose the expert. Experts no slot chose are
//!   never decoded, and no expert exists in f32 all at once.

use crate::elem::{elems, float_tensor, floats, invalid};
use crate::quant::dequantize;
use rayon::prelude::*;
use rlx_backend::BackendError;
use rlx_ir::{DType, QuantType, Tensor, TensorType};

const OP: &str = "grouped_matmul";
const QUANT_OP: &str = "quant_grouped_matmul";

/// x [T, S, K], w [E, N, K], ids I32 [T, k] → [T, k, N] in x's dtype.
pub fn grouped_matmul(
    x: &Tensor,
    w: &Tensor,
    ids: &Tensor,
    out: &TensorType,
) -> Result<Tensor, BackendError> {
    let (&[t, s, k], &[e, n, wk], &[ti, top]) = (x.dims(), w.dims(), ids.dims()) else {
        return Err(invalid(
            OP,
            format!("operands {}, {}, {} are not 3-D, 3-D, 2-D", x.shape(), w.shape(), ids.shape()),
        ));
    };
    if wk != k || ti != t || (s != 1 && s != top) {
        return Err(invalid(
            OP,
            format!("operands {}, {}, {} do not fit", x.shape(), w.shape(), ids.shape()),
        ));
    }
    let (xs, ws) = (floats(x, OP)?, floats(w, OP)?);
    let id: &[i32] = elems(ids, OP)?;
    let mut res = vec![0f32; t * top * n];
    if n > 0 {
        res.par_chunks_mut(n).enumerate().for_each(|(slot, row)| {
            let (tok, j) = (slot / top, slot % top);
            let expert = match usize::try_from(id[slot]) {
                Ok(ex) if ex < e => ex,
                _ => return, // out of range: the row stays zeros
            };
            let xr = &xs[(tok * s + if s == 1 { 0 } else { j }) * k..][..k];
            for (col, o) in row.iter_mut().enumerate() {
                let wr = &ws[(expert * n + col) * k..][..k];
                let dot: f64 = xr.iter().zip(wr).map(|(&a, &b)| f64::from(a) * f64::from(b)).sum();
                *o = dot as f32;
            }
        });
    }
    float_tensor(&out.shape, out.dtype, res)
}

/// x [T, S, K] (any float dtype), w U8 [E, N, row_bytes] of `quant` blocks, ids I32 [T, k] →
/// F32 [T, k, N].
pub fn quant_grouped_matmul(
    quant: QuantType,
    x: &Tensor,
    w: &Tensor,
    ids: &Tensor,
    out: &TensorType,
) -> Result<Tensor, BackendError> {
    let (&[t, s, k], &[e, n, row_bytes], &[ti, top]) = (x.dims(), w.dims(), ids.dims()) else {
        return Err(invalid(
            QUANT_OP,
            format!("operands {}, {}, {} are not 3-D, 3-D, 2-D", x.shape(), w.shape(), ids.shape()),
        ));
    };
    let wk = quant.elem_count(row_bytes).map_err(|err| invalid(QUANT_OP, err.to_string()))?;
    if wk != k || ti != t || (s != 1 && s != top) {
        return Err(invalid(
            QUANT_OP,
            format!("operands {}, {}, {} do not fit", x.shape(), w.shape(), ids.shape()),
        ));
    }
    let xs = floats(x, QUANT_OP)?;
    let bytes: &[u8] = elems(w, QUANT_OP)?;
    let id: &[i32] = elems(ids, QUANT_OP)?;
    // The slots of each expert, in slot order.
    let mut chosen: Vec<Vec<usize>> = vec![Vec::new(); e];
    for (slot, &i) in id.iter().enumerate() {
        if let Some(list) = usize::try_from(i).ok().and_then(|ex| chosen.get_mut(ex)) {
            list.push(slot);
        }
    }
    let x_row = |slot: usize| {
        let (tok, j) = (slot / top, slot % top);
        (tok * s + if s == 1 { 0 } else { j }) * k
    };
    // Per chosen expert: its slots' rows [slots, N].
    let parts: Vec<(usize, Vec<f32>)> = chosen
        .par_iter()
        .enumerate()
        .filter(|(_, slots)| !slots.is_empty())
        .map(|(ex, slots)| {
            let mut decoded = vec![0f32; k];
            let mut part = vec![0f32; slots.len() * n];
            for col in 0..n {
                let at = (ex * n + col) * row_bytes;
                let src = bytes
                    .get(at..at + row_bytes)
                    .ok_or_else(|| invalid(QUANT_OP, "expert stack shorter than its shape"))?;
                dequantize(quant, src, &mut decoded).map_err(|err| invalid(QUANT_OP, err.to_string()))?;
                for (i, &slot) in slots.iter().enumerate() {
                    let xr = &xs[x_row(slot)..][..k];
                    let dot: f64 = xr.iter().zip(&decoded).map(|(&a, &b)| f64::from(a) * f64::from(b)).sum();
                    part[i * n + col] = dot as f32;
                }
            }
            Ok((ex, part))
        })
        .collect::<Result<_, BackendError>>()?;
    let mut res = vec![0f32; t * top * n];
    for (ex, part) in parts {
        for (&slot, row) in chosen[ex].iter().zip(part.chunks_exact(n.max(1))) {
            res[slot * n..(slot + 1) * n].copy_from_slice(&row[..n]);
        }
    }
    float_tensor(&out.shape, DType::F32, res)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use rlx_ir::DType;

    #[test]
    fn picks_each_slots_expert_and_zeroes_bad_ids() {
        // E = 2 experts of N = 2 rows, K = 2: expert 0 is the identity, expert 1 swaps and doubles.
        let w = Tensor::from_f32([2, 2, 2], vec![1., 0., 0., 1., 0., 2., 2., 0.]).unwrap();
        let x = Tensor::from_f32([2, 1, 2], vec![3., 4., 5., f32::NAN]).unwrap();
        let ids = Tensor::from_i32([2, 2], vec![1, 0, -1, 2]).unwrap();
        let out = grouped_matmul(&x, &w, &ids, &TensorType::new([2, 2, 2], DType::F32)).unwrap();
        assert_eq!(out.as_f32().unwrap(), &[8., 6., 3., 4., 0., 0., 0., 0.]);
        // One row per slot (S = k), NaN in gives NaN out.
        let x = Tensor::from_f32([1, 2, 2], vec![1., 2., f32::NAN, 1.]).unwrap();
        let ids = Tensor::from_i32([1, 2], vec![0, 1]).unwrap();
        let out = grouped_matmul(&x, &w, &ids, &TensorType::new([1, 2, 2], DType::F32)).unwrap();
        let v = out.as_f32().unwrap();
        assert_eq!(&v[..2], &[1., 2.]);
        assert!(v[2].is_nan() && v[3].is_nan());
    }

    #[test]
    fn quantized_stack_matches_the_decoded_stack() {
        // E = 3 experts of N = 2 rows of K = 64 (two Q8_0 blocks, scale 0.5, values i % 7 − 3).
        let (e, n, k) = (3, 2, 64);
        let mut bytes = Vec::new();
        let mut dense = Vec::new();
        for r in 0..e * n {
            for b in 0..2 {
                bytes.extend(half::f16::from_f32(0.5).to_le_bytes());
                for i in 0..32 {
                    let q = ((r * 64 + b * 32 + i) % 7) as i8 - 3;
                    bytes.push(q as u8);
                    dense.push(f32::from(q) * 0.5);
                }
            }
        }
        let wq = Tensor::from_u8([e, n, 68], bytes).unwrap();
        let wf = Tensor::from_f32([e, n, k], dense).unwrap();
        let x = Tensor::from_f32([2, 1, k], (0..2 * k).map(|i| (i % 5) as f32 - 2.0).collect()).unwrap();
        // Token 0 picks experts 2 and 0, token 1 expert 2 and an out-of-range id.
        let ids = Tensor::from_i32([2, 2], vec![2, 0, 2, 7]).unwrap();
        let ty = TensorType::new([2, 2, n], DType::F32);
        let got = quant_grouped_matmul(QuantType::Q8_0, &x, &wq, &ids, &ty).unwrap().to_f32_vec();
        let want = grouped_matmul(&x, &wf, &ids, &ty).unwrap().to_f32_vec();
        assert_eq!(got, want);
        assert!(got[..6].iter().any(|&v| v != 0.0));
        assert_eq!(&got[6..], &[0.0, 0.0]);
        // Rows that are not whole blocks are an error naming the op.
        let bad = Tensor::from_u8([e, n, 67], vec![0; e * n * 67]).unwrap();
        let err = quant_grouped_matmul(QuantType::Q8_0, &x, &bad, &ids, &ty).unwrap_err();
        assert!(err.to_string().contains("quant_grouped_matmul"), "{err}");
    }
}
