//! Fourier transforms and audio features: the native `Fft` (powers of two 1 to
//! `FFT_NATIVE_MAX`, forward and inverse, batches, NaN rows), the four-step build (8192) and
//! Bluestein's (3, 7, 100, 400, 1000), rfft/irfft (odd and even lengths, irfft trimming and
//! zero-padding the spectrum), stft/istft (reflect and constant padding, short windows,
//! uncentred two-sided, `length`), Whisper's log-mel spectrogram and Welch's PSD.
//!
//! Tolerances: the default 1e-5 relative holds for every case here. The GPU transform is a
//! radix-2 FFT in f32 (error grows like log₂N · 2⁻²⁴), the CPU one in f64, and Bluestein runs
//! two transforms of M ≥ 2N − 1 points plus three products with unit-modulus constants.
//!
//! [`bench_cases`] holds heavier, realistic workloads kept out of the table (too slow for
//! lavapipe): Whisper's 30 s log-mel at batch 8, and 1024 rows of a 4096-point transform.

use super::with_nans;
use crate::Case;
use rlx_ir::{Tensor, FFT_NATIVE_MAX};
use rlx_nn::prelude::*;
use rlx_nn::spectral::audio::hann_window;

pub(super) fn cases(out: &mut Vec<Case>) {
    let nmax = FFT_NATIVE_MAX;
    // (tag, leading dims, N, inverse)
    let ffts: Vec<(String, Vec<usize>, usize, bool)> = vec![
        ("n1_b3".into(), vec![3], 1, false),
        ("n2_b5".into(), vec![5], 2, false),
        ("n8_b2x3".into(), vec![2, 3], 8, false),
        ("n64_b7".into(), vec![7], 64, false),
        ("n64_b7_inverse".into(), vec![7], 64, true),
        (format!("n{nmax}_native_max_b2"), vec![2], nmax, false),
        (format!("n{nmax}_native_max_inverse"), vec![1], nmax, true),
        ("n8192_four_step".into(), vec![1], 8192, false),
        ("n8192_four_step_inverse_b2".into(), vec![2], 8192, true),
        ("n3_b4_bluestein".into(), vec![4], 3, false),
        ("n7_b3_bluestein".into(), vec![3], 7, false),
        ("n100_b2_bluestein".into(), vec![2], 100, false),
        ("n100_bluestein_inverse".into(), vec![1], 100, true),
        ("n400_b2_bluestein".into(), vec![2], 400, false),
        ("n1000_bluestein".into(), vec![1], 1000, false),
        ("n1000_bluestein_inverse".into(), vec![1], 1000, true),
        ("n16_rows700".into(), vec![700], 16, false),
        ("n8_empty_batch".into(), vec![0, 3], 8, false),
    ];
    for (tag, lead, n, inverse) in ffts {
        out.push(Case::new(format!("fft_{tag}"), move |c| {
            let x = c.input_f32("x", &complex_dims(&lead, n), -1.0, 1.0)?;
            Ok(vec![c.fft(x, inverse)?])
        }));
    }
    out.push(Case::new("fft_n64_nan_row", |c| {
        let v = with_nans(c.uniform(3 * 64 * 2, -1.0, 1.0), 1000);
        let x = c.input_tensor("x", Tensor::from_f32([3, 64, 2], v)?)?;
        Ok(vec![c.fft(x, false)?])
    }));
    for (tag, lead, n) in
        [("n1", vec![2], 1), ("n7", vec![3], 7), ("n64_b2x2", vec![2, 2], 64), ("n400", vec![2], 400)]
    {
        out.push(Case::new(format!("rfft_{tag}"), move |c| {
            let mut dims = lead.clone();
            dims.push(n);
            let x = c.input_f32("x", &dims, -1.0, 1.0)?;
            Ok(vec![c.rfft(x)?])
        }));
    }
    // (tag, bins M, n): default 2(M − 1); odd n; n past the bins (zero-padded); n trimming them.
    for (tag, m, n) in
        [("m5_default", 5, None), ("m5_n7", 5, Some(7)), ("m5_n12", 5, Some(12)), ("m9_n6", 9, Some(6))]
    {
        out.push(Case::new(format!("irfft_{tag}"), move |c| {
            let x = c.input_f32("x", &[3, m, 2], -1.0, 1.0)?;
            Ok(vec![c.irfft(x, n)?])
        }));
    }
    for (tag, b, len, opts) in stft_cases() {
        out.push(Case::new(format!("stft_{tag}"), move |c| {
            let x = c.input_f32("x", &[b, len], -1.0, 1.0)?;
            Ok(vec![c.stft(x, &opts)?])
        }));
    }
    for (tag, frames, length, opts) in istft_cases() {
        out.push(Case::new(format!("istft_{tag}"), move |c| {
            let x = c.input_f32("x", &[2, opts.n_freq(), frames, 2], -1.0, 1.0)?;
            Ok(vec![c.istft(x, &opts, length)?])
        }));
    }
    out.push(Case::new("logmel_whisper_b2_4000", |c| {
        let audio = c.input_f32("audio", &[2, 4000], -0.5, 0.5)?;
        Ok(vec![c.whisper_log_mel(audio, 80)?])
    }));
    out.push(Case::new("logmel_whisper_128mels_1601", |c| {
        let audio = c.input_f32("audio", &[1, 1601], -0.5, 0.5)?;
        Ok(vec![c.whisper_log_mel(audio, 128)?])
    }));
    out.push(Case::new("welch_density_b3_1000", |c| {
        let x = c.input_f32("x", &[3, 1000], -1.0, 1.0)?;
        Ok(vec![c.welch(x, &WelchOptions::new(100.0, 128))?])
    }));
    out.push(Case::new("welch_spectrum_odd_nperseg75", |c| {
        let x = c.input_f32("x", &[2, 600], -1.0, 1.0)?;
        let opts = WelchOptions { fs: 8.0, nperseg: 75, noverlap: Some(30), scaling: WelchScaling::Spectrum };
        Ok(vec![c.welch(x, &opts)?])
    }));
}

