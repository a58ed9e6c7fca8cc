"""torch references for the fft family (crates/rlx-parity/src/cases/fft.rs): fft/ifft of any
length, rfft/irfft, stft/istft, Whisper's log-mel spectrogram and Welch's PSD, plus the family's
benchmark workloads. The attributes of each case are restated here from its table in fft.rs.

Complex values: rlx stores them as a trailing axis of 2 (real, imag), which is
torch.view_as_real; inputs are turned complex with torch.view_as_complex.

- fft_*, rfft_*, irfft_*, stft_*, istft_*: torch.fft / torch.stft / torch.istft in float64
  (the data is float32; float64 makes the reference exact to far below the 1e-5 tolerance).
- logmel_*: transformers' WhisperFeatureExtractor, its numpy path (_np_extract_fbank_features,
  float64 numpy throughout). rlx computes in float32; the output is log10 of powers, so a relative
  error ε in a power moves a value by ε / ln 10 / 4 — 1e-5 relative on the features is a large
  margin for float32 spectra (rlx's own CPU-vs-GPU error is ~1e-7).
- welch_*: scipy.signal.welch when scipy is importable, else the same recipe composed from torch
  ops (segments, constant detrend, periodic Hann window, |rfft|², scaling, one-sided doubling,
  mean); which one ran is printed once.
- bench_*: the GPU torch path of each workload (for timing): WhisperFeatureExtractor's
  _torch_extract_fbank_features recipe written with torch ops on the device, and torch.fft.fft.
"""
import numpy as np
import torch

REFS = {}
TOL = {}


def cplx(x):
    return torch.view_as_complex(x.double().contiguous())


def real(z):
    return torch.view_as_real(z).float()


# fft_<tag>: inverse?
FFT = {
    "n1_b3": False, "n2_b5": False, "n8_b2x3": False, "n64_b7": False, "n64_b7_inverse": True,
    "n2048_native_max_b2": False, "n2048_native_max_inverse": True, "n8192_four_step": False,
    "n8192_four_step_inverse_b2": True, "n3_b4_bluestein": False, "n7_b3_bluestein": False,
    "n100_b2_bluestein": False, "n100_bluestein_inverse": True, "n400_b2_bluestein": False,
    "n1000_bluestein": False, "n1000_bluestein_inverse": True, "n16_rows700": False,
    "n64_nan_row": False, "n8_empty_batch": False,
}
for tag, inv in FFT.items():
    fn = torch.fft.ifft if inv else torch.fft.fft
    REFS[f"fft_{tag}"] = lambda t, fn=fn: [real(fn(cplx(t["x"]), dim=-1))]

# No rows: view_as_complex refuses the empty tensor's strides; the answer is the empty input.
REFS["fft_n8_empty_batch"] = lambda t: [torch.zeros_like(t["x"])]
# A NaN row: which outputs turn NaN depends on which products an FFT skips (cuFFT does not
# multiply by its exact twiddles 1 and 0 as pocketfft and rlx do), so the reference is torch's
# CPU FFT (pocketfft), whose NaN positions are the ones rlx's butterflies give.
REFS["fft_n64_nan_row"] = lambda t: [real(torch.fft.fft(cplx(t["x"].cpu()), dim=-1))]

for tag in ["n1", "n7", "n64_b2x2", "n400"]:
    REFS[f"rfft_{tag}"] = lambda t: [real(torch.fft.rfft(t["x"].double(), dim=-1))]

# irfft_<tag>: n
for tag, n in {"m5_default": None, "m5_n7": 7, "m5_n12": 12, "m9_n6": 6}.items():
    REFS[f"irfft_{tag}"] = lambda t, n=n: [torch.fft.irfft(cplx(t["x"]), n=n, dim=-1).float()]


def hann(n, device):
    return torch.hann_window(n, periodic=True, dtype=torch.float64, device=device)


# stft_<tag>: (n_fft, hop, window length or None, center, pad_mode, onesided)
STFT = {
    "hann64_hop16_reflect_b2": (64, 16, 64, True, "reflect", True),
    "n100_win60_hop25_constant": (100, 25, 60, True, "constant", True),
    "n32_hop8_uncentred_twosided": (32, 8, None, False, "reflect", False),
}
for tag, (n_fft, hop, win, center, mode, onesided) in STFT.items():
    def stft_ref(t, n_fft=n_fft, hop=hop, win=win, center=center, mode=mode, onesided=onesided):
        x = t["x"].double()
        w = hann(win, x.device) if win else None
        z = torch.stft(x, n_fft, hop_length=hop, win_length=win, window=w, center=center,
                       pad_mode=mode, normalized=False, onesided=onesided, return_complex=True)
        return [real(z)]
    REFS[f"stft_{tag}"] = stft_ref

