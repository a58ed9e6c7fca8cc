//! The reference decoders of packed weights: the block quantizations of [`QuantType`] (ggml's
//! Q8_0, Q4_0 and Q4_K..Q6_K here, its Q5_0, Q5_1, Q2_K, Q3_K, IQ4_NL and IQ4_XS in
//! `quant_ggml`, its codebook formats IQ2_XXS…IQ1_M in `quant_iq`, rlx's int, fp8 and nvfp4
//! formats and Q4_1 in `quant_rlx`) and little-endian
//! f16 / bf16, widened to f32.
//!
//! Contract:
//! - [`dequantize`] decodes whole blocks, back to back, into exactly as many f32 values as they
//!   hold; any other pair of lengths is a [`DecodeError`], never a panic or a partial write.
//! - Each value is computed as ggml (and gguf-py's `quants.dequantize`) computes it: the f16
//!   scales are widened exactly, then one f32 product per step in ggml's order — `(d·scale)·q`,
//!   and `(d·scale)·q − dmin·min` for the K-quants — each rounded once, never fused into an FMA.
//!   So the results are the same f32 bits as the oracle's, and NaN or infinite scales give NaN or
//!   infinite values (`inf · 0` is NaN) like it.
//! - Hosts only: GPU paths keep the blocks packed and decode them in their kernels.

use crate::{quant_ggml, quant_iq, quant_rlx};
use half::f16;
use rayon::prelude::*;
use rlx_ir::{QuantError, QuantType};

