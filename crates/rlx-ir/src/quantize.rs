//! Host quantizers: f32 values to packed blocks of a [`QuantType`], for tests and for users
//! converting weights (a [N, K] `nn.Linear` weight quantizes row by row into the U8 [N,
//! row_bytes] that `Graph::quant_matmul` takes; since blocks never span rows, quantizing the
//! whole row-major buffer at once is the same).
//!
//! Contract: `values.len()` must be whole blocks. Every rule rounds to nearest, as written per
//! format below; the decoders (rlx-cpu `quant::dequantize`, the GPU kernels) give back the
//! rounded values. A block holding NaN or ±inf: the fp8 formats encode each element as itself
//! (e4m3 has no infinity, so ±inf becomes NaN) with the scale taken over the finite elements;
//! the integer formats and nvfp4 micro-blocks, which have no NaN code, store a NaN scale, so the
//! whole (micro-)block decodes to NaN — NaN in, NaN out.

use crate::minifloat::{
    e4m3_to_f32, f32_to_e2m1, f32_to_e4m3, f32_to_e5m2, E2M1_MAX, E4M3_MAX, E4M3_NAN, E5M2_MAX,
};
use crate::{QuantError, QuantType};
use half::f16;

/// `values` quantized to blocks of `ty`, back to back. Errors when `values` is not whole
/// blocks, or for the K-quants (Q4_K, Q5_K, Q6_K), which rlx only reads.
///
/// Rules (all ggml's reference quantizers for ggml's formats):
/// - Q8_0: `d = amax / 127`, `q = round(x / d)` (half away from zero).
/// - Q4_0: `d = v / −8` with `v` the element of largest magnitude, `q = min(15, ⌊x / d + 8.5⌋)`.
/// - Q4_1 / Q8_ASYM: `m = min`, `d = (max − min) / L` (L = 15 / 255), `q = min(L, ⌊(x − m) /
///   d + 0.5⌋)`.
/// - FP8_E4M3 / FP8_E5M2: `s = amax / 448` (or `/ 57344`), `q = fp8(x / s)` to nearest even.
/// - NVFP4: as [`quantize_nvfp4`] with a global scale of 1: each micro-block's scale is
///   `e4m3(amax / 6)` and `q = e2m1(x / scale)` to nearest even. Use [`quantize_nvfp4`] for
///   weights far from magnitude 1, whose scales would leave e4m3's range.
///
/// Scales are stored as f16 (rounded to nearest) where the format says so; the elements are
/// quantized against the unrounded f32 scale, as ggml does.
pub fn quantize(ty: QuantType, values: &[f32]) -> Result<Vec<u8>, QuantError> {
    quantize_with(ty, values, 1.0)
}

/// `values` as NVFP4 blocks plus the per-tensor global scale `g` the graph multiplies by
/// (rlx-nn's `nvfp4_matmul`): `g = amax / (448 · 6)` over the finite values (1 when that
/// is zero or not a normal f32), so the largest micro-block scale `amax_b / 6 / g` sits at
/// e4m3's top (448); then per micro-block of 16 `scale = e4m3(amax_b / 6 / g)` (nearest even,
/// saturating) and `q = e2m1(x / g / scale)`. Errors when `values` is not whole 64-element
/// blocks.
pub fn quantize_nvfp4(values: &[f32]) -> Result<(Vec<u8>, f32), QuantError> {
    let amax = finite_amax(values);
    let g = amax / (E4M3_MAX * E2M1_MAX);
    let g = if g.is_normal() { g } else { 1.0 };
    Ok((quantize_with(QuantType::NvFp4, values, g)?, g))
}

