//! Rotary position tables computed on the host: the graph's `rope_cos` / `rope_sin` inputs.
//!
//! The arithmetic follows transformers' float32 path, so logits agree at long positions too:
//! inverse frequencies rounded to f32, each angle the f32 product of a frequency and an f32
//! position, then cos and sin of that angle (taken in f64 and rounded once).

use super::config::{DecoderConfig, RopeScaling};

/// cos and sin of every (position, frequency) angle, row-major `[positions, head_dim / 2]`:
/// exactly the `cos` / `sin` operands of the IR's Rope op (NeoX style, the two halves of a head
/// share column i).
#[derive(Clone, Debug, PartialEq)]
pub struct RopeTables {
    /// cos of each angle.
    pub cos: Vec<f32>,
    /// sin of each angle.
    pub sin: Vec<f32>,
    /// Columns: head_dim / 2.
    pub half: usize,
}

/// The `head_dim / 2` inverse frequencies θ^(−2i/d), rescaled by `cfg.rope_scaling`:
///
/// - `Linear { factor }`: each divided by `factor`.
/// - `Llama3`: with wavelength λ = 2π / f, `L = original_max_position_embeddings`,
///   `λ_low = L / low_freq_factor` and `λ_high = L / high_freq_factor`: λ < λ_high keeps f;
///   λ > λ_low gives f / factor; in between, f · ((1 − s) / factor + s) with
///   s = (L / λ − low_freq_factor) / (high_freq_factor − low_freq_factor), which meets both
///   neighbours at the band edges.
/// - `Factors`: frequency i divided by `factors[i]`, as ggml's rope divides by its
///   `freq_factors` (llama.cpp's `rope_freqs.weight`). The factors llama.cpp's converter writes
///   for `"llama3"` scaling are exactly the ratios plain / scaled of the `Llama3` rule.
pub fn inverse_frequencies(cfg: &DecoderConfig) -> Vec<f32> {
    let dim = cfg.head_dim;
    (0..dim / 2)
        .map(|i| {
            // transformers: 1 / base^(arange(0, dim, 2) / dim), all in f32.
            let exponent = (2 * i) as f32 / dim as f32;
            let plain = 1.0f32 / cfg.rope_theta.powf(exponent as f64) as f32;
            match &cfg.rope_scaling {
                RopeScaling::None => plain,
                RopeScaling::Linear { factor } => plain / *factor as f32,
                // decoder_config checks there is one factor per frequency.
                RopeScaling::Factors(factors) => plain / factors.get(i).copied().unwrap_or(1.0),
                RopeScaling::Llama3 {
                    factor,
                    low_freq_factor,
                    high_freq_factor,
                    original_max_position_embeddings,
                } => {
                    let (factor, low_freq_factor, high_freq_factor) =
                        (*factor, *low_freq_factor, *high_freq_factor);
                    let f = plain as f64;
                    let context = *original_max_position_embeddings as f64;
                    let wavelength = 2.0 * std::f64::consts::PI / f;
                    let (low_wavelength, high_wavelength) =
                        (context / low_freq_factor, context / high_freq_factor);
                    let scaled = if wavelength < high_wavelength {
                        f
                    } else if wavelength > low_wavelength {
                        f / factor
                    } else {
                        let s =
                            (context / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor);
                        f * ((1.0 - s) / factor + s)
                    };
                    scaled as f32
                }
            }
        })
        .collect()
}

/// cos/sin tables for the given token positions (any order: a decode step passes just its
/// own). Row r belongs to `positions[r]`.
pub fn rope_tables(cfg: &DecoderConfig, positions: &[usize]) -> RopeTables {
    let freqs = inverse_frequencies(cfg);
    let half = freqs.len();
    let mut cos = Vec::with_capacity(positions.len() * half);
    let mut sin = Vec::with_capacity(positions.len() * half);
    for &p in positions {
        for &f in &freqs {
            let angle = (f * p as f32) as f64;
            cos.push(angle.cos() as f32);
            sin.push(angle.sin() as f32);
        }
    }
    RopeTables { cos, sin, half }
}

#[cfg(test)]
mod tests {
    // Test helpers unwrap and panic: a failure is the point.
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use crate::decoder::config::Architecture;

    fn cfg(head_dim: usize, theta: f64, scaling: RopeScaling) -> DecoderConfig {
        DecoderConfig {
            architecture: Architecture::Llama,
            vocab_size: 8,
            hidden_size: head_dim,
            intermediate_size: 8,
            num_hidden_layers: 1,
            num_attention_heads: 1,
            num_key_value_heads: 1,
            head_dim,
            rms_norm_eps: 1e-6,
            rope_theta: theta,
            rope_scaling: scaling,
            max_position_embeddings: 64,
            tie_word_embeddings: false,
            qkv_bias: false,
            o_bias: false,
            qk_norm: false,
            sliding_window: None,
            torch_dtype: None,
            moe: None,
        }
    }

