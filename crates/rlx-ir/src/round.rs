//! Rounding an f64 to the 16-bit floats, correctly (to nearest, ties to even) on every machine.
//!
//! Why not `half`'s `from_f64`: on x86 with F16C, `f16::from_f64` rounds to f32 first and then
//! to f16, and `bf16::from_f64` drops the low 32 bits of the f64 before rounding. Both round
//! twice, so a value just past a tie (an i32 like 2^24 + 2^16 + 1 going to bf16) can come out
//! one unit low, and the f16 result depends on the machine's CPU features. Casts are a
//! rounding rule every backend must reproduce bit for bit, so the reference rounds once.
//!
//! How: round the f64 to f32 *to odd* (truncate toward zero, then set the last bit if anything
//! was dropped), then to the 16-bit format to nearest even. Rounding to odd at a precision at
//! least two bits wider than the target never changes the final result (Boldo and Melquiond,
//! "Emulation of FMA and correctly rounded sums: proved algorithms using rounding to odd",
//! 2008), and f32 has 24 significant bits against f16's 11 and bf16's 8, subnormals included.
//! `half`'s `from_f32` conversions round once, to nearest even.

use half::{bf16, f16};

/// `x` rounded to f32 to odd: toward zero, with the lowest significand bit set when the result
/// is inexact. NaN stays NaN; infinities stay infinite; finite values past f32's range become
/// ±f32::MAX with the odd bit (which rounds on to infinity in every narrower format).
fn f32_round_to_odd(x: f64) -> f32 {
    let nearest = x as f32;
    if x.is_nan() || f64::from(nearest) == x {
        return nearest;
    }
    // Step back toward zero when rounding to nearest went away from it (an infinity included:
    // its magnitude minus one is f32::MAX).
    let mut bits = nearest.to_bits();
    if f64::from(nearest).abs() > x.abs() {
        bits -= 1;
    }
    f32::from_bits(bits | 1)
}

/// `x` as f16, rounded once to nearest even (overflow to ±inf, NaN to a quiet NaN).
pub fn f16_from_f64(x: f64) -> f16 {
    f16::from_f32(f32_round_to_odd(x))
}

/// `x` as bf16, rounded once to nearest even (overflow to ±inf, NaN to a quiet NaN).
pub fn bf16_from_f64(x: f64) -> bf16 {
    bf16::from_f32(f32_round_to_odd(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Exact reference: the nearest of the two bf16 neighbours of an integer, ties to even.
    fn bf16_of_int(v: i64) -> u16 {
        let m = v.unsigned_abs();
        if m < 256 {
            return bf16::from_f32(v as f32).to_bits();
        }
        let shift = 64 - m.leading_zeros() - 8;
        let (q, rem, half) = (m >> shift, m & ((1 << shift) - 1), 1u64 << (shift - 1));
        let q = if rem > half || (rem == half && q & 1 == 1) { q + 1 } else { q };
        let r = (q << shift) as f32;
        bf16::from_f32(if v < 0 { -r } else { r }).to_bits()
    }

    #[test]
    fn ints_round_once_to_bf16() {
        // 2^24 + 2^16 + 1 is just past a bf16 tie; through f32 it becomes the tie and rounds down.
        let v = (1i64 << 24) + (1 << 16) + 1;
        assert_eq!(bf16_from_f64(v as f64).to_bits(), bf16_of_int(v));
        assert_eq!(bf16_from_f64(v as f64).to_f32(), ((1 << 24) + (1 << 17)) as f32);
        for v in [i32::MIN as i64, -16_777_217, -257, -1, 0, 255, 257, 383, 384, 16_777_217, i32::MAX as i64]
        {
            assert_eq!(bf16_from_f64(v as f64).to_bits(), bf16_of_int(v), "{v}");
        }
        for v in (0..200_000i64).map(|i| i * 21_467 + (i & 7)) {
            assert_eq!(bf16_from_f64(v as f64).to_bits(), bf16_of_int(v), "{v}");
        }
    }

    #[test]
    fn f32_values_round_like_half_from_f32() {
        let specials = [0.0f32, -0.0, 1.0, 65504.0, 65519.99, 65520.0, 1e-8, 6e-8, 3e-8, 1e-40, f32::MAX];
        let sweep =
            (0..100_000u32).map(|i| f32::from_bits(i.wrapping_mul(42_949) ^ 0x5555)).filter(|x| !x.is_nan());
        for x in specials.into_iter().chain(sweep) {
            for v in [x, -x] {
                let (h, b) = (f16_from_f64(v as f64), bf16_from_f64(v as f64));
                assert_eq!(h.to_bits(), f16::from_f32(v).to_bits(), "{v:e}");
                assert_eq!(b.to_bits(), bf16::from_f32(v).to_bits(), "{v:e}");
            }
        }
    }

    #[test]
    fn specials_and_overflow() {
        assert!(f16_from_f64(f64::NAN).is_nan() && bf16_from_f64(f64::NAN).is_nan());
        assert_eq!(f16_from_f64(f64::INFINITY), f16::INFINITY);
        assert_eq!(bf16_from_f64(f64::NEG_INFINITY), bf16::NEG_INFINITY);
        assert_eq!(f16_from_f64(1e300), f16::INFINITY);
        assert_eq!(bf16_from_f64(-1e300), bf16::NEG_INFINITY);
        assert_eq!(bf16_from_f64(1e-300).to_bits(), 0);
        assert_eq!(f16_from_f64(-1e-300).to_bits(), 0x8000);
        // Just above half of f16's smallest subnormal rounds up to it; exactly half rounds to 0.
        assert_eq!(f16_from_f64(2f64.powi(-25) * (1.0 + 1e-12)).to_bits(), 1);
        assert_eq!(f16_from_f64(2f64.powi(-25)).to_bits(), 0);
    }
}
