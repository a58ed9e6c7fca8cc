//! Spectral features built on [`Graph::stft`] and [`Graph::rfft`]: Whisper's log-mel
//! spectrogram and Welch's power spectral density.

use super::audio::{hann_window, mel_filter_bank, MelSpec};
use super::stft::{frame_indices, PadMode, StftExt, StftOptions};
use super::{real_rows, SpectralExt};
use rlx_ir::{Graph, IrError, NodeId, Shape, Tensor};

/// Whisper's framing: 400-sample frames (25 ms at 16 kHz) every 160 samples (10 ms).
pub const WHISPER_N_FFT: usize = 400;
/// Whisper's hop, in samples.
pub const WHISPER_HOP: usize = 160;

/// How [`Graph::welch`] scales the averaged periodogram (scipy's `scaling`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WelchScaling {
    /// Power spectral density, V²/Hz: `1 / (fs · Σ w²)`.
    Density,
    /// Power spectrum, V²: `1 / (Σ w)²`.
    Spectrum,
}

/// The parameters of [`Graph::welch`], scipy's defaults from [`WelchOptions::new`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WelchOptions {
    /// Sample rate, Hz.
    pub fs: f64,
    /// Segment length (also the FFT size).
    pub nperseg: usize,
    /// Samples shared by consecutive segments (default nperseg / 2).
    pub noverlap: Option<usize>,
    pub scaling: WelchScaling,
}

impl WelchOptions {
    /// scipy's defaults for a segment length: half overlap, density scaling.
    pub fn new(fs: f64, nperseg: usize) -> WelchOptions {
        WelchOptions { fs, nperseg, noverlap: None, scaling: WelchScaling::Density }
    }

    /// The frequencies of the output bins, k · fs / nperseg for k in 0..=nperseg/2 (scipy's
    /// first return value).
    pub fn frequencies(&self) -> Vec<f64> {
        (0..=self.nperseg / 2).map(|k| k as f64 * self.fs / self.nperseg as f64).collect()
    }
}

/// Spectral features: Whisper's log-mel spectrogram and Welch's power spectral density.
pub trait SpectrogramExt: AsMut<Graph> {
    /// Whisper's input features for audio F32 `[B, L]` at 16 kHz: `[B, n_mels, L / 160]`, as
    /// transformers' `WhisperFeatureExtractor` computes them (its numpy path) for a waveform it
    /// has already padded or trimmed: the STFT with n_fft 400, hop 160, a periodic Hann window,
    /// centre reflect padding; the power |X|²; the last frame dropped; the Slaney mel bank
    /// ([`MelSpec::whisper`]); `log10(max(·, 1e-10))`; `max(·, max − 8)` with the maximum of
    /// each example; `(· + 4) / 4`. Whisper itself feeds 30 s (L = 480 000, 3000 frames) and
    /// 80 or 128 mels. Errors (`whisper_log_mel`) for L ≤ 200 (reflect padding needs more) or
    /// no mels.
    fn whisper_log_mel(&mut self, audio: NodeId, n_mels: usize) -> Result<NodeId, IrError> {
        let g = self.as_mut();
        let (lead, len) = real_rows(g, "whisper_log_mel", audio)?;
        let bad = |reason: String| IrError::Attribute {
            op: "whisper_log_mel",
            attr: "input",
            shape: Shape::new(&[lead.iter().product(), len]),
            reason,
        };
        if lead.len() != 1 || len <= WHISPER_N_FFT / 2 || n_mels == 0 {
            return Err(bad(format!(
                "audio must be [batch, samples] with more than {} samples, and n_mels ≥ 1 (got {n_mels})",
                WHISPER_N_FFT / 2
            )));
        }
        let bank = mel_filter_bank(&MelSpec::whisper(n_mels))?;
        let opts = StftOptions {
            n_fft: WHISPER_N_FFT,
            hop_length: WHISPER_HOP,
            window: Some(hann_window(WHISPER_N_FFT, true)),
            center: true,
            pad_mode: PadMode::Reflect,
            onesided: true,
        };
        g.atomically(|g| {
            let spec = g.stft(audio, &opts)?; // [B, 201, frames, 2]
            let power = g.complex_abs2(spec)?; // [B, 201, frames]
            let frames = g.ty(power)?.shape.dims()[2];
            let power = g.slice(power, 2, 0, frames - 1, 1)?;
            let bank = g.constant_f32(&[n_mels, opts.n_freq()], bank)?;
            let mel = g.matmul(bank, power)?; // [B, n_mels, frames − 1]
            let floor = g.scalar(1e-10)?;
            let mel = g.maximum(mel, floor)?;
            let ln = g.log(mel)?;
            let log10 = g.scalar(std::f32::consts::LOG10_E)?;
            let log = g.mul(ln, log10)?;
            let top = g.max(log, &[1, 2], true)?;
            let eight = g.scalar(8.0)?;
            let low = g.sub(top, eight)?;
            let clipped = g.maximum(log, low)?;
            let quarter = g.scalar(0.25)?;
            let scaled = g.mul(clipped, quarter)?;
            let one = g.scalar(1.0)?;
            g.add(scaled, one)
        })
    }

