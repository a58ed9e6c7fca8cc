use crate::{assert_msg, f32_in, on_copy, tt};
use rlx_ir::{DType, Graph};
use rlx_nn::hann_window;
use rlx_nn::prelude::*;

#[test]
fn real_transforms_have_torch_shapes() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[2, 7]);
    assert_eq!(on_copy(&g, |g| g.rfft(x)), tt(&[2, 4, 2], DType::F32));
    let s = f32_in(&mut g, "s", &[3, 5, 2]);
    assert_eq!(on_copy(&g, |g| g.irfft(s, None)), tt(&[3, 8], DType::F32));
    assert_eq!(on_copy(&g, |g| g.irfft(s, Some(13))), tt(&[3, 13], DType::F32));
    assert_eq!(on_copy(&g, |g| g.complex_abs2(s)), tt(&[3, 5], DType::F32));
    let one = f32_in(&mut g, "one", &[3, 1, 2]);
    assert_msg(&g.irfft(one, None).unwrap_err(), &["irfft", "pass n ≥ 1"]);
    // A failed composite leaves the graph as it was.
    let before = g.len();
    assert!(g.irfft(x, None).is_err());
    assert_eq!(g.len(), before);
}

#[test]
fn stft_and_istft_shapes_and_errors() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[2, 1000]);
    let opts = StftOptions { hop_length: 16, window: Some(hann_window(60, true)), ..StftOptions::new(64) };
    // frames = 1 + (1000 + 64 − 64) / 16 = 63
    assert_eq!(on_copy(&g, |g| g.stft(x, &opts)), tt(&[2, 33, 63, 2], DType::F32));
    let two = StftOptions { center: false, onesided: false, ..opts.clone() };
    assert_eq!(on_copy(&g, |g| g.stft(x, &two)), tt(&[2, 64, 59, 2], DType::F32));
    let spec = f32_in(&mut g, "spec", &[2, 33, 63, 2]);
    // hop · (frames − 1) samples, as torch gives without `length`.
    assert_eq!(on_copy(&g, |g| g.istft(spec, &opts, None)), tt(&[2, 992], DType::F32));
    // A length past the frames pads zeros (with a window that covers every frame's end; the
    // 60-point one leaves zeros there, which torch and rlx refuse: NOLA).
    let full = StftOptions { window: Some(hann_window(64, true)), ..opts.clone() };
    assert_eq!(on_copy(&g, |g| g.istft(spec, &full, Some(1200))), tt(&[2, 1200], DType::F32));
    assert_msg(&g.istft(spec, &opts, Some(1200)).unwrap_err(), &["NOLA", "sample 1054"]);
    // Errors: a window longer than n_fft, reflect padding past the signal, wrong bin count,
    // hop past the window, a window whose envelope vanishes (NOLA).
    let long = StftOptions { window: Some(vec![1.0; 65]), ..opts.clone() };
    assert_msg(&g.stft(x, &long).unwrap_err(), &["stft", "65 values", "n_fft = 64"]);
    let short = f32_in(&mut g, "short", &[1, 20]);
    assert_msg(&g.stft(short, &opts).unwrap_err(), &["reflect padding", "PadMode::Constant"]);
    let constant = StftOptions { pad_mode: PadMode::Constant, ..opts.clone() };
    assert_eq!(on_copy(&g, |g| g.stft(short, &constant)), tt(&[1, 33, 2, 2], DType::F32));
    let bad_bins = f32_in(&mut g, "bins", &[2, 30, 63, 2]);
    assert_msg(&g.istft(bad_bins, &opts, None).unwrap_err(), &["istft", "30 frequency bins", "needs 33"]);
    let far = StftOptions { hop_length: 61, ..opts.clone() };
    assert_msg(&g.istft(spec, &far, None).unwrap_err(), &["hop_length 61 exceeds win_length 60"]);
    let uncentred = StftOptions { center: false, ..opts.clone() };
    assert_msg(&g.istft(spec, &uncentred, None).unwrap_err(), &["NOLA"]);
}

#[test]
fn audio_features_shapes_and_errors() {
    let mut g = Graph::new("g");
    let audio = f32_in(&mut g, "audio", &[2, 4000]);
    // 1 + 4000 / 160 = 26 frames, the last dropped.
    assert_eq!(on_copy(&g, |g| g.whisper_log_mel(audio, 80)), tt(&[2, 80, 25], DType::F32));
    let tiny = f32_in(&mut g, "tiny", &[1, 200]);
    assert_msg(&g.whisper_log_mel(tiny, 80).unwrap_err(), &["whisper_log_mel", "more than 200 samples"]);
    let x = f32_in(&mut g, "x", &[3, 1000]);
    assert_eq!(on_copy(&g, |g| g.welch(x, &WelchOptions::new(100.0, 128))), tt(&[3, 65], DType::F32));
    assert_eq!(WelchOptions::new(100.0, 128).frequencies()[64], 50.0);
    let e = g.welch(x, &WelchOptions { noverlap: Some(128), ..WelchOptions::new(1.0, 128) }).unwrap_err();
    assert_msg(&e, &["welch", "noverlap 128"]);
    assert_msg(&g.welch(x, &WelchOptions::new(1.0, 2000)).unwrap_err(), &["nperseg 2000, L 1000"]);
}