    fn close(got: &[f32], want: &[f64], tol: f64) {
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!((*g as f64 - w).abs() <= tol * w.abs().max(1.0), "[{i}]: got {g}, want {w}");
        }
    }

    #[test]
    fn plain_rope_at_head_dim_4() {
        // θ = 10000, d = 4: frequencies 1 and 10000^(−1/2) = 0.01.
        let c = cfg(4, 10000.0, RopeScaling::None);
        close(&inverse_frequencies(&c), &[1.0, 0.01], 1e-7);
        let t = rope_tables(&c, &[0, 1, 2]);
        assert_eq!(t.half, 2);
        close(&t.cos, &[1.0, 1.0, 1f64.cos(), 0.01f64.cos(), 2f64.cos(), 0.02f64.cos()], 1e-7);
        close(&t.sin, &[0.0, 0.0, 1f64.sin(), 0.01f64.sin(), 2f64.sin(), 0.02f64.sin()], 1e-7);
        // Rows follow the positions given, in their order.
        let t = rope_tables(&c, &[7, 3]);
        close(&t.cos, &[7f64.cos(), 0.07f64.cos(), 3f64.cos(), 0.03f64.cos()], 1e-6);
        assert!(rope_tables(&c, &[]).cos.is_empty());
    }

    #[test]
    fn linear_scaling_divides_every_frequency() {
        let c = cfg(4, 100.0, RopeScaling::Linear { factor: 4.0 });
        // 100^(−1/2) = 0.1, then / 4.
        close(&inverse_frequencies(&c), &[0.25, 0.025], 1e-7);
        let t = rope_tables(&c, &[8]);
        close(&t.sin, &[2f64.sin(), 0.2f64.sin()], 1e-6);
    }

    #[test]
    fn llama3_scaling_has_three_bands() {
        // d = 16, θ = 10000: f_i = 10000^(−i/8), wavelength 2π·10000^(i/8) = 6.28, 19.9, 62.8,
        // 199, … L = 32, low_freq_factor 1, high_freq_factor 4: λ_low = 32, λ_high = 8.
        let scaling = RopeScaling::Llama3 {
            factor: 8.0,
            low_freq_factor: 1.0,
            high_freq_factor: 4.0,
            original_max_position_embeddings: 32,
        };
        let got = inverse_frequencies(&cfg(16, 10000.0, scaling));
        let f = |i: i32| 10000f64.powf(-(i as f64) / 8.0);
        // i = 0: λ = 6.28 < 8, high band: kept.
        // i = 1: λ = 19.87 in [8, 32]: s = (32 / 19.87 − 1) / 3 = 0.2035, f · (0.7965 / 8 + 0.2035).
        let lambda1 = 2.0 * std::f64::consts::PI / f(1);
        let s = (32.0 / lambda1 - 1.0) / 3.0;
        assert!((s - 0.20348).abs() < 1e-4, "{s}");
        let medium = f(1) * ((1.0 - s) / 8.0 + s);
        assert!((medium - 0.095831).abs() < 1e-5, "{medium}");
        // i ≥ 2: λ ≥ 62.8 > 32, low band: divided by 8.
        let mut want = vec![f(0), medium];
        want.extend((2..8).map(|i| f(i) / 8.0));
        close(&got, &want, 2e-7);

        // At the band edges the interpolation meets its neighbours: λ = λ_high keeps f, and
        // λ = λ_low divides by the factor. With L = 2π·10000^(1/8) · 4, i = 1 sits on λ_high.
        let edge = RopeScaling::Llama3 {
            factor: 8.0,
            low_freq_factor: 1.0,
            high_freq_factor: 4.0,
            original_max_position_embeddings: (lambda1 * 4.0).round() as usize,
        };
        let got = inverse_frequencies(&cfg(16, 10000.0, edge));
        assert!((got[1] as f64 / f(1) - 1.0).abs() < 0.01, "{}", got[1]);
    }

    /// llama.cpp's converter's `rope_freqs.weight` for llama3 scaling, computed as it does (in
    /// f64, stored as f32): 1 in the high band, `factor` in the low one, the inverse of the
    /// interpolation weight between.
    fn converter_factors(
        head_dim: usize,
        theta: f64,
        factor: f64,
        low: f64,
        high: f64,
        original: f64,
    ) -> Vec<f32> {
        (0..head_dim / 2)
            .map(|i| {
                let wavelength = 2.0 * std::f64::consts::PI * theta.powf((2 * i) as f64 / head_dim as f64);
                if wavelength < original / high {
                    1.0
                } else if wavelength > original / low {
                    factor as f32
                } else {
                    let smooth = (original / wavelength - low) / (high - low);
                    (1.0 / ((1.0 - smooth) / factor + smooth)) as f32
                }
            })
            .collect()
    }

    #[test]
    fn gguf_rope_freqs_match_llama3_scaling_on_llama_3_2() {
        // Llama-3.2-1B: head_dim 64, θ = 500000, factor 32, low 1, high 4, original 8192.
        let llama3 = RopeScaling::Llama3 {
            factor: 32.0,
            low_freq_factor: 1.0,
            high_freq_factor: 4.0,
            original_max_position_embeddings: 8192,
        };
        let factors = converter_factors(64, 500000.0, 32.0, 1.0, 4.0, 8192.0);
        // All three bands occur.
        assert_eq!(factors[0], 1.0);
        assert_eq!(factors[31], 32.0);
        assert!(factors.iter().any(|&f| f > 1.0 && f < 32.0), "{factors:?}");
        let want = inverse_frequencies(&cfg(64, 500000.0, llama3));
        let got = inverse_frequencies(&cfg(64, 500000.0, RopeScaling::Factors(factors.into())));
        assert_eq!(got.len(), 32);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            // Relative: the low band's frequencies are far below 1.
            let rel = (*g as f64 / *w as f64 - 1.0).abs();
            assert!(rel <= 1e-6, "[{i}]: factors give {g}, llama3 gives {w} (relative {rel:e})");
        }
    }

    #[test]
    fn angles_are_f32_products_like_transformers() {
        // A large position: the angle is rounded to f32 before cos/sin, as torch computes it.
        let c = cfg(4, 10000.0, RopeScaling::None);
        let t = rope_tables(&c, &[100_003]);
        let angle = (0.01f32 * 100_003f32) as f64;
        close(&t.cos[1..], &[angle.cos()], 1e-7);
    }
}