# istft_<tag>: (n_fft, hop, window length or None, center, onesided, length)
ISTFT = {
    "hann64_hop16_f20": (64, 16, 64, True, True, None),
    "hann64_hop16_f20_length500": (64, 16, 64, True, True, 500),
    "hann64_hop16_f9_length100_trim": (64, 16, 64, True, True, 100),
    "n100_win60_hop20_f12": (100, 20, 60, True, True, None),
    "n16_hop4_uncentred_twosided_f10": (16, 4, None, False, False, None),
}
for tag, (n_fft, hop, win, center, onesided, length) in ISTFT.items():
    def istft_ref(t, n_fft=n_fft, hop=hop, win=win, center=center, onesided=onesided, length=length):
        z = cplx(t["x"])
        w = hann(win, z.device) if win else None
        y = torch.istft(z, n_fft, hop_length=hop, win_length=win, window=w, center=center,
                        normalized=False, onesided=onesided, length=length, return_complex=False)
        return [y.float()]
    REFS[f"istft_{tag}"] = istft_ref


def whisper_np(audio, n_mels):
    from transformers import WhisperFeatureExtractor
    fe = WhisperFeatureExtractor(feature_size=n_mels)
    wave = audio.detach().cpu().numpy().astype(np.float32)
    return torch.from_numpy(np.asarray(fe._np_extract_fbank_features(wave, "cpu"))).float()


REFS["logmel_whisper_b2_4000"] = lambda t: [whisper_np(t["audio"], 80)]
REFS["logmel_whisper_128mels_1601"] = lambda t: [whisper_np(t["audio"], 128)]

_WELCH_SOURCE = []


def welch(x, fs, nperseg, noverlap, scaling):
    try:
        from scipy import signal
        if not _WELCH_SOURCE:
            _WELCH_SOURCE.append("scipy")
            print("welch references: scipy.signal.welch")
        _, p = signal.welch(x.detach().cpu().double().numpy(), fs=fs, window="hann", nperseg=nperseg,
                            noverlap=noverlap, detrend="constant", return_onesided=True,
                            scaling=scaling, average="mean", axis=-1)
        return torch.from_numpy(p).float()
    except ImportError:
        if not _WELCH_SOURCE:
            _WELCH_SOURCE.append("torch")
            print("welch references: scipy missing, torch composition")
        x = x.double()
        step = nperseg - noverlap
        seg = x.unfold(-1, nperseg, step)
        seg = seg - seg.mean(-1, keepdim=True)
        w = hann(nperseg, x.device)
        p = torch.fft.rfft(seg * w, dim=-1).abs() ** 2
        p = p * (1.0 / (fs * (w * w).sum()) if scaling == "density" else 1.0 / w.sum() ** 2)
        if nperseg % 2:
            p[..., 1:] *= 2
        else:
            p[..., 1:-1] *= 2
        return p.mean(-2).float()


REFS["welch_density_b3_1000"] = lambda t: [welch(t["x"], 100.0, 128, 64, "density")]
REFS["welch_spectrum_odd_nperseg75"] = lambda t: [welch(t["x"], 8.0, 75, 30, "spectrum")]


def whisper_torch(audio, n_mels):
    # WhisperFeatureExtractor._torch_extract_fbank_features, on the device, for timing.
    from transformers.audio_utils import mel_filter_bank
    key = (n_mels, audio.device)
    if key not in _MEL:
        bank = mel_filter_bank(num_frequency_bins=201, num_mel_filters=n_mels, min_frequency=0.0,
                               max_frequency=8000.0, sampling_rate=16000, norm="slaney",
                               mel_scale="slaney")
        _MEL[key] = (torch.from_numpy(bank).to(audio.device, torch.float32).T.contiguous(),
                     torch.hann_window(400, device=audio.device))
    mel, window = _MEL[key]
    z = torch.stft(audio, 400, 160, window=window, return_complex=True)
    power = z[..., :-1].abs() ** 2
    log_spec = torch.clamp(mel @ power, min=1e-10).log10()
    top = log_spec.amax(dim=(1, 2), keepdim=True)
    return (torch.maximum(log_spec, top - 8.0) + 4.0) / 4.0


_MEL = {}
REFS["bench_logmel_whisper_30s_b8"] = lambda t: [whisper_torch(t["audio"], 80)]
REFS["bench_fft_n4096_rows1024"] = lambda t: [
    torch.view_as_real(torch.fft.fft(torch.view_as_complex(t["x"].contiguous()), dim=-1))]
# The benchmark references run in float32 on the device (what is timed): cuFFT's float32
# error against rlx's float32 is a few 1e-7 relative; the log-mel one goes through float32
# powers both ways.
TOL["bench_logmel_whisper_30s_b8"] = 1e-4
TOL["bench_fft_n4096_rows1024"] = 1e-5
for name in REFS:
    if not name.startswith("bench_"):
        TOL.setdefault(name, 1e-5)
