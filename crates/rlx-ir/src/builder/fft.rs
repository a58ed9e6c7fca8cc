//! Fourier transforms of any length, built from the native [`Op::Fft`] (power-of-two rows up
//! to [`FFT_NATIVE_MAX`]) and plain elementwise and data-movement ops, so every backend that
//! runs `Fft` runs all of them with no host step at run time.
//!
//! Complex values are F32 tensors with a trailing axis of 2, (real, imag): what
//! `torch.view_as_real` shows of a complex tensor. Transforms run along axis −2.
//!
//! - A power of two up to [`FFT_NATIVE_MAX`]: one `Fft` node.
//! - A larger power of two N = N1·N2: the four-step method. With n = N2·n1 + n2 and
//!   k = k1 + N1·k2, `X[k] = Σ_{n2} W_{N2}^{n2·k2} · W_N^{n2·k1} · Σ_{n1} x[n] W_{N1}^{n1·k1}`:
//!   transpose, FFTs of length N1, a constant twiddle product, transpose, FFTs of length N2,
//!   transpose. Each sub-FFT goes through [`Graph::fft`] again, so any power of two works.
//! - Any other N: Bluestein's chirp-z. Since `n·k = (n² + k² − (k−n)²) / 2`,
//!   `X[k] = c[k] · Σ_n (x[n]·c[n]) · conj(c[k−n])` with `c[n] = e^{∓πi·n²/N}`: a linear
//!   convolution, computed as a circular one of power-of-two length M ≥ 2N − 1 (FFT, product
//!   with the chirp's spectrum, inverse FFT). The chirp and its spectrum are computed on the host
//!   in f64 when the graph is built ([`crate::spectral`]), with n² reduced mod 2N so the angles
//!   stay exact, and baked in as constants.

use crate::spectral::{fft_in_place, twiddle};
use crate::{DType, Graph, IrError, NodeId, Op, FFT_NATIVE_MAX};
use std::f64::consts::PI;

/// The leading dims and the row length N of a complex tensor `[..., N, 2]` (F32), or an error
/// naming `op` and the shape.
pub fn complex_rows(g: &Graph, op: &'static str, x: NodeId) -> Result<(Vec<usize>, usize), IrError> {
    let ty = g.ty_for(op, x)?;
    if ty.dtype != DType::F32 {
        return Err(IrError::DType { op, operand: 0, got: ty.dtype, expected: "f32 (cast it first)".into() });
    }
    match ty.shape.dims() {
        [lead @ .., n, 2] if *n > 0 => Ok((lead.to_vec(), *n)),
        _ => Err(IrError::Attribute {
            op,
            attr: "input shape",
            shape: ty.shape.clone(),
            reason: "a complex input is F32 [..., N, 2] with N ≥ 1: (real, imag) in a last axis of \
                     2 (use Graph::rfft for a real signal)"
                .into(),
        }),
    }
}

impl Graph {
    /// The discrete Fourier transform of every row of x F32 `[..., N, 2]` (complex values as
    /// (real, imag)) along axis −2, for any N ≥ 1: `X[k] = Σₙ x[n]·e^{−2πi·nk/N}`, or with +
    /// and × 1/N when `inverse`. Equals `torch.view_as_real(torch.fft.fft(z, dim=-1))` (or
    /// `ifft`) for `z = torch.view_as_complex(x)`, norm "backward". See the module doc for how
    /// each length is built. Errors name `fft` and the shape.
    pub fn fft(&mut self, x: NodeId, inverse: bool) -> Result<NodeId, IrError> {
        let (_, n) = complex_rows(self, "fft", x)?;
        if n.is_power_of_two() && n <= FFT_NATIVE_MAX {
            return self.push(Op::Fft { inverse }, &[x]);
        }
        self.atomically(
            |g| if n.is_power_of_two() { g.four_step(x, inverse) } else { g.bluestein(x, inverse) },
        )
    }

    /// `fft(x, true)`: PyTorch's `fft.ifft` (× 1/N) on complex rows `[..., N, 2]`.
    pub fn ifft(&mut self, x: NodeId) -> Result<NodeId, IrError> {
        self.fft(x, true)
    }

