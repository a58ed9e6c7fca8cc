//! `GroupedMatMul`: the experts of a mixture-of-experts layer. For every token t and slot j,
//! `out[t, j, :] = w[ids[t, j]] · x[t, j or 0, :]`, in plain loops with f64 accumulation (one
//! dot per output element, so the reference does not depend on a blocking order). Rows run in
//! parallel (rayon), one (t, j) slot per task. An id outside [0, E) gives a row of zeros.

use crate::elem::{elems, float_tensor, floats, invalid};
use rayon::prelude::*;
use rlx_backend::BackendError;
use rlx_ir::{Tensor, TensorType};

const OP: &str = "grouped_matmul";

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
}
