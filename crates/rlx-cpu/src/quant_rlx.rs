//! Reference decoders of the block formats rlx defines beside ggml's (layouts on
//! [`rlx_ir::QuantType`]): Q4_1 and Q8_ASYM (asymmetric int4 / int8), FP8_E4M3 and FP8_E5M2
//! (fp8 codes with an f32 block scale) and NVFP4 (e2m1 codes with e4m3 micro-block scales).
//!
//! Each value is one f32 product (and one sum for the asymmetric formats), rounded once in the
//! order written, never fused into an FMA: `q·d + m`, `s · fp8(q)`, `e4m3(scale) · e2m1(q)`.
//! The small floats decode exactly (rlx-ir's `minifloat`), so NaN codes give NaN and e5m2's
//! infinities give ±inf.

use crate::quant::f16_at;
use rlx_ir::minifloat::{e2m1_to_f32, e4m3_to_f32, e5m2_to_f32};

/// Q4_1: `d`, `m` (f16), 16 bytes; byte `j` holds element `j` (low nibble) and `j + 16`.
pub(crate) fn q4_1(b: &[u8; 20], y: &mut [f32; 32]) {
    let (d, m) = (f16_at(b, 0), f16_at(b, 2));
    let (lo, hi) = y.split_at_mut(16);
    for ((&q, lo), hi) in b[4..].iter().zip(lo).zip(hi) {
        *lo = f32::from(q & 0x0f) * d + m;
        *hi = f32::from(q >> 4) * d + m;
    }
}

/// Q8_ASYM: `d`, `m` (f16), 32 unsigned bytes.
pub(crate) fn q8_asym(b: &[u8; 36], y: &mut [f32; 32]) {
    let (d, m) = (f16_at(b, 0), f16_at(b, 2));
    for (y, &q) in y.iter_mut().zip(&b[4..]) {
        *y = f32::from(q) * d + m;
    }
}

