//! Spectral composites on the fft family's native op ([`rlx_ir::Graph::fft`]): real-input
//! transforms (`rfft`, `irfft`), the power |z|², the short-time Fourier transform and its
//! inverse ([`stft`]), and the features built on them ([`spectrogram`]: Whisper's log-mel,
//! Welch's PSD), with the host-side windows and mel banks they bake in as constants ([`audio`]).
//!
//! Complex values are F32 tensors with a trailing axis of 2, (real, imag), as in rlx-ir's fft.

pub mod audio;
pub mod spectrogram;
pub mod stft;

use rlx_ir::{complex_rows, DType, Graph, IrError, NodeId, Tensor};

/// The dims and last-axis length of a real F32 tensor `[..., N]` with N ≥ 1.
pub(crate) fn real_rows(g: &Graph, op: &'static str, x: NodeId) -> Result<(Vec<usize>, usize), IrError> {
    let ty = g.ty_for(op, x)?;
    if ty.dtype != DType::F32 {
        return Err(IrError::DType { op, operand: 0, got: ty.dtype, expected: "f32 (cast it first)".into() });
    }
    match ty.shape.dims() {
        [lead @ .., n] if *n > 0 => Ok((lead.to_vec(), *n)),
        _ => Err(IrError::Attribute {
            op,
            attr: "input shape",
            shape: ty.shape.clone(),
            reason: "the signal must be F32 [..., N] with N ≥ 1 samples on the last axis".into(),
        }),
    }
}

/// Real-input Fourier transforms and the power spectrum on the native fft.
pub trait SpectralExt: AsMut<Graph> {
    /// The one-sided spectrum of real rows x F32 `[..., N]`: `[..., N/2 + 1, 2]`, bins 0 to
    /// ⌊N/2⌋ of the full transform, as `torch.view_as_real(torch.fft.rfft(x, dim=-1))`.
    fn rfft(&mut self, x: NodeId) -> Result<NodeId, IrError> {
        let g = self.as_mut();
        let (lead, n) = real_rows(g, "rfft", x)?;
        g.atomically(|g| {
            let z = real_to_complex(g, x, &lead, n)?;
            let spec = g.fft(z, false)?;
            g.slice(spec, -2, 0, n / 2 + 1, 1)
        })
    }

    /// The real signal of length `n` (default 2·(M − 1)) whose one-sided spectrum is X F32
    /// `[..., M, 2]`: `[..., n]`, as `torch.fft.irfft(view_as_complex(X), n, dim=-1)`. The
    /// first n/2 + 1 bins are used (missing ones count as zero), the rest follow by Hermitian
    /// symmetry, and the imaginary parts of bin 0 (and of bin n/2 for even n) are ignored.
    fn irfft(&mut self, x: NodeId, n: Option<usize>) -> Result<NodeId, IrError> {
        let g = self.as_mut();
        let (lead, m) = complex_rows(g, "irfft", x)?;
        let n = n.unwrap_or(2 * (m - 1));
        if n == 0 {
            return Err(IrError::Attribute {
                op: "irfft",
                attr: "n",
                shape: g.ty(x)?.shape.clone(),
                reason: format!("the output length is 0 (M = {m} bins give 2·(M − 1)); pass n ≥ 1"),
            });
        }
        let h = n / 2 + 1;
        g.atomically(|g| {
            let rank = lead.len() + 2;
            let used = if m >= h {
                g.slice(x, -2, 0, h, 1)?
            } else {
                let mut pads = vec![(0, 0); rank];
                pads[rank - 2] = (0, h - m);
                g.pad(x, &pads, 0.0)?
            };
            let full = if n > h {
                // Bins h..n are conj(X[n − k]).
                let idx: Vec<i32> = (h..n).map(|k| (n - k) as i32).collect();
                let idx = g.constant(Tensor::from_i32([n - h], idx)?)?;
                let mirrored = g.gather(used, idx, -2)?;
                let conj = g.constant_f32(&[2], vec![1.0, -1.0])?;
                let mirrored = g.mul(mirrored, conj)?;
                g.concat(&[used, mirrored], -2)?
            } else {
                used
            };
            let t = g.fft(full, true)?;
            let re = g.slice(t, -1, 0, 1, 1)?;
            let mut dims = lead.clone();
            dims.push(n);
            g.reshape(re, &dims)
        })
    }

    /// |z|² of complex values z F32 `[..., 2]`: `[...]`, real² + imag² (the power spectrum).
    fn complex_abs2(&mut self, z: NodeId) -> Result<NodeId, IrError> {
        self.as_mut().atomically(|g| {
            let sq = g.square(z)?;
            g.sum(sq, &[-1], false)
        })
    }
}

impl SpectralExt for Graph {}

/// x `[..., N]` as complex rows `[..., N, 2]` with zero imaginary parts.
fn real_to_complex(g: &mut Graph, x: NodeId, lead: &[usize], n: usize) -> Result<NodeId, IrError> {
    let mut dims = lead.to_vec();
    dims.extend([n, 1]);
    let col = g.reshape(x, &dims)?;
    let mut pads = vec![(0, 0); dims.len()];
    pads[dims.len() - 1] = (0, 1);
    g.pad(col, &pads, 0.0)
}
