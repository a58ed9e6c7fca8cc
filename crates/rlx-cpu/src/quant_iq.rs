//! Reference decoders of ggml's codebook formats IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S
//! and IQ1_M (layouts on [`rlx_ir::QuantType`]; the grids in [`rlx_ir::quant_grids`]).
//!
//! Each group of 8 (IQ1, IQ2) or 4 (IQ3) elements is a grid entry picked by an index, scaled
//! by its sub-block's factor and signed (IQ2, IQ3) or shifted by ±1/8 (IQ1). As in `quant`, the
//! f16 scale is widened exactly and each step is one f32 operation in gguf-py's order, never
//! fused: `(d·(0.5 + s)·0.25)·g·sign`, `(d·(1 + 2s))·g·sign`, `(d·(2s + 1))·(g + δ)`.

use crate::quant::f16_at;
use rlx_ir::quant_grids::{grid_code, IQ1S_GRID, IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID};

/// IQ2 grids' values (codes 0, 1, 2).
const IQ2_VALUES: [f32; 3] = [8.0, 25.0, 43.0];
/// IQ3_XXS's values (codes 0..8).
const IQ3XXS_VALUES: [f32; 8] = [4.0, 12.0, 20.0, 28.0, 36.0, 44.0, 52.0, 62.0];
/// IQ1 shift of every value, its sign from the block.
const IQ1_DELTA: f32 = 0.125;

/// The 8 sign bits of a 7-bit sign index: the index, and an eighth bit that makes the count of
/// set bits even (ggml's `ksigns_iq2xs`).
fn ksigns(i: u32) -> u32 {
    let i = i & 0x7f;
    i | ((i.count_ones() & 1) << 7)
}

/// `y[j] = (scale·v[j])·(−1 if bit j of signs)` for the 8 grid values `v` of `entry`.
fn signed8(y: &mut [f32], grid: &[u32], entry: usize, values: &[f32], bits: u32, scale: f32, signs: u32) {
    for (j, y) in y.iter_mut().take(8).enumerate() {
        let v = values[grid_code(grid, entry, j, bits) as usize];
        let x = scale * v;
        *y = if signs >> j & 1 == 1 { -x } else { x };
    }
}