    /// Welch's power spectral density of signals x F32 `[B, L]`: `[B, nperseg / 2 + 1]`, as
    /// `scipy.signal.welch(x, fs, window="hann", nperseg, noverlap, detrend="constant",
    /// return_onesided=True, scaling, average="mean")`: segments of nperseg samples every
    /// nperseg − noverlap, each minus its mean, times the periodic Hann window, |rfft|² scaled
    /// (see [`WelchScaling`]) and doubled except at 0 and Nyquist, averaged over segments.
    /// [`WelchOptions::frequencies`] gives the bins' frequencies. Errors (`welch`): L < nperseg
    /// (scipy shrinks nperseg instead), noverlap ≥ nperseg, fs ≤ 0.
    fn welch(&mut self, x: NodeId, opts: &WelchOptions) -> Result<NodeId, IrError> {
        let g = self.as_mut();
        let (lead, len) = real_rows(g, "welch", x)?;
        let n = opts.nperseg;
        let overlap = opts.noverlap.unwrap_or(n / 2);
        let bad = |reason: String| IrError::Attribute {
            op: "welch",
            attr: "options",
            shape: Shape::new(&[lead.iter().product(), len]),
            reason,
        };
        if lead.len() != 1 {
            return Err(bad("the signal must be [batch, samples]; reshape a 1-D signal to [1, L]".into()));
        }
        if n == 0 || n > len || overlap >= n || opts.fs.is_nan() || opts.fs <= 0.0 {
            return Err(bad(format!(
                "need 1 ≤ nperseg ≤ L and noverlap < nperseg and fs > 0; got nperseg {n}, L {len}, \
                 noverlap {overlap}, fs {}",
                opts.fs
            )));
        }
        let step = n - overlap;
        let segments = (len - n) / step + 1;
        let window = hann_window(n, true);
        let wsum: f64 = window.iter().map(|&w| f64::from(w)).sum();
        let wsq: f64 = window.iter().map(|&w| f64::from(w) * f64::from(w)).sum();
        let scale = match opts.scaling {
            WelchScaling::Density => 1.0 / (opts.fs * wsq),
            WelchScaling::Spectrum => 1.0 / (wsum * wsum),
        };
        let bins = n / 2 + 1;
        // One-sided: every bin but DC (and Nyquist for even n) counts twice.
        let weights: Vec<f32> = (0..bins)
            .map(|k| {
                let single = k == 0 || (n.is_multiple_of(2) && k == n / 2);
                (if single { scale } else { 2.0 * scale }) as f32
            })
            .collect();
        g.atomically(|g| {
            let idx = frame_indices(len, n, step, 0, false, segments);
            let idx = g.constant(Tensor::from_i32([segments, n], idx)?)?;
            let seg = g.gather(x, idx, 1)?; // [B, segments, n]
            let mean = g.mean(seg, &[-1], true)?;
            let seg = g.sub(seg, mean)?;
            let w = g.constant_f32(&[n], window)?;
            let seg = g.mul(seg, w)?;
            let spec = g.rfft(seg)?;
            let power = g.complex_abs2(spec)?; // [B, segments, bins]
            let avg = g.mean(power, &[1], false)?;
            let weights = g.constant_f32(&[bins], weights)?;
            g.mul(avg, weights)
        })
    }
}

impl SpectrogramExt for Graph {}
