//! The short-time Fourier transform and its inverse, as `torch.stft(..., return_complex=True)`
//! and `torch.istft` seen through `torch.view_as_real`, built from [`Graph::fft`] and data
//! movement with constant indices.
//!
//! - Framing is one `Gather` of the signal with a constant `[frames, n_fft]` index table. The
//!   table also does the centre padding: a reflected index for `PadMode::Reflect`, −1 (which
//!   `Gather` reads as zero) for `PadMode::Constant`, so no padded copy of the signal exists.
//! - Overlap-add (istft) is R = ⌈n_fft / hop⌉ shifted pads and adds: each frame is cut into R
//!   chunks of `hop` samples, chunk r of every frame is padded by r chunks before and R − 1 − r
//!   after, and the R results are summed. That is linear in the signal's length, where a
//!   constant overlap-add matrix would be quadratic. The window envelope Σ_t w²[i − t·hop]
//!   depends only on host values, so it is computed in f64 at build time and applied as a
//!   constant reciprocal.

use super::{real_rows, SpectralExt};
use rlx_ir::complex_rows;
use rlx_ir::{Graph, IrError, NodeId, Shape, Tensor};

/// How `stft` pads the signal's ends when `center` is set (PyTorch's `pad_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PadMode {
    /// Mirror without repeating the edge sample (`"reflect"`, PyTorch's default).
    Reflect,
    /// Zeros (`"constant"`).
    Constant,
}

/// The parameters of [`Graph::stft`] and [`Graph::istft`], with PyTorch's defaults from
/// [`StftOptions::new`]. `normalized=False` is the only normalisation.
#[derive(Clone, Debug, PartialEq)]
pub struct StftOptions {
    /// Frame length, the FFT size.
    pub n_fft: usize,
    /// Samples between frame starts (default n_fft / 4).
    pub hop_length: usize,
    /// The window: `win_length ≤ n_fft` host values, zero-padded on both sides to n_fft as
    /// PyTorch does (left ⌊(n_fft − win_length) / 2⌋). `None`: a rectangular window of n_fft
    /// ones.
    pub window: Option<Vec<f32>>,
    /// Pad n_fft / 2 samples at both ends so frame t is centred on sample t·hop (default true).
    pub center: bool,
    /// The padding when `center` (default reflect).
    pub pad_mode: PadMode,
    /// Keep only bins 0..=n_fft/2 (default true, the real-input spectrum).
    pub onesided: bool,
}

impl StftOptions {
    /// PyTorch's defaults for `n_fft`: hop n_fft / 4, rectangular window, centred with reflect
    /// padding, one-sided.
    pub fn new(n_fft: usize) -> StftOptions {
        StftOptions {
            n_fft,
            hop_length: n_fft / 4,
            window: None,
            center: true,
            pad_mode: PadMode::Reflect,
            onesided: true,
        }
    }

    /// Frequency bins of the output: n_fft / 2 + 1 when one-sided, else n_fft.
    pub fn n_freq(&self) -> usize {
        if self.onesided {
            self.n_fft / 2 + 1
        } else {
            self.n_fft
        }
    }

    /// The window zero-padded to n_fft, or an error naming `op` when it is empty, longer than
    /// n_fft, or the sizes are zero.
    fn padded_window(&self, op: &'static str, shape: &Shape) -> Result<Vec<f64>, IrError> {
        let bad = |reason: String| IrError::Attribute { op, attr: "options", shape: shape.clone(), reason };
        if self.n_fft == 0 || self.hop_length == 0 {
            return Err(bad(format!(
                "n_fft ({}) and hop_length ({}) must be at least 1",
                self.n_fft, self.hop_length
            )));
        }
        let win: Vec<f64> = match &self.window {
            Some(w) => w.iter().map(|&v| f64::from(v)).collect(),
            None => vec![1.0; self.n_fft],
        };
        if win.is_empty() || win.len() > self.n_fft {
            return Err(bad(format!(
                "the window has {} values; it needs 1 to n_fft = {} (win_length ≤ n_fft)",
                win.len(),
                self.n_fft
            )));
        }
        let left = (self.n_fft - win.len()) / 2;
        let mut out = vec![0.0; self.n_fft];
        out[left..left + win.len()].copy_from_slice(&win);
        Ok(out)
    }
}

