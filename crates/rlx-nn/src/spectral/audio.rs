//! Host-side audio constants for the spectral builders: windows and mel filter banks. They are
//! computed in f64 when a graph is built and enter it as constants.

use rlx_ir::{IrError, Shape};

/// The Hann window of `n` points: `0.5 − 0.5·cos(2πi / D)` with D = n when `periodic` (the
/// window of spectral analysis: `torch.hann_window(n)`, `scipy.signal.get_window("hann", n)`,
/// Whisper's) and D = n − 1 otherwise (`torch.hann_window(n, periodic=False)`,
/// `np.hanning(n)`). n = 1 gives \[1\].
pub fn hann_window(n: usize, periodic: bool) -> Vec<f32> {
    let d = if periodic { n } else { n.saturating_sub(1) };
    if n == 1 || d == 0 {
        return vec![1.0; n];
    }
    (0..n).map(|i| (0.5 - 0.5 * (2.0 * std::f64::consts::PI * i as f64 / d as f64).cos()) as f32).collect()
}

/// The mel scale of a filter bank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MelScale {
    /// `2595·log10(1 + f/700)` (HTK; torchaudio's default).
    Htk,
    /// Slaney's: linear below 1 kHz (3 mels per 200 Hz), logarithmic above (27 mels per
    /// factor 6.4): librosa's default and Whisper's.
    Slaney,
}

impl MelScale {
    /// Hertz → mels.
    pub fn to_mel(self, hz: f64) -> f64 {
        match self {
            MelScale::Htk => 2595.0 * (1.0 + hz / 700.0).log10(),
            MelScale::Slaney => {
                let (min_log_hz, min_log_mel, logstep) = slaney_consts();
                if hz >= min_log_hz {
                    min_log_mel + (hz / min_log_hz).ln() * logstep
                } else {
                    3.0 * hz / 200.0
                }
            }
        }
    }

    /// Mels → hertz.
    pub fn to_hz(self, mel: f64) -> f64 {
        match self {
            MelScale::Htk => 700.0 * (10f64.powf(mel / 2595.0) - 1.0),
            MelScale::Slaney => {
                let (min_log_hz, min_log_mel, logstep) = slaney_consts();
                if mel >= min_log_mel {
                    min_log_hz * ((mel - min_log_mel) / logstep).exp()
                } else {
                    200.0 * mel / 3.0
                }
            }
        }
    }
}

/// (1000 Hz, 15 mels, 27 / ln 6.4 mels per natural-log step).
fn slaney_consts() -> (f64, f64, f64) {
    (1000.0, 15.0, 27.0 / 6.4f64.ln())
}

/// What a mel filter bank is for: its bins, range and scale.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MelSpec {
    /// Frequency bins of the spectrum it is applied to (n_fft / 2 + 1).
    pub n_freq: usize,
    /// Mel filters.
    pub n_mels: usize,
    /// Lowest and highest filter edge, in Hz.
    pub f_min: f64,
    pub f_max: f64,
    /// Sample rate of the signal, in Hz.
    pub sample_rate: usize,
    pub scale: MelScale,
    /// Slaney's area normalisation: each filter × 2 / (its upper edge − its lower edge), so
    /// every filter has about the same energy.
    pub slaney_norm: bool,
}

impl MelSpec {
    /// Whisper's bank: 201 bins (n_fft 400), `n_mels` filters from 0 to 8 kHz at 16 kHz,
    /// Slaney scale and normalisation.
    pub fn whisper(n_mels: usize) -> MelSpec {
        MelSpec {
            n_freq: 201,
            n_mels,
            f_min: 0.0,
            f_max: 8000.0,
            sample_rate: 16000,
            scale: MelScale::Slaney,
            slaney_norm: true,
        }
    }
}