/// `[lead..., n, 2]`.
fn complex_dims(lead: &[usize], n: usize) -> Vec<usize> {
    let mut d = lead.to_vec();
    d.extend([n, 2]);
    d
}

/// The stft cases: (tag, batch, samples, options). Their torch references mirror these.
pub(super) fn stft_cases() -> Vec<(&'static str, usize, usize, StftOptions)> {
    vec![
        (
            "hann64_hop16_reflect_b2",
            2,
            1000,
            StftOptions { hop_length: 16, window: Some(hann_window(64, true)), ..StftOptions::new(64) },
        ),
        (
            "n100_win60_hop25_constant",
            1,
            777,
            StftOptions {
                hop_length: 25,
                window: Some(hann_window(60, true)),
                pad_mode: PadMode::Constant,
                ..StftOptions::new(100)
            },
        ),
        (
            "n32_hop8_uncentred_twosided",
            2,
            300,
            StftOptions { center: false, onesided: false, ..StftOptions::new(32) },
        ),
    ]
}

/// The istft cases: (tag, frames, length, options), on spectra [2, n_freq, frames, 2].
pub(super) fn istft_cases() -> Vec<(&'static str, usize, Option<usize>, StftOptions)> {
    let hann64 = StftOptions { hop_length: 16, window: Some(hann_window(64, true)), ..StftOptions::new(64) };
    vec![
        ("hann64_hop16_f20", 20, None, hann64.clone()),
        ("hann64_hop16_f20_length500", 20, Some(500), hann64.clone()),
        ("hann64_hop16_f9_length100_trim", 9, Some(100), hann64),
        (
            "n100_win60_hop20_f12",
            12,
            None,
            StftOptions { hop_length: 20, window: Some(hann_window(60, true)), ..StftOptions::new(100) },
        ),
        (
            "n16_hop4_uncentred_twosided_f10",
            10,
            None,
            StftOptions { center: false, onesided: false, ..StftOptions::new(16) },
        ),
    ]
}

/// The family's benchmark workloads (see [`super::bench_cases`]): Whisper's log-mel of 30 s at
/// 16 kHz for batch 8 (`[8, 480000]` → `[8, 80, 3000]`), and the forward transform of 1024 rows
/// of 4096 points (`[1024, 4096, 2]`, four-step).
pub(super) fn bench_cases(out: &mut Vec<Case>) {
    out.push(Case::new("bench_logmel_whisper_30s_b8", |c| {
        let audio = c.input_f32("audio", &[8, 480_000], -0.5, 0.5)?;
        Ok(vec![c.whisper_log_mel(audio, 80)?])
    }));
    out.push(Case::new("bench_fft_n4096_rows1024", |c| {
        let x = c.input_f32("x", &[1024, 4096, 2], -1.0, 1.0)?;
        Ok(vec![c.fft(x, false)?])
    }));
}