/// The `[frames, n]` table of signal positions that frames of `n` samples `step` apart read
/// from a signal of `len` samples padded by `pad` at both ends: reflected (`reflect`) or −1
/// (zero) where the padded position lies outside the signal.
pub(super) fn frame_indices(
    len: usize,
    n: usize,
    step: usize,
    pad: usize,
    reflect: bool,
    frames: usize,
) -> Vec<i32> {
    let mut idx = Vec::with_capacity(frames * n);
    let last = len as i64 - 1;
    for t in 0..frames {
        for j in 0..n {
            let p = (t * step + j) as i64 - pad as i64;
            let v = if (0..=last).contains(&p) {
                p
            } else if !reflect {
                -1
            } else if p < 0 {
                -p
            } else {
                2 * last - p
            };
            idx.push(v as i32);
        }
    }
    idx
}

/// The short-time Fourier transform and its inverse (`torch.stft`/`torch.istft`).
pub trait StftExt: AsMut<Graph> {
    /// The short-time Fourier transform of signals x F32 `[B, L]`: `[B, n_freq, frames, 2]`,
    /// equal to `torch.view_as_real(torch.stft(x, n_fft, hop_length, win_length, window,
    /// center, pad_mode, normalized=False, onesided, return_complex=True))`. frames =
    /// 1 + ⌊(L + 2·pad − n_fft) / hop⌋ with pad = n_fft / 2 when centred, else 0. A 1-D signal
    /// is reshaped to `[1, L]` first. Errors (`stft`): bad options, a signal shorter than
    /// n_fft (uncentred), or reflect padding of n_fft / 2 ≥ L samples (as PyTorch).
    fn stft(&mut self, x: NodeId, opts: &StftOptions) -> Result<NodeId, IrError> {
        let g = self.as_mut();
        let (lead, len) = real_rows(g, "stft", x)?;
        let shape = g.ty(x)?.shape.clone();
        let window = opts.padded_window("stft", &shape)?;
        let bad =
            |reason: String| IrError::Attribute { op: "stft", attr: "signal", shape: shape.clone(), reason };
        let &[b] = lead.as_slice() else {
            return Err(bad("the signal must be [batch, samples]; reshape a 1-D signal to [1, L]".into()));
        };
        let n = opts.n_fft;
        let pad = if opts.center { n / 2 } else { 0 };
        let reflect = opts.center && opts.pad_mode == PadMode::Reflect;
        if reflect && pad >= len {
            return Err(bad(format!(
                "reflect padding of n_fft / 2 = {pad} samples needs a longer signal than L = {len}; \
                 use PadMode::Constant or a longer signal"
            )));
        }
        if len + 2 * pad < n {
            return Err(bad(format!(
                "the (padded) signal of {} samples is shorter than n_fft = {n}",
                len + 2 * pad
            )));
        }
        let frames = 1 + (len + 2 * pad - n) / opts.hop_length;
        g.atomically(|g| {
            let idx = frame_indices(len, n, opts.hop_length, pad, reflect, frames);
            let idx = g.constant(Tensor::from_i32([frames, n], idx)?)?;
            let mut fr = g.gather(x, idx, 1)?; // [B, frames, n_fft]
            if window.iter().any(|&w| w != 1.0) {
                let w = g.constant_f32(&[n], window.iter().map(|&v| v as f32).collect())?;
                fr = g.mul(fr, w)?;
            }
            let spec = if opts.onesided {
                g.rfft(fr)?
            } else {
                let col = g.reshape(fr, &[b, frames, n, 1])?;
                let z = g.pad(col, &[(0, 0), (0, 0), (0, 0), (0, 1)], 0.0)?;
                g.fft(z, false)?
            };
            g.permute(spec, &[0, 2, 1, 3])
        })
    }