    /// x `[..., K, 2]` times the constant complex vector (re, im) of length K, along axis −2:
    /// `x·C1 + swap(x)·C2` with C1 = (re, re), C2 = (−im, im) and swap exchanging real and
    /// imaginary parts.
    pub(super) fn complex_scale(
        &mut self,
        x: NodeId,
        re: &[f64],
        im: &[f64],
        dims: &[usize],
    ) -> Result<NodeId, IrError> {
        let c1: Vec<f32> = re.iter().flat_map(|&r| [r as f32, r as f32]).collect();
        let c2: Vec<f32> = im.iter().flat_map(|&i| [-i as f32, i as f32]).collect();
        let mut cd = dims.to_vec();
        cd.push(2);
        let c1 = self.constant_f32(&cd, c1)?;
        let c2 = self.constant_f32(&cd, c2)?;
        let a = self.mul(x, c1)?;
        let swapped = self.reverse(x, &[-1])?;
        let b = self.mul(swapped, c2)?;
        self.add(a, b)
    }

    fn four_step(&mut self, x: NodeId, inverse: bool) -> Result<NodeId, IrError> {
        let (lead, n) = complex_rows(self, "fft", x)?;
        let bits = n.trailing_zeros();
        let n1 = 1usize << bits.div_ceil(2);
        let n2 = n / n1;
        let rows: usize = lead.iter().product();
        let x4 = self.reshape(x, &[rows, n1, n2, 2])?;
        let cols = self.permute(x4, &[0, 2, 1, 3])?; // [rows, n2, n1]: column n2 holds x[N2·n1 + n2]
        let y = self.fft(cols, inverse)?; // Y[n2, k1]
        let sign = if inverse { 1.0 } else { -1.0 };
        let (mut tr, mut ti) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for a in 0..n2 {
            for b in 0..n1 {
                let (c, s) = twiddle((a * b) as u64, n as u64, sign);
                tr.push(c);
                ti.push(s);
            }
        }
        let y = self.complex_scale(y, &tr, &ti, &[n2, n1])?;
        let y = self.permute(y, &[0, 2, 1, 3])?; // [rows, k1, n2]
        let z = self.fft(y, inverse)?; // Z[k1, k2]
        let z = self.permute(z, &[0, 2, 1, 3])?; // [rows, k2, k1]: X[k1 + N1·k2]
        let mut dims = lead;
        dims.extend([n, 2]);
        self.reshape(z, &dims)
    }

    fn bluestein(&mut self, x: NodeId, inverse: bool) -> Result<NodeId, IrError> {
        let (lead, n) = complex_rows(self, "fft", x)?;
        let m = (2 * n - 1).next_power_of_two();
        let sign = if inverse { 1.0 } else { -1.0 };
        // c[j] = e^{sign·πi·j²/N}, with j² reduced mod 2N.
        let chirp: Vec<(f64, f64)> = (0..n as u64)
            .map(|j| {
                let a = sign * PI * ((j * j) % (2 * n as u64)) as f64 / n as f64;
                (a.cos(), a.sin())
            })
            .collect();
        // The spectrum of conj(c) laid out circularly over M points.
        let (mut br, mut bi) = (vec![0.0; m], vec![0.0; m]);
        for (j, &(c, s)) in chirp.iter().enumerate() {
            br[j] = c;
            bi[j] = -s;
            if j > 0 {
                br[m - j] = c;
                bi[m - j] = -s;
            }
        }
        fft_in_place(&mut br, &mut bi, false);
        let (cr, ci): (Vec<f64>, Vec<f64>) = chirp.iter().copied().unzip();
        let a = self.complex_scale(x, &cr, &ci, &[n])?;
        let rank = lead.len() + 2;
        let mut pads = vec![(0, 0); rank];
        pads[rank - 2] = (0, m - n);
        let a = self.pad(a, &pads, 0.0)?;
        let spec = self.fft(a, false)?;
        let prod = self.complex_scale(spec, &br, &bi, &[m])?;
        let conv = self.fft(prod, true)?;
        let conv = self.slice(conv, -2, 0, n, 1)?;
        let scale = if inverse { 1.0 / n as f64 } else { 1.0 };
        let (fr, fi): (Vec<f64>, Vec<f64>) = chirp.iter().map(|&(c, s)| (c * scale, s * scale)).unzip();
        self.complex_scale(conv, &fr, &fi, &[n])
    }
}