fn f32_at(b: &[u8; 36], i: usize) -> f32 {
    f32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// FP8_E4M3: f32 `s`, 32 e4m3 codes.
pub(crate) fn fp8_e4m3(b: &[u8; 36], y: &mut [f32; 32]) {
    let s = f32_at(b, 0);
    for (y, &q) in y.iter_mut().zip(&b[4..]) {
        *y = s * e4m3_to_f32(q);
    }
}

/// FP8_E5M2: f32 `s`, 32 e5m2 codes.
pub(crate) fn fp8_e5m2(b: &[u8; 36], y: &mut [f32; 32]) {
    let s = f32_at(b, 0);
    for (y, &q) in y.iter_mut().zip(&b[4..]) {
        *y = s * e5m2_to_f32(q);
    }
}

/// NVFP4: 4 e4m3 scales (one per 16 elements), 32 bytes of e2m1 pairs (low nibble first).
pub(crate) fn nvfp4(b: &[u8; 36], y: &mut [f32; 64]) {
    for (i, pair) in y.chunks_exact_mut(2).enumerate() {
        let s = e4m3_to_f32(b[i / 8]);
        let q = b[4 + i];
        pair[0] = s * e2m1_to_f32(q & 0xf);
        pair[1] = s * e2m1_to_f32(q >> 4);
    }
}

#[cfg(test)]
mod tests {
    use crate::quant::dequantize;
    use rlx_ir::{quantize, quantize_nvfp4, QuantType};

    /// Deterministic values in (−amp, amp).
    fn values(n: usize, amp: f32) -> Vec<f32> {
        (0..n).map(|i| amp * ((i as f32 * 0.618_034).fract() * 2.0 - 1.0)).collect()
    }

    fn decode(ty: QuantType, bytes: &[u8]) -> Vec<f32> {
        let mut y = vec![0.0; ty.elem_count(bytes.len()).unwrap()];
        dequantize(ty, bytes, &mut y).unwrap();
        y
    }

    #[test]
    fn hand_made_blocks() {
        // Q4_1 with d = 0.5, m = -1: byte 0 = 0x3f gives element 0 = 15·0.5 − 1, element 16 = 3·0.5 − 1.
        let mut b = vec![0u8; 20];
        b[..2].copy_from_slice(&half::f16::from_f32(0.5).to_le_bytes());
        b[2..4].copy_from_slice(&half::f16::from_f32(-1.0).to_le_bytes());
        b[4] = 0x3f;
        let y = decode(QuantType::Q4_1, &b);
        assert_eq!((y[0], y[16], y[1]), (6.5, 0.5, -1.0));
        // FP8: s = 2, codes 0x38 (1.0) and 0x7f (NaN) / 0x7c (inf).
        let mut b = vec![0u8; 36];
        b[..4].copy_from_slice(&2.0f32.to_le_bytes());
        b[4] = 0x38;
        b[5] = 0x7f;
        let y = decode(QuantType::Fp8E4M3, &b);
        assert_eq!(y[0], 2.0);
        assert!(y[1].is_nan());
        b[5] = 0x7c;
        let y = decode(QuantType::Fp8E5M2, &b);
        assert_eq!((y[0], y[1]), (1.0, f32::INFINITY));
        // NVFP4: scales 1, 2, 0.5 (0x30), NaN; byte 4 = 0x71 gives elements 0.5 and 6; byte
        // 12 (elements 16, 17) is scaled by 2.
        let mut b = vec![0u8; 36];
        b[..4].copy_from_slice(&[0x38, 0x40, 0x30, 0x7f]);
        b[4] = 0x71;
        b[12] = 0x0f;
        let y = decode(QuantType::NvFp4, &b);
        assert_eq!((y[0], y[1], y[16], y[17]), (0.5, 6.0, -12.0, 0.0));
        assert!(y[48..].iter().all(|v| v.is_nan()) && y[..48].iter().all(|v| !v.is_nan()));
    }

    /// Quantize then decode: the error per element stays within half a step of each format.
    #[test]
    fn round_trips_stay_within_half_a_step() {
        let v = values(256, 0.8);
        let amax = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
        // (format, worst error allowed, relative to the block's amax or to |x|).
        // Q4_0's levels are −8..7 steps of amax / 8: the end opposite the largest element clamps
        // at 7 steps, a full step short.
        let abs_cases = [(QuantType::Q8_0, 0.5 / 127.0), (QuantType::Q4_0, 1.0 / 8.0)];
        for (ty, tol) in abs_cases {
            let y = decode(ty, &quantize(ty, &v).unwrap());
            let worst = v.iter().zip(&y).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
            assert!(worst <= tol * amax * 1.01, "{ty}: {worst}");
        }
        for (ty, levels) in [(QuantType::Q4_1, 15.0), (QuantType::Q8Asym, 255.0)] {
            let y = decode(ty, &quantize(ty, &v).unwrap());
            let worst = v.iter().zip(&y).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
            // Half a step of (max − min) / levels, plus the f16 rounding of d and m.
            assert!(worst <= 2.0 * amax / levels * 0.5 * 1.02 + 1e-3, "{ty}: {worst}");
        }
        // fp8: relative error at most 2^-(mantissa bits + 1) for values in the normal range.
        for (ty, bits) in [(QuantType::Fp8E4M3, 3), (QuantType::Fp8E5M2, 2)] {
            let y = decode(ty, &quantize(ty, &v).unwrap());
            for (a, b) in v.iter().zip(&y) {
                if a.abs() > amax / 16.0 {
                    assert!((a - b).abs() <= a.abs() * 0.5f32.powi(bits + 1) * 1.001, "{ty}: {a} -> {b}");
                }
            }
        }
        let (bytes, g) = quantize_nvfp4(&v).unwrap();
        let y: Vec<f32> = decode(QuantType::NvFp4, &bytes).iter().map(|x| x * g).collect();
        for (a, b) in v.iter().zip(&y) {
            // e2m1 steps are at most a third of the value above 1 (between 4 and 6): half a
            // step is 1/6 of the micro-block amax at worst, plus e4m3's rounding of the scale.
            assert!((a - b).abs() <= amax / 6.0 + 1e-6, "nvfp4: {a} -> {b}");
        }
    }

    #[test]
    fn nan_and_inf_inputs_come_back_non_finite() {
        let mut v = values(128, 1.0);
        v[5] = f32::NAN;
        v[40] = f32::INFINITY;
        for ty in [QuantType::Q8_0, QuantType::Q4_1, QuantType::Q8Asym, QuantType::Fp8E4M3, QuantType::NvFp4]
        {
            let y = decode(ty, &quantize(ty, &v).unwrap());
            assert!(y[5].is_nan() && !y[40].is_finite(), "{ty}: {} {}", y[5], y[40]);
            assert!(y[100].is_finite(), "{ty}: an element of a finite block");
        }
        let y = decode(QuantType::Fp8E5M2, &quantize(QuantType::Fp8E5M2, &v).unwrap());
        assert!(y[5].is_nan() && y[40] == f32::INFINITY);
    }
}