    /// The inverse of [`Graph::stft`] for X F32 `[B, n_freq, frames, 2]`: the signals
    /// `[B, length]`, as `torch.istft(view_as_complex(X), n_fft, hop_length, win_length,
    /// window, center, normalized=False, onesided, length)` (real output; like PyTorch, a
    /// two-sided spectrum contributes only its bins 0..=n_fft/2). Each frame's inverse FFT is
    /// windowed, overlap-added and divided by the window envelope Σ w²; centring trims
    /// n_fft / 2 samples at both ends; `length` (default: everything the frames cover, less the
    /// centre trim) trims or zero-pads the end. Errors (`istft`): bad options, hop > win_length,
    /// a bin count that is not n_freq, or an envelope below 1e-11 inside the output (the
    /// window fails the NOLA condition), as PyTorch.
    fn istft(&mut self, x: NodeId, opts: &StftOptions, length: Option<usize>) -> Result<NodeId, IrError> {
        let g = self.as_mut();
        let (lead, frames) = complex_rows(g, "istft", x)?;
        let shape = g.ty(x)?.shape.clone();
        let window = opts.padded_window("istft", &shape)?;
        let bad =
            |reason: String| IrError::Attribute { op: "istft", attr: "input", shape: shape.clone(), reason };
        let &[b, bins] = lead.as_slice() else {
            return Err(bad("the spectrum must be [batch, n_freq, frames, 2]".into()));
        };
        let (n, hop) = (opts.n_fft, opts.hop_length);
        if bins != opts.n_freq() {
            return Err(bad(format!(
                "it has {bins} frequency bins; n_fft = {n} needs {} (onesided = {})",
                opts.n_freq(),
                opts.onesided
            )));
        }
        let win_len = opts.window.as_ref().map_or(n, Vec::len);
        if hop > win_len {
            return Err(bad(format!(
                "hop_length {hop} exceeds win_length {win_len}: frames would not overlap"
            )));
        }
        let expected = n + hop * (frames - 1);
        let start = if opts.center { n / 2 } else { 0 };
        let end = match length {
            Some(l) => start + l,
            None if opts.center => expected.saturating_sub(n / 2),
            None => expected,
        };
        let stop = end.min(expected);
        if stop <= start && length != Some(0) {
            return Err(bad(format!("the frames cover {expected} samples, nothing past the centre trim")));
        }
        let mut env = vec![0.0f64; expected];
        for t in 0..frames {
            for (j, &w) in window.iter().enumerate() {
                env[t * hop + j] += w * w;
            }
        }
        if let Some(i) = (start..stop).find(|&i| env[i].abs() < 1e-11) {
            return Err(bad(format!(
                "the window envelope is {} at sample {i}: the window and hop fail the NOLA condition",
                env[i]
            )));
        }
        g.atomically(|g| {
            let spec = g.permute(x, &[0, 2, 1, 3])?; // [B, frames, bins, 2]
                                                     // Two-sided spectra are read as PyTorch reads them for a real output: only bins
                                                     // 0..=n_fft/2, the rest taken as their Hermitian mirror (irfft).
            let fr = g.irfft(spec, Some(n))?;
            let w = g.constant_f32(&[n], window.iter().map(|&v| v as f32).collect())?;
            let fr = g.mul(fr, w)?;
            let y = overlap_add(g, fr, b, frames, n, hop)?; // [B, ≥ expected]
            let y = g.slice(y, 1, start, stop.max(start), 1)?;
            let inv: Vec<f32> = env[start..stop.max(start)].iter().map(|&e| (1.0 / e) as f32).collect();
            let inv = g.constant_f32(&[inv.len()], inv)?;
            let y = g.mul(y, inv)?;
            if end > stop {
                g.pad(y, &[(0, 0), (0, end - stop)], 0.0)
            } else {
                Ok(y)
            }
        })
    }
}

impl StftExt for Graph {}

/// Σ_t frame_t placed at t·hop: fr `[B, frames, n]` → `[B, (frames + R − 1)·hop]` with
/// R = ⌈n / hop⌉ (see the module doc).
fn overlap_add(
    g: &mut Graph,
    fr: NodeId,
    b: usize,
    frames: usize,
    n: usize,
    hop: usize,
) -> Result<NodeId, IrError> {
    let r = n.div_ceil(hop);
    let fr = if r * hop > n { g.pad(fr, &[(0, 0), (0, 0), (0, r * hop - n)], 0.0)? } else { fr };
    let chunks = g.reshape(fr, &[b, frames, r, hop])?;
    let mut acc = None;
    for k in 0..r {
        let c = g.slice(chunks, 2, k, k + 1, 1)?;
        let c = g.reshape(c, &[b, frames, hop])?;
        let c = g.pad(c, &[(0, 0), (k, r - 1 - k), (0, 0)], 0.0)?;
        acc = Some(match acc {
            None => c,
            Some(a) => g.add(a, c)?,
        });
    }
    let acc = acc.ok_or_else(|| IrError::Attribute {
        op: "istft",
        attr: "n_fft",
        shape: Shape::new(&[b, frames, n]),
        reason: "n_fft must be at least 1".into(),
    })?;
    g.reshape(acc, &[b, (frames + r - 1) * hop])
}