/// Input and output lengths that do not agree.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum DecodeError {
    #[error(transparent)]
    Quant(#[from] QuantError),
    /// f16 / bf16 input whose byte length is not twice the output's element count.
    #[error("{format}: {bytes} bytes do not hold {elems} elements of 2 bytes each")]
    Length { format: &'static str, bytes: usize, elems: usize },
}

/// Decodes `bytes` (whole blocks of `ty`) into `out`, which must have room for exactly the
/// elements they hold.
pub fn dequantize(ty: QuantType, bytes: &[u8], out: &mut [f32]) -> Result<(), DecodeError> {
    let elems = ty.elem_count(bytes.len())?;
    if elems != out.len() {
        return Err(QuantError::LengthMismatch { ty, bytes: bytes.len(), elems: out.len() }.into());
    }
    match ty {
        QuantType::Q8_0 => for_blocks(bytes, out, q8_0),
        QuantType::Q4_0 => for_blocks(bytes, out, q4_0),
        QuantType::Q4K => for_blocks(bytes, out, q4_k),
        QuantType::Q5K => for_blocks(bytes, out, q5_k),
        QuantType::Q6K => for_blocks(bytes, out, q6_k),
        QuantType::Q4_1 => for_blocks(bytes, out, quant_rlx::q4_1),
        QuantType::Q8Asym => for_blocks(bytes, out, quant_rlx::q8_asym),
        QuantType::Fp8E4M3 => for_blocks(bytes, out, quant_rlx::fp8_e4m3),
        QuantType::Fp8E5M2 => for_blocks(bytes, out, quant_rlx::fp8_e5m2),
        QuantType::NvFp4 => for_blocks(bytes, out, quant_rlx::nvfp4),
        QuantType::Q5_0 => for_blocks(bytes, out, quant_ggml::q5_0),
        QuantType::Q5_1 => for_blocks(bytes, out, quant_ggml::q5_1),
        QuantType::Q2K => for_blocks(bytes, out, quant_ggml::q2_k),
        QuantType::Q3K => for_blocks(bytes, out, quant_ggml::q3_k),
        QuantType::IQ4NL => for_blocks(bytes, out, quant_ggml::iq4_nl),
        QuantType::IQ4XS => for_blocks(bytes, out, quant_ggml::iq4_xs),
        QuantType::IQ2XXS => for_blocks(bytes, out, quant_iq::iq2_xxs),
        QuantType::IQ2XS => for_blocks(bytes, out, quant_iq::iq2_xs),
        QuantType::IQ2S => for_blocks(bytes, out, quant_iq::iq2_s),
        QuantType::IQ3XXS => for_blocks(bytes, out, quant_iq::iq3_xxs),
        QuantType::IQ3S => for_blocks(bytes, out, quant_iq::iq3_s),
        QuantType::IQ1S => for_blocks(bytes, out, quant_iq::iq1_s),
        QuantType::IQ1M => for_blocks(bytes, out, quant_iq::iq1_m),
    }
    Ok(())
}

/// Widens little-endian IEEE half-precision values (exact).
pub fn widen_f16(bytes: &[u8], out: &mut [f32]) -> Result<(), DecodeError> {
    widen(bytes, out, "F16", |bits| f16::from_bits(bits).to_f32())
}

/// Widens little-endian bfloat16 values: each is the top half of an f32's bits (exact, NaN
/// payloads included).
pub fn widen_bf16(bytes: &[u8], out: &mut [f32]) -> Result<(), DecodeError> {
    widen(bytes, out, "BF16", |bits| f32::from_bits(u32::from(bits) << 16))
}

fn widen(bytes: &[u8], out: &mut [f32], format: &'static str, f: fn(u16) -> f32) -> Result<(), DecodeError> {
    if out.len().checked_mul(2) != Some(bytes.len()) {
        return Err(DecodeError::Length { format, bytes: bytes.len(), elems: out.len() });
    }
    for (y, b) in out.iter_mut().zip(bytes.chunks_exact(2)) {
        if let [lo, hi] = *b {
            *y = f(u16::from_le_bytes([lo, hi]));
        }
    }
    Ok(())
}

/// Runs `decode` on each block of `B` bytes and its `E` outputs. The caller checked that the
/// lengths are whole blocks and agree, so every chunk converts to its array.
fn for_blocks<const B: usize, const E: usize>(
    bytes: &[u8],
    out: &mut [f32],
    decode: fn(&[u8; B], &mut [f32; E]),
) {
    bytes.par_chunks_exact(B).zip(out.par_chunks_exact_mut(E)).for_each(|(b, y)| {
        if let (Ok(b), Ok(y)) = (<&[u8; B]>::try_from(b), <&mut [f32; E]>::try_from(y)) {
            decode(b, y);
        }
    });
}

/// The f16 stored little-endian at `b[i..i + 2]`, widened.
pub(crate) fn f16_at<const B: usize>(b: &[u8; B], i: usize) -> f32 {
    f16::from_bits(u16::from_le_bytes([b[i], b[i + 1]])).to_f32()
}

/// Q8_0: `d` (f16), then 32 signed bytes.
fn q8_0(b: &[u8; 34], y: &mut [f32; 32]) {
    let d = f16_at(b, 0);
    for (y, &q) in y.iter_mut().zip(&b[2..]) {
        *y = f32::from(q as i8) * d;
    }
}

/// Q4_0: `d` (f16), then 16 bytes; byte `j` holds element `j` (low nibble) and `j + 16`.
fn q4_0(b: &[u8; 18], y: &mut [f32; 32]) {
    let d = f16_at(b, 0);
    let (lo, hi) = y.split_at_mut(16);
    for ((&q, lo), hi) in b[2..].iter().zip(lo).zip(hi) {
        *lo = d * f32::from(i16::from(q & 0x0f) - 8);
        *hi = d * f32::from(i16::from(q >> 4) - 8);
    }
}

/// The eight 6-bit scales and eight 6-bit mins of a Q4_K / Q5_K super-block, packed in 12
/// bytes: bytes 0..4 hold scales 0..4 in their low 6 bits, bytes 4..8 mins 0..4 likewise; the
/// low nibbles of bytes 8..12 are the low 4 bits of scales 4..8 and their high nibbles those of
/// mins 4..8, whose top 2 bits are the top 2 bits of bytes 0..4 (scales) and 4..8 (mins).
fn k_scales_mins(s: [u8; 12]) -> ([u8; 8], [u8; 8]) {
    let mut scales = [0u8; 8];
    let mut mins = [0u8; 8];
    for j in 0..4 {
        scales[j] = s[j] & 0x3f;
        mins[j] = s[j + 4] & 0x3f;
        scales[j + 4] = (s[j + 8] & 0x0f) | ((s[j] >> 6) << 4);
        mins[j + 4] = (s[j + 8] >> 4) | ((s[j + 4] >> 6) << 4);
    }
    (scales, mins)
}

/// Per sub-block of 32: the multiplier `d·scale` and the offset `dmin·min`.
fn k_factors<const B: usize>(b: &[u8; B]) -> [(f32, f32); 8] {
    let (d, dmin) = (f16_at(b, 0), f16_at(b, 2));
    let (scales, mins) = k_scales_mins(std::array::from_fn(|i| b[4 + i]));
    std::array::from_fn(|j| (d * f32::from(scales[j]), dmin * f32::from(mins[j])))
}

/// Q4_K: `d`, `dmin` (f16), 12 bytes of scales and mins, 128 bytes of nibbles. Each 32 bytes
/// of nibbles hold two sub-blocks: the low nibbles the first, the high nibbles the second.
fn q4_k(b: &[u8; 144], y: &mut [f32; 256]) {
    let f = k_factors(b);
    for (pair, (ys, qs)) in y.chunks_exact_mut(64).zip(b[16..].chunks_exact(32)).enumerate() {
        let ((d1, m1), (d2, m2)) = (f[2 * pair], f[2 * pair + 1]);
        let (lo, hi) = ys.split_at_mut(32);
        for ((&q, lo), hi) in qs.iter().zip(lo).zip(hi) {
            *lo = d1 * f32::from(q & 0x0f) - m1;
            *hi = d2 * f32::from(q >> 4) - m2;
        }
    }
}

/// Q5_K: as Q4_K with 32 bytes of fifth bits before the nibbles: bit `s` of byte `l` is the
/// fifth bit of element `l` of sub-block `s`.
fn q5_k(b: &[u8; 176], y: &mut [f32; 256]) {
    let f = k_factors(b);
    let qh = &b[16..48];
    for (pair, (ys, qs)) in y.chunks_exact_mut(64).zip(b[48..].chunks_exact(32)).enumerate() {
        let ((d1, m1), (d2, m2)) = (f[2 * pair], f[2 * pair + 1]);
        let (lo, hi) = ys.split_at_mut(32);
        for (((&q, &h), lo), hi) in qs.iter().zip(qh).zip(lo).zip(hi) {
            let h1 = ((h >> (2 * pair)) & 1) << 4;
            let h2 = ((h >> (2 * pair + 1)) & 1) << 4;
            *lo = d1 * f32::from((q & 0x0f) | h1) - m1;
            *hi = d2 * f32::from((q >> 4) | h2) - m2;
        }
    }
}

/// Q6_K: 128 bytes of low nibbles, 64 bytes of high bit pairs, 16 signed scales, `d` (f16).
/// Each half of 128 elements uses 64 nibble bytes and 32 bit-pair bytes: its group `g` of 32
/// (0..4) takes nibbles from bytes `32·(g mod 2)..` (low nibbles for g < 2, high ones after)
/// and bit pair `g` of the bit-pair bytes. Scale `i` covers elements `16·i..16·i + 16`.
fn q6_k(b: &[u8; 210], y: &mut [f32; 256]) {
    let d = f16_at(b, 208);
    let scale: [f32; 16] = std::array::from_fn(|i| d * f32::from(b[192 + i] as i8));
    let (ql, qh) = (&b[..128], &b[128..192]);
    for (half, (yh, (ql, qh))) in
        y.chunks_exact_mut(128).zip(ql.chunks_exact(64).zip(qh.chunks_exact(32))).enumerate()
    {
        for (g, yg) in yh.chunks_exact_mut(32).enumerate() {
            let nibbles = &ql[32 * (g % 2)..32 * (g % 2) + 32];
            let shift = 4 * (g / 2);
            for (l, ((y, &q), &h)) in yg.iter_mut().zip(nibbles).zip(qh).enumerate() {
                let bits = ((q >> shift) & 0x0f) | (((h >> (2 * g)) & 3) << 4);
                let s = scale[8 * half + 2 * g + l / 16];
                *y = s * f32::from(i16::from(bits) - 32);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic bytes with finite f16 scales written at `scale_at`.
    fn blocks(ty: QuantType, n: usize, scale_at: &[usize]) -> Vec<u8> {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut bytes: Vec<u8> = (0..n * ty.block_bytes())
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (state >> 56) as u8
            })
            .collect();
        for block in bytes.chunks_exact_mut(ty.block_bytes()) {
            for &at in scale_at {
                block[at..at + 2].copy_from_slice(&f16::from_f32(0.25).to_le_bytes());
            }
        }
        bytes
    }

    /// The f16 scale offsets of the formats whose every other byte pattern is a finite code
    /// (the rlx fp8 and nvfp4 formats have their own tests in `quant_rlx`).
    fn scale_offsets(ty: QuantType) -> &'static [usize] {
        ty.f16_offsets()
    }

    #[test]
    fn every_output_is_written() {
        let sentinel = f32::from_bits(0x7fc0_1234);
        for ty in QuantType::ALL.into_iter().filter(|t| !t.f16_offsets().is_empty()) {
            let bytes = blocks(ty, 3, scale_offsets(ty));
            let mut out = vec![sentinel; 3 * ty.block_elems()];
            dequantize(ty, &bytes, &mut out).unwrap();
            assert!(out.iter().all(|v| v.is_finite()), "{ty}: an output was not written or is not finite");
        }
    }

    #[test]
    fn lengths_that_disagree_are_errors() {
        let mut out = vec![0.0; 64];
        let e = dequantize(QuantType::Q8_0, &[0; 34], &mut out).unwrap_err();
        assert_eq!(
            e,
            DecodeError::Quant(QuantError::LengthMismatch { ty: QuantType::Q8_0, bytes: 34, elems: 64 })
        );
        let e = dequantize(QuantType::Q4K, &[0; 145], &mut out).unwrap_err();
        assert!(matches!(e, DecodeError::Quant(QuantError::PartialBlockBytes { .. })), "{e}");
        assert!(dequantize(QuantType::Q6K, &[], &mut []).is_ok());
        assert!(matches!(widen_f16(&[0; 3], &mut out), Err(DecodeError::Length { .. })));
        assert!(matches!(widen_bf16(&[0; 4], &mut out), Err(DecodeError::Length { .. })));
    }

    #[test]
    fn hand_made_blocks() {
        // Q8_0 with d = 0.5: q = -128, 1, 127 ...
        let mut b = vec![0u8; 34];
        b[..2].copy_from_slice(&f16::from_f32(0.5).to_le_bytes());
        b[2] = 0x80;
        b[3] = 1;
        b[33] = 127;
        let mut y = vec![0.0; 32];
        dequantize(QuantType::Q8_0, &b, &mut y).unwrap();
        assert_eq!((y[0], y[1], y[2], y[31]), (-64.0, 0.5, 0.0, 63.5));

        // Q4_0 with d = 2: byte 0 = 0xF0 gives element 0 = (0 - 8)·2, element 16 = (15 - 8)·2.
        let mut b = vec![0x88u8; 18];
        b[..2].copy_from_slice(&f16::from_f32(2.0).to_le_bytes());
        b[2] = 0xf0;
        dequantize(QuantType::Q4_0, &b, &mut y).unwrap();
        assert_eq!((y[0], y[16], y[1]), (-16.0, 14.0, 0.0));
    }

    #[test]
    fn k_scales_unpack_six_bits() {
        // Scales 0..8 = 1..8 + 56 (top bits set for the high four), mins = 63 - scale.
        let sc: [u8; 8] = std::array::from_fn(|j| j as u8 + 1 + if j >= 4 { 48 } else { 0 });
        let mn: [u8; 8] = std::array::from_fn(|j| 63 - sc[j]);
        let mut s = [0u8; 12];
        for j in 0..4 {
            s[j] = sc[j] | ((sc[j + 4] >> 4) << 6);
            s[j + 4] = mn[j] | ((mn[j + 4] >> 4) << 6);
            s[j + 8] = (sc[j + 4] & 0x0f) | ((mn[j + 4] & 0x0f) << 4);
        }
        assert_eq!(k_scales_mins(s), (sc, mn));
    }

    #[test]
    fn non_finite_scales_propagate() {
        for ty in QuantType::ALL.into_iter().filter(|t| !t.f16_offsets().is_empty()) {
            let mut bytes = blocks(ty, 1, scale_offsets(ty));
            let at = scale_offsets(ty)[0];
            bytes[at..at + 2].copy_from_slice(&f16::NAN.to_le_bytes());
            let mut out = vec![0.0; ty.block_elems()];
            dequantize(ty, &bytes, &mut out).unwrap();
            assert!(out.iter().all(|v| v.is_nan()), "{ty}");
            bytes[at..at + 2].copy_from_slice(&f16::INFINITY.to_le_bytes());
            dequantize(ty, &bytes, &mut out).unwrap();
            assert!(out.iter().all(|v| v.is_nan() || v.is_infinite()), "{ty}");
        }
    }

    #[test]
    fn widening_is_exact() {
        let mut y = [0.0f32; 3];
        widen_f16(&[0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00], &mut y).unwrap();
        assert_eq!(y, [1.0, -2.0, f16::from_bits(1).to_f32()]);
        widen_bf16(&[0x80, 0x3f, 0x49, 0x40, 0x80, 0xff], &mut y).unwrap();
        assert_eq!(y.map(f32::to_bits), [0x3f80_0000, 0x4049_0000, 0xff80_0000]);
    }
}
