//! `Fft`: the discrete Fourier transform of every row of x `[..., N, 2]` (complex values as
//! (real, imag)) along axis −2, computed in f64 by `rlx_ir::spectral::fft_in_place` (radix-2
//! with exactly reduced twiddle angles) and rounded once to f32. Rows run in parallel (rayon).
//! Forward unscaled, inverse × 1/N (PyTorch's norm "backward").

use crate::elem::{float_tensor, floats, invalid};
use rayon::prelude::*;
use rlx_backend::BackendError;
use rlx_ir::spectral::fft_in_place;
use rlx_ir::{Tensor, TensorType};

const OP: &str = "fft";

/// x F32 `[..., N, 2]` → the same shape, each row of N complex values transformed.
pub fn fft(inverse: bool, x: &Tensor, out: &TensorType) -> Result<Tensor, BackendError> {
    let n = match x.dims() {
        [.., n, 2] if *n > 0 => *n,
        _ => return Err(invalid(OP, format!("operand {} is not [..., N ≥ 1, 2]", x.shape()))),
    };
    let xs = floats(x, OP)?;
    let mut res = vec![0f32; xs.len()];
    res.par_chunks_mut(2 * n).zip(xs.par_chunks(2 * n)).for_each(|(o, row)| {
        let mut re: Vec<f64> = row.iter().step_by(2).map(|&v| f64::from(v)).collect();
        let mut im: Vec<f64> = row.iter().skip(1).step_by(2).map(|&v| f64::from(v)).collect();
        fft_in_place(&mut re, &mut im, inverse);
        for (k, pair) in o.chunks_mut(2).enumerate() {
            pair[0] = re[k] as f32;
            pair[1] = im[k] as f32;
        }
    });
    float_tensor(&out.shape, out.dtype, res)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use rlx_ir::DType;

    #[test]
    fn transforms_each_row_and_inverts() {
        // Two rows of N = 4: a constant (all energy in bin 0) and an impulse at 1 (e^{-iπk/2}).
        let x =
            Tensor::from_f32([2, 4, 2], vec![1., 0., 1., 0., 1., 0., 1., 0., 0., 0., 1., 0., 0., 0., 0., 0.])
                .unwrap();
        let ty = TensorType::new([2, 4, 2], DType::F32);
        let y = fft(false, &x, &ty).unwrap();
        let v = y.as_f32().unwrap();
        assert_eq!(&v[..8], &[4., 0., 0., 0., 0., 0., 0., 0.]);
        let want = [1., 0., 0., -1., -1., 0., 0., 1.];
        assert!(v[8..].iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-7), "{v:?}");
        let back = fft(true, &y, &ty).unwrap();
        assert!(back.as_f32().unwrap().iter().zip(x.as_f32().unwrap()).all(|(a, b)| (a - b).abs() < 1e-7));
        // A NaN real part reaches every real output of its row (each reads x[0] with weight 1);
        // the other row is untouched.
        let x = Tensor::from_f32([2, 2, 2], vec![f32::NAN, 0., 1., 0., 1., 0., 1., 0.]).unwrap();
        let y = fft(false, &x, &TensorType::new([2, 2, 2], DType::F32)).unwrap();
        let v = y.as_f32().unwrap();
        assert!(v[0].is_nan() && v[2].is_nan());
        assert_eq!(&v[4..], &[2., 0., 0., 0.]);
    }
}