/// Little-endian u32 / u16 at byte `i`.
fn u32_at<const B: usize>(b: &[u8; B], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

fn u16_at<const B: usize>(b: &[u8; B], i: usize) -> u32 {
    u32::from(u16::from_le_bytes([b[i], b[i + 1]]))
}

/// IQ2_XXS: `d`, then per sub-block of 32 four grid index bytes and a u32 of scale and signs.
pub(crate) fn iq2_xxs(b: &[u8; 66], y: &mut [f32; 256]) {
    let d = f16_at(b, 0);
    for (s, ys) in y.chunks_exact_mut(32).enumerate() {
        let aux = u32_at(b, 2 + 8 * s + 4);
        let db = d * (0.5 + (aux >> 28) as f32) * 0.25;
        for (l, y8) in ys.chunks_exact_mut(8).enumerate() {
            let entry = usize::from(b[2 + 8 * s + l]);
            signed8(y8, &IQ2XXS_GRID, entry, &IQ2_VALUES, 2, db, ksigns(aux >> (7 * l)));
        }
    }
}

/// IQ2_XS: `d`, 32 u16 of 9-bit index and 7-bit sign index, 8 bytes of 4-bit scales per 16.
pub(crate) fn iq2_xs(b: &[u8; 74], y: &mut [f32; 256]) {
    let d = f16_at(b, 0);
    for (i, y8) in y.chunks_exact_mut(8).enumerate() {
        let q = u16_at(b, 2 + 2 * i);
        let s = (b[66 + i / 4] >> (4 * ((i / 2) % 2))) & 0x0f;
        let db = d * (0.5 + f32::from(s)) * 0.25;
        signed8(y8, &IQ2XS_GRID, (q & 511) as usize, &IQ2_VALUES, 2, db, ksigns(q >> 9));
    }
}

/// IQ2_S: `d`, 32 low index bytes, 32 sign bytes, 8 bytes of high index bits, 8 of scales.
pub(crate) fn iq2_s(b: &[u8; 82], y: &mut [f32; 256]) {
    let d = f16_at(b, 0);
    for (i, y8) in y.chunks_exact_mut(8).enumerate() {
        let high = (b[66 + i / 4] >> (2 * (i % 4))) & 3;
        let entry = usize::from(b[2 + i]) | usize::from(high) << 8;
        let s = (b[74 + i / 4] >> (4 * ((i / 2) % 2))) & 0x0f;
        let db = d * (0.5 + f32::from(s)) * 0.25;
        signed8(y8, &IQ2S_GRID, entry, &IQ2_VALUES, 2, db, u32::from(b[34 + i]));
    }
}

/// The 8 values of two IQ3 grid entries (4 each), scaled by `db` and signed by `signs`.
fn iq3_pair(
    y8: &mut [f32],
    grid: &[u32],
    entries: [usize; 2],
    values: impl Fn(u32) -> f32,
    db: f32,
    signs: u32,
) {
    for (j, y) in y8.iter_mut().take(8).enumerate() {
        let v = values(grid_code(grid, entries[j / 4], j % 4, 3));
        let x = db * v;
        *y = if signs >> j & 1 == 1 { -x } else { x };
    }
}

/// IQ3_XXS: `d`, 64 grid index bytes, then per sub-block of 32 a u32 of scale and signs.
pub(crate) fn iq3_xxs(b: &[u8; 98], y: &mut [f32; 256]) {
    let d = f16_at(b, 0);
    for (s, ys) in y.chunks_exact_mut(32).enumerate() {
        let aux = u32_at(b, 66 + 4 * s);
        let db = d * (0.5 + (aux >> 28) as f32) * 0.5;
        for (l, y8) in ys.chunks_exact_mut(8).enumerate() {
            let at = 2 + 8 * s + 2 * l;
            let entries = [usize::from(b[at]), usize::from(b[at + 1])];
            let value = |c: u32| IQ3XXS_VALUES[c as usize];
            iq3_pair(y8, &IQ3XXS_GRID, entries, value, db, ksigns(aux >> (7 * l)));
        }
    }
}

/// IQ3_S: `d`, 64 low index bytes, 8 bytes of ninth bits, 32 sign bytes, 4 bytes of scales.
pub(crate) fn iq3_s(b: &[u8; 110], y: &mut [f32; 256]) {
    let d = f16_at(b, 0);
    for (i, y8) in y.chunks_exact_mut(8).enumerate() {
        let entry = |k: usize| usize::from(b[2 + k]) | usize::from((b[66 + k / 8] >> (k % 8)) & 1) << 8;
        let s = (b[106 + i / 8] >> (4 * ((i / 4) % 2))) & 0x0f;
        let db = d * f32::from(1 + 2 * s);
        let value = |c: u32| (1 + 2 * c) as f32;
        iq3_pair(y8, &IQ3S_GRID, [entry(2 * i), entry(2 * i + 1)], value, db, u32::from(b[74 + i]));
    }
}

/// `y[j] = dl·(v[j] + δ)` for the 8 values of IQ1 grid entry `entry` (values −1, 0, 1).
fn iq1_8(y8: &mut [f32], entry: usize, dl: f32, delta: f32) {
    for (j, y) in y8.iter_mut().take(8).enumerate() {
        let v = grid_code(&IQ1S_GRID, entry, j, 2) as f32 - 1.0;
        *y = dl * (v + delta);
    }
}

/// IQ1_S: `d`, 32 low index bytes, then per sub-block of 32 a u16 of high index bits (3 per 8
/// elements), 3-bit scale (bits 12..15) and the shift's sign (bit 15).
pub(crate) fn iq1_s(b: &[u8; 50], y: &mut [f32; 256]) {
    let d = f16_at(b, 0);
    for (s, ys) in y.chunks_exact_mut(32).enumerate() {
        let qh = u16_at(b, 34 + 2 * s);
        let dl = d * (2 * ((qh >> 12) & 7) + 1) as f32;
        let delta = if qh & 0x8000 == 0 { IQ1_DELTA } else { -IQ1_DELTA };
        for (l, y8) in ys.chunks_exact_mut(8).enumerate() {
            let entry = usize::from(b[2 + 4 * s + l]) | (((qh >> (3 * l)) & 7) as usize) << 8;
            iq1_8(y8, entry, dl, delta);
        }
    }
}

/// IQ1_M: 32 low index bytes, 16 bytes of high index bits and shift signs (a nibble per 8
/// elements), four u16 of 3-bit scales (per 16 elements) whose top nibbles make the f16 `d`.
pub(crate) fn iq1_m(b: &[u8; 56], y: &mut [f32; 256]) {
    let sc: [u32; 4] = std::array::from_fn(|k| u16_at(b, 48 + 2 * k));
    let bits = (sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000);
    let d = half::f16::from_bits(bits as u16).to_f32();
    for (i, y8) in y.chunks_exact_mut(8).enumerate() {
        let nib = (b[32 + i / 2] >> (4 * (i % 2))) & 0x0f;
        let entry = usize::from(b[i]) | usize::from(nib & 7) << 8;
        let k = i / 2;
        let s = (sc[k / 4] >> (3 * (k % 4))) & 7;
        let dl = d * (2 * s + 1) as f32;
        let delta = if nib & 8 == 0 { IQ1_DELTA } else { -IQ1_DELTA };
        iq1_8(y8, entry, dl, delta);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ksigns_make_an_even_count_of_minus_signs() {
        for i in 0..128 {
            assert_eq!(ksigns(i).count_ones() % 2, 0, "{i}");
            assert_eq!(ksigns(i) & 0x7f, i);
        }
        assert_eq!(ksigns(1), 0x81);
        assert_eq!(ksigns(3), 3);
    }

    #[test]
    fn iq1_m_assembles_its_scale_from_four_nibbles() {
        // d = 1.0 (0x3c00): nibbles 0, 0, c, 3 from scale words 0..4 (top nibble each).
        let mut b = [0u8; 56];
        for (k, nib) in [0x0u16, 0x0, 0xc, 0x3].into_iter().enumerate() {
            b[48 + 2 * k..50 + 2 * k].copy_from_slice(&(nib << 12).to_le_bytes());
        }
        let mut y = [0f32; 256];
        iq1_m(&b, &mut y);
        // Entry 0, scale 0 → dl = 1, shift +1/8: grid entry 0's first value plus 0.125.
        let v0 = grid_code(&IQ1S_GRID, 0, 0, 2) as f32 - 1.0;
        assert_eq!(y[0], v0 + 0.125);
    }
}