fn quantize_with(ty: QuantType, values: &[f32], global: f32) -> Result<Vec<u8>, QuantError> {
    let bytes = ty.byte_len(values.len())?;
    let mut out = Vec::with_capacity(bytes);
    for block in values.chunks_exact(ty.block_elems()) {
        match ty {
            QuantType::Q8_0 => q8_0(block, &mut out),
            QuantType::Q4_0 => q4_0(block, &mut out),
            QuantType::Q4_1 => asym(block, 15, &mut out),
            QuantType::Q8Asym => asym(block, 255, &mut out),
            QuantType::Fp8E4M3 => fp8(block, E4M3_MAX, f32_to_e4m3, &mut out),
            QuantType::Fp8E5M2 => fp8(block, E5M2_MAX, f32_to_e5m2, &mut out),
            QuantType::NvFp4 => nvfp4(block, global, &mut out),
            QuantType::Q4K
            | QuantType::Q5K
            | QuantType::Q6K
            | QuantType::Q5_0
            | QuantType::Q5_1
            | QuantType::Q2K
            | QuantType::Q3K
            | QuantType::IQ4NL
            | QuantType::IQ4XS
            | QuantType::IQ2XXS
            | QuantType::IQ2XS
            | QuantType::IQ2S
            | QuantType::IQ3XXS
            | QuantType::IQ3S
            | QuantType::IQ1S
            | QuantType::IQ1M => return Err(QuantError::NoQuantizer { ty }),
        }
    }
    Ok(out)
}

/// The largest finite magnitude (0 when there is none).
fn finite_amax(v: &[f32]) -> f32 {
    v.iter().filter(|x| x.is_finite()).fold(0.0, |m, x| m.max(x.abs()))
}

fn push_f16(out: &mut Vec<u8>, v: f32) {
    out.extend_from_slice(&f16::from_f32(v).to_le_bytes());
}

/// The scale to store: NaN when the block holds a value no integer code can hold.
fn or_nan(block: &[f32], d: f32) -> f32 {
    if block.iter().all(|x| x.is_finite()) {
        d
    } else {
        f32::NAN
    }
}

fn q8_0(block: &[f32], out: &mut Vec<u8>) {
    let d = finite_amax(block) / 127.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    push_f16(out, or_nan(block, d));
    // Finite values stay within ±127 (as i8 saturates; NaN becomes 0 under the NaN scale).
    out.extend(block.iter().map(|&x| ((x * id).round() as i8) as u8));
}

fn q4_0(block: &[f32], out: &mut Vec<u8>) {
    let v =
        block.iter().filter(|x| x.is_finite()).fold(0.0f32, |m, &x| if x.abs() > m.abs() { x } else { m });
    let d = v / -8.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    push_f16(out, or_nan(block, d));
    let q = |x: f32| ((x * id + 8.5) as u8).min(15);
    let (lo, hi) = block.split_at(16);
    out.extend(lo.iter().zip(hi).map(|(&a, &b)| q(a) | (q(b) << 4)));
}

/// Q4_1 (`levels` 15, nibbles as Q4_0's) and Q8_ASYM (`levels` 255, one byte each).
fn asym(block: &[f32], levels: u8, out: &mut Vec<u8>) {
    let finite = block.iter().copied().filter(|x| x.is_finite());
    let (min, max) = finite.fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), x| (lo.min(x), hi.max(x)));
    let (min, max) = if min <= max { (min, max) } else { (0.0, 0.0) };
    let d = (max - min) / f32::from(levels);
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    push_f16(out, or_nan(block, d));
    push_f16(out, min);
    let q = |x: f32| (((x - min) * id + 0.5) as u8).min(levels);
    if levels == 15 {
        let (lo, hi) = block.split_at(16);
        out.extend(lo.iter().zip(hi).map(|(&a, &b)| q(a) | (q(b) << 4)));
    } else {
        out.extend(block.iter().map(|&x| q(x)));
    }
}

fn fp8(block: &[f32], max: f32, encode: fn(f32) -> u8, out: &mut Vec<u8>) {
    let s = finite_amax(block) / max;
    out.extend_from_slice(&s.to_le_bytes());
    // An all-zero block keeps s = 0 and zero codes; x / s would be NaN.
    out.extend(block.iter().map(|&x| encode(if s > 0.0 || !x.is_finite() { x / s } else { 0.0 })));
}

