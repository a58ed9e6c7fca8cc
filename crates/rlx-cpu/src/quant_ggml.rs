//! Reference decoders of the ggml block formats that llama.cpp's standard mixes add beside the
//! five of `quant` (layouts on [`rlx_ir::QuantType`]): the 5-bit legacy blocks Q5_0 and Q5_1,
//! the 2- and 3-bit K-quants Q2_K and Q3_K, and the non-linear IQ4_NL and IQ4_XS.
//!
//! As in `quant`: the f16 scales are widened exactly, then each value is one f32 product per
//! step in ggml's order, each rounded once, never fused into an FMA — `q·d` (`(q − 16)·d`),
//! `q·d + m`, `(d·scale)·q − dmin·min`, `(d·(s − 32))·q`, `d·table[q]` — so the results are
//! gguf-py's `quants.dequantize` bits.

use crate::quant::f16_at;
use rlx_ir::IQ4NL_VALUES;

/// The 32 five-bit values of a Q5_0 / Q5_1 block: low nibbles from the 16 bytes at `qs` (byte
/// `j` holds element `j` low, `j + 16` high), fifth bits from the u32 at `qh` (bit `i` for
/// element `i`).
fn five_bits<const B: usize>(b: &[u8; B], qh: usize, qs: usize) -> [u8; 32] {
    let high = u32::from_le_bytes([b[qh], b[qh + 1], b[qh + 2], b[qh + 3]]);
    std::array::from_fn(|i| {
        let nibble = if i < 16 { b[qs + i] & 0x0f } else { b[qs + i - 16] >> 4 };
        nibble | ((((high >> i) & 1) as u8) << 4)
    })
}

/// Q5_0: `d` (f16), `qh` (u32), 16 bytes of low nibbles; `x = (q − 16)·d`.
pub(crate) fn q5_0(b: &[u8; 22], y: &mut [f32; 32]) {
    let d = f16_at(b, 0);
    for (y, q) in y.iter_mut().zip(five_bits(b, 2, 6)) {
        *y = d * f32::from(i16::from(q) - 16);
    }
}

/// Q5_1: `d`, `m` (f16), `qh` (u32), 16 bytes of low nibbles; `x = q·d + m`.
pub(crate) fn q5_1(b: &[u8; 24], y: &mut [f32; 32]) {
    let (d, m) = (f16_at(b, 0), f16_at(b, 2));
    for (y, q) in y.iter_mut().zip(five_bits(b, 4, 8)) {
        *y = d * f32::from(q) + m;
    }
}

/// The 2-bit value of element `e` (0..256) of a Q2_K / Q3_K super-block whose 64 value bytes
/// start at `qs`: half `e / 128` uses bytes `qs + 32·half ..`, and its group `g` of 32 bits
/// `2g, 2g + 1` of byte `e mod 32`.
fn two_bits<const B: usize>(b: &[u8; B], qs: usize, e: usize) -> u8 {
    let (half, g, l) = (e / 128, (e / 32) % 4, e % 32);
    (b[qs + 32 * half + l] >> (2 * g)) & 3
}

/// Q2_K: 16 bytes of (scale, min) nibbles, 64 bytes of 2-bit values, `d`, `dmin` (f16);
/// `x = (d·scale)·q − dmin·min`, one (scale, min) pair per 16 elements.
pub(crate) fn q2_k(b: &[u8; 84], y: &mut [f32; 256]) {
    let (d, dmin) = (f16_at(b, 80), f16_at(b, 82));
    for (i, ys) in y.chunks_exact_mut(16).enumerate() {
        let dl = d * f32::from(b[i] & 0x0f);
        let ml = dmin * f32::from(b[i] >> 4);
        for (l, y) in ys.iter_mut().enumerate() {
            *y = dl * f32::from(two_bits(b, 16, 16 * i + l)) - ml;
        }
    }
}

/// The sixteen 6-bit scales of a Q3_K super-block (stored biased by 32), from its 12 scale
/// bytes: the low 4 bits of scale `i` are byte `i mod 8`'s low nibble (i < 8) or high nibble,
/// its top 2 bits bits `2·(i / 4)..` of byte `8 + i mod 4`.
fn q3_k_scales(s: &[u8]) -> [i16; 16] {
    std::array::from_fn(|i| {
        let low = (s[i % 8] >> (4 * (i / 8))) & 0x0f;
        let high = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
        i16::from(low | (high << 4)) - 32
    })
}

/// Q3_K: 32 bytes `hmask`, 64 bytes of low 2-bit values, 12 bytes of scales, `d` (f16);
/// `x = (d·(s − 32))·q` with `q` the low bits, less 4 where the element's `hmask` bit is clear.
pub(crate) fn q3_k(b: &[u8; 110], y: &mut [f32; 256]) {
    let d = f16_at(b, 108);
    let scales = q3_k_scales(&b[96..108]);
    for (i, ys) in y.chunks_exact_mut(16).enumerate() {
        let dl = d * f32::from(scales[i]);
        for (l, y) in ys.iter_mut().enumerate() {
            let e = 16 * i + l;
            let high_set = (b[e % 32] >> (e / 32)) & 1 == 1;
            let q = i16::from(two_bits(b, 32, e)) - if high_set { 0 } else { 4 };
            *y = dl * f32::from(q);
        }
    }
}

/// 32 table values scaled by `d`, from 16 bytes of indices (byte `j`: element `j` low nibble,
/// `j + 16` high).
fn iq4_32(d: f32, qs: &[u8], y: &mut [f32]) {
    let (lo, hi) = y.split_at_mut(16);
    for ((&q, lo), hi) in qs.iter().zip(lo).zip(hi) {
        *lo = d * f32::from(IQ4NL_VALUES[usize::from(q & 0x0f)]);
        *hi = d * f32::from(IQ4NL_VALUES[usize::from(q >> 4)]);
    }
}