/// The triangular mel filter bank as a row-major `[n_mels, n_freq]` matrix (the transpose of
/// transformers' `mel_filter_bank(...)`, which returns `[n_freq, n_mels]`), computed in f64:
/// n_mels + 2 edges evenly spaced in mels between f_min and f_max, bins at
/// `linspace(0, sample_rate / 2 (integer division), n_freq)` Hz, each filter rising from its
/// lower edge to its centre and falling to its upper edge, then Slaney's normalisation if asked.
/// Errors (`mel_filter_bank`) for no bins or filters, or an empty or negative range.
pub fn mel_filter_bank(spec: &MelSpec) -> Result<Vec<f32>, IrError> {
    let MelSpec { n_freq, n_mels, f_min, f_max, sample_rate, scale, slaney_norm } = *spec;
    let bad = |reason: String| IrError::Attribute {
        op: "mel_filter_bank",
        attr: "spec",
        shape: Shape::new(&[n_mels, n_freq]),
        reason,
    };
    if n_freq == 0 || n_mels == 0 {
        return Err(bad("n_freq and n_mels must both be at least 1".into()));
    }
    if !(f_min >= 0.0 && f_max > f_min) {
        return Err(bad(format!("the range must satisfy 0 ≤ f_min < f_max, got {f_min} to {f_max} Hz")));
    }
    let (m_lo, m_hi) = (scale.to_mel(f_min), scale.to_mel(f_max));
    let edges: Vec<f64> =
        (0..n_mels + 2).map(|i| scale.to_hz(m_lo + (m_hi - m_lo) * i as f64 / (n_mels + 1) as f64)).collect();
    let nyquist = (sample_rate / 2) as f64;
    let bins: Vec<f64> = (0..n_freq)
        .map(|i| if n_freq == 1 { 0.0 } else { nyquist * i as f64 / (n_freq - 1) as f64 })
        .collect();
    let mut out = Vec::with_capacity(n_mels * n_freq);
    for m in 0..n_mels {
        let (lo, mid, hi) = (edges[m], edges[m + 1], edges[m + 2]);
        let norm = if slaney_norm { 2.0 / (hi - lo) } else { 1.0 };
        for &f in &bins {
            let down = (f - lo) / (mid - lo);
            let up = (hi - f) / (hi - mid);
            out.push((down.min(up).max(0.0) * norm) as f32);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows() {
        let w = hann_window(4, true);
        assert_eq!(w, vec![0.0, 0.5, 1.0, 0.5]);
        let s = hann_window(3, false);
        assert_eq!(s, vec![0.0, 1.0, 0.0]);
        assert_eq!(hann_window(1, true), vec![1.0]);
    }

    #[test]
    fn mel_scales_round_trip_and_meet_at_1khz() {
        for scale in [MelScale::Htk, MelScale::Slaney] {
            for hz in [0.0, 440.0, 1000.0, 7999.0] {
                assert!((scale.to_hz(scale.to_mel(hz)) - hz).abs() < 1e-9);
            }
        }
        assert!((MelScale::Slaney.to_mel(1000.0) - 15.0).abs() < 1e-12);
        assert!((MelScale::Htk.to_mel(700.0) - 2595.0 * 2f64.log10()).abs() < 1e-9);
    }

    #[test]
    fn filter_bank_shape_and_triangles() {
        let bank = mel_filter_bank(&MelSpec::whisper(80)).unwrap();
        assert_eq!(bank.len(), 80 * 201);
        // Every filter is non-negative and covers at least one bin.
        for row in bank.chunks(201) {
            assert!(row.iter().all(|&v| v >= 0.0));
            assert!(row.iter().any(|&v| v > 0.0));
        }
        let spec = MelSpec { slaney_norm: false, scale: MelScale::Htk, ..MelSpec::whisper(10) };
        let peak = mel_filter_bank(&spec).unwrap().into_iter().fold(0f32, f32::max);
        assert!(peak <= 1.0 && peak > 0.5);
        assert!(mel_filter_bank(&MelSpec { f_max: 0.0, ..MelSpec::whisper(4) }).is_err());
    }
}