fn nvfp4(block: &[f32], global: f32, out: &mut Vec<u8>) {
    let mut codes = [0u8; 64];
    for (i, micro) in block.chunks_exact(16).enumerate() {
        let scale = if micro.iter().all(|x| x.is_finite()) {
            f32_to_e4m3(finite_amax(micro) / E2M1_MAX / global)
        } else {
            E4M3_NAN
        };
        out.push(scale);
        let sd = e4m3_to_f32(scale);
        for (c, &x) in codes[16 * i..16 * i + 16].iter_mut().zip(micro) {
            *c = if sd > 0.0 { f32_to_e2m1(x / global / sd).unwrap_or(0) } else { 0 };
        }
    }
    out.extend(codes.chunks_exact(2).map(|p| p[0] | (p[1] << 4)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::minifloat::{e2m1_to_f32, e5m2_to_f32};

    fn f16_at(b: &[u8], i: usize) -> f32 {
        f16::from_le_bytes([b[i], b[i + 1]]).to_f32()
    }

    #[test]
    fn sizes_and_refusals() {
        assert_eq!(quantize(QuantType::Q4_1, &[0.0; 64]).map(|b| b.len()), Ok(40));
        assert_eq!(quantize(QuantType::NvFp4, &[0.0; 64]).map(|b| b.len()), Ok(36));
        assert!(matches!(quantize(QuantType::Fp8E4M3, &[0.0; 33]), Err(QuantError::PartialBlock { .. })));
        let e = quantize(QuantType::Q4K, &[0.0; 256]).unwrap_err();
        assert_eq!(e, QuantError::NoQuantizer { ty: QuantType::Q4K });
        assert!(e.to_string().contains("llama-quantize"), "{e}");
    }

    #[test]
    fn asymmetric_blocks_keep_their_ends() {
        // 0..31 step 1 plus an offset: min and max are exact, so is every step (d = 31/255).
        let v: Vec<f32> = (0..32).map(|i| 3.0 + i as f32).collect();
        let b = quantize(QuantType::Q8Asym, &v).unwrap();
        assert_eq!((f16_at(&b, 2), b[4], b[35]), (3.0, 0, 255));
        let b = quantize(QuantType::Q4_1, &v).unwrap();
        assert_eq!(f16_at(&b, 0), f16::from_f32(31.0 / 15.0).to_f32());
        assert_eq!((b[4] & 0xf, b[19] >> 4), (0, 15));
    }

    #[test]
    fn fp8_scale_maps_amax_to_the_largest_code() {
        let mut v = vec![0.001f32; 32];
        v[5] = -0.9;
        let b = quantize(QuantType::Fp8E4M3, &v).unwrap();
        let s = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        assert_eq!(s, 0.9 / 448.0);
        assert_eq!(b[4 + 5], 0xfe);
        let b = quantize(QuantType::Fp8E5M2, &v).unwrap();
        assert_eq!(b[4 + 5], 0xfb);
        let s = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        assert!((s * e5m2_to_f32(b[4]) - 0.001).abs() < 0.001 * 0.13);
        // All zeros: scale 0, codes 0, decoding to zeros, not NaN.
        assert_eq!(quantize(QuantType::Fp8E4M3, &[0.0; 32]).unwrap(), vec![0u8; 36]);
    }

    #[test]
    fn nvfp4_global_scale_and_nibble_order() {
        let mut v = vec![0.0f32; 64];
        v[0] = 6.0 * 448.0 * 0.001; // the tensor's amax
        v[1] = -v[0] / 2.0;
        let (b, g) = quantize_nvfp4(&v).unwrap();
        assert_eq!(g, v[0] / (448.0 * 6.0));
        assert_eq!(e4m3_to_f32(b[0]), 448.0);
        assert_eq!((e2m1_to_f32(b[4] & 0xf), e2m1_to_f32(b[4] >> 4)), (6.0, -3.0));
        // Micro-blocks 1..4 are zeros: zero scale, zero codes.
        assert_eq!(&b[1..4], &[0, 0, 0]);
    }

    #[test]
    fn non_finite_blocks_decode_to_nan_scales() {
        let mut v = vec![0.5f32; 64];
        v[3] = f32::NAN;
        let b = quantize(QuantType::Q8_0, &v).unwrap();
        assert!(f16_at(&b, 0).is_nan() && !f16_at(&b, 34).is_nan());
        let b = quantize(QuantType::NvFp4, &v).unwrap();
        assert!(e4m3_to_f32(b[0]).is_nan() && e4m3_to_f32(b[1]) > 0.0);
        let b = quantize(QuantType::Fp8E4M3, &v).unwrap();
        let s = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        assert_eq!((s, b[4 + 3] & 0x7f), (0.5 / 448.0, 0x7f));
    }
}