/// IQ4_NL: `d` (f16), 16 bytes of indices; `x = d·table[q]`.
pub(crate) fn iq4_nl(b: &[u8; 18], y: &mut [f32; 32]) {
    iq4_32(f16_at(b, 0), &b[2..], y);
}

/// IQ4_XS: `d` (f16), `scales_h` (u16), 4 bytes `scales_l`, 128 bytes of indices; sub-block `s`
/// of 32 has the 6-bit scale `ls` and `x = (d·(ls − 32))·table[q]`.
pub(crate) fn iq4_xs(b: &[u8; 136], y: &mut [f32; 256]) {
    let d = f16_at(b, 0);
    let scales_h = u16::from_le_bytes([b[2], b[3]]);
    for (s, (ys, qs)) in y.chunks_exact_mut(32).zip(b[8..].chunks_exact(16)).enumerate() {
        let low = (b[4 + s / 2] >> (4 * (s % 2))) & 0x0f;
        let high = ((scales_h >> (2 * s)) & 3) as u8;
        let ls = i16::from(low | (high << 4)) - 32;
        iq4_32(d * f32::from(ls), qs, ys);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;

    fn with_f16(mut b: Vec<u8>, at: usize, v: f32) -> Vec<u8> {
        b[at..at + 2].copy_from_slice(&f16::from_f32(v).to_le_bytes());
        b
    }

    #[test]
    fn q5_blocks_take_the_fifth_bit_from_qh() {
        // d = 0.5; qh bit 0 and bit 17 set; byte 6 = 0x21: element 0 = 1|16, element 16 = 2.
        let mut b = with_f16(vec![0u8; 22], 0, 0.5);
        b[2..6].copy_from_slice(&(1u32 | 1 << 17).to_le_bytes());
        b[6] = 0x21;
        b[7] = 0xf0;
        let mut y = [0.0; 32];
        q5_0(&b.clone().try_into().unwrap(), &mut y);
        assert_eq!((y[0], y[16], y[1], y[17]), ((17.0 - 16.0) * 0.5, -7.0, -8.0, (31.0 - 16.0) * 0.5));
        // Q5_1 with d = 0.5 and m = −1 on the same bits.
        let mut b1 = with_f16(with_f16(vec![0u8; 24], 0, 0.5), 2, -1.0);
        b1[4..].copy_from_slice(&b[2..]);
        q5_1(&b1.try_into().unwrap(), &mut y);
        assert_eq!((y[0], y[16], y[1], y[17]), (7.5, 0.0, -1.0, 14.5));
    }

    #[test]
    fn q2_k_groups_and_scales() {
        // d = 1, dmin = 0.5; scale byte 2 (elements 32..48) = min 3, scale 5; value byte 16
        // (element 0 in bits 0..2, element 32 in bits 2..4) = 0b1110.
        let mut b = with_f16(with_f16(vec![0u8; 84], 80, 1.0), 82, 0.5);
        b[2] = 0x35;
        b[16] = 0b1110;
        b[16 + 32 + 5] = 0b11 << 6; // element 128 + 96 + 5
        b[14] = 0x02; // scale of elements 224..240
        let mut y = [0.0; 256];
        q2_k(&b.try_into().unwrap(), &mut y);
        assert_eq!((y[0], y[32], y[33], y[229]), (0.0, 5.0 * 3.0 - 1.5, -1.5, 6.0));
    }

    #[test]
    fn q3_k_scales_and_high_bits() {
        // Scales: s_i = i + 1 (stored i + 33); low nibbles in bytes 0..8, top bits in 8..12.
        let stored: [u8; 16] = std::array::from_fn(|i| i as u8 + 33);
        let mut s = [0u8; 12];
        for (i, &v) in stored.iter().enumerate() {
            s[i % 8] |= (v & 0x0f) << (4 * (i / 8));
            s[8 + i % 4] |= (v >> 4) << (2 * (i / 4));
        }
        assert_eq!(q3_k_scales(&s), std::array::from_fn(|i| i as i16 + 1));
        // d = 1. Element 0: low 3, hmask bit set → 3·1; element 1: low 0, bit clear → −4·1;
        // element 160 (group 5, byte 0 of half 1, bits 2..4): low 2, bit 5 of hmask[0] clear.
        let mut b = with_f16(vec![0u8; 110], 108, 1.0);
        b[96..108].copy_from_slice(&s);
        b[0] = 1;
        b[32] = 3;
        b[64] = 2 << 2;
        let mut y = [0.0; 256];
        q3_k(&b.try_into().unwrap(), &mut y);
        assert_eq!((y[0], y[1], y[160]), (3.0, -4.0, -2.0 * 11.0));
    }

    #[test]
    fn iq4_tables_and_sub_block_scales() {
        let mut b = with_f16(vec![0u8; 18], 0, 2.0);
        b[2] = 0xf0;
        let mut y = [0.0; 32];
        iq4_nl(&b.try_into().unwrap(), &mut y);
        assert_eq!((y[0], y[16], y[1]), (-254.0, 226.0, -254.0));
        // IQ4_XS, d = 0.25: sub-block 3's scale = 0x0a | 2 << 4 = 42 → 10; index 8 → 1.
        let mut b = with_f16(vec![0u8; 136], 0, 0.25);
        b[2..4].copy_from_slice(&(2u16 << 6).to_le_bytes());
        b[4 + 1] = 0xa0;
        b[8 + 48] = 0x08;
        let mut y = [0.0; 256];
        iq4_xs(&b.try_into().unwrap(), &mut y);
        assert_eq!((y[96], y[112], y[0]), (2.5, -10.0 * 127.0 * 0.25, 127.0 * 8.0));
    }
}
