//! The small floats of the fp8 and nvfp4 block formats ([`crate::QuantType::Fp8E4M3`],
//! [`crate::QuantType::Fp8E5M2`], [`crate::QuantType::NvFp4`]): exact decoding to f32 and
//! encoding from f32, rounded once to nearest (ties to even), saturating.
//!
//! - e4m3 (OCP "e4m3fn"): sign, 4 exponent bits (bias 7), 3 mantissa bits. No infinities;
//!   S.1111.111 is NaN; the largest finite magnitude is 448 (S.1111.110); subnormals are
//!   `m · 2⁻⁹`.
//! - e5m2: sign, 5 exponent bits (bias 15), 2 mantissa bits, as IEEE: S.11111.00 is ±inf,
//!   S.11111.xx with xx ≠ 0 NaN, the largest finite magnitude 57344; subnormals `m · 2⁻¹⁶`.
//! - e2m1 (4 bits): sign (bit 3), 2 exponent bits (bias 1), 1 mantissa bit: ±{0, 0.5, 1, 1.5,
//!   2, 3, 4, 6}. No infinities and no NaN.
//!
//! Encoding a finite value past the largest magnitude gives the largest magnitude (with its
//! sign), never an infinity or NaN: the quantizers scale blocks so that only a rounding step
//! can overshoot. `-0.0` keeps its sign.

/// Geometry of one small float.
#[derive(Clone, Copy)]
struct Mini {
    man_bits: u32,
    bias: i32,
    /// The largest finite code magnitude (sign bit clear).
    max_code: u32,
    sign_bit: u32,
}

const E4M3: Mini = Mini { man_bits: 3, bias: 7, max_code: 0x7e, sign_bit: 0x80 };
const E5M2: Mini = Mini { man_bits: 2, bias: 15, max_code: 0x7b, sign_bit: 0x80 };
const E2M1: Mini = Mini { man_bits: 1, bias: 1, max_code: 0x7, sign_bit: 0x8 };

/// The e4m3 NaN code (positive sign).
pub const E4M3_NAN: u8 = 0x7f;
/// The largest finite e4m3 magnitude.
pub const E4M3_MAX: f32 = 448.0;
/// The largest finite e5m2 magnitude.
pub const E5M2_MAX: f32 = 57344.0;
/// The largest e2m1 magnitude.
pub const E2M1_MAX: f32 = 6.0;

impl Mini {
    /// The code of finite `x`, rounded to nearest even and saturated.
    fn encode_finite(self, x: f32) -> u32 {
        let sign = if x.is_sign_negative() { self.sign_bit } else { 0 };
        let a = f64::from(x.abs());
        let man = self.man_bits as i32;
        // Below the smallest normal, codes count subnormal steps; the step count 2^man that
        // rounding may reach is exactly the smallest normal's code.
        let min_normal = 2f64.powi(1 - self.bias);
        let mag = if a < min_normal {
            (a / 2f64.powi(1 - self.bias - man)).round_ties_even() as u32
        } else {
            // a is a normal f64 (every finite f32 is), so its exponent field is the binade.
            let e = ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023;
            let frac = a / 2f64.powi(e) - 1.0;
            let mq = (frac * 2f64.powi(man)).round_ties_even() as u32;
            // A mantissa that rounds up to 2^man carries into the exponent by the addition.
            let biased = (e + self.bias).min(64) as u32;
            (biased << self.man_bits).saturating_add(mq)
        };
        sign | mag.min(self.max_code)
    }

    /// The value of a code whose exponent field is not the all-ones special of e5m2 (or which
    /// is e4m3's or e2m1's finite top binade).
    fn decode_finite(self, code: u32) -> f32 {
        let man = code & ((1 << self.man_bits) - 1);
        let exp = (code & (self.sign_bit - 1)) >> self.man_bits;
        let mag = if exp == 0 {
            f64::from(man) * 2f64.powi(1 - self.bias - self.man_bits as i32)
        } else {
            (1.0 + f64::from(man) / 2f64.powi(self.man_bits as i32)) * 2f64.powi(exp as i32 - self.bias)
        };
        // Every code's value is exact in f32.
        let v = mag as f32;
        if code & self.sign_bit != 0 {
            -v
        } else {
            v
        }
    }
}

/// `x` as e4m3 (round to nearest even, saturating to ±448; NaN and ±inf become the NaN code,
/// e4m3 having no infinities — as torch's cast to `float8_e4m3fn` makes them NaN).
pub fn f32_to_e4m3(x: f32) -> u8 {
    if !x.is_finite() {
        let sign = if x.is_sign_negative() { 0x80 } else { 0 };
        return E4M3_NAN | sign;
    }
    E4M3.encode_finite(x) as u8
}

/// The value of e4m3 code `c` (exact; S.1111.111 is NaN).
pub fn e4m3_to_f32(c: u8) -> f32 {
    if c & 0x7f == 0x7f {
        return f32::NAN;
    }
    E4M3.decode_finite(u32::from(c))
}

/// `x` as e5m2 (round to nearest even; finite values saturate to ±57344; ±inf stay ±inf; NaN
/// becomes the quiet NaN code 0x7e).
pub fn f32_to_e5m2(x: f32) -> u8 {
    if x.is_nan() {
        return 0x7e;
    }
    if x.is_infinite() {
        return if x < 0.0 { 0xfc } else { 0x7c };
    }
    E5M2.encode_finite(x) as u8
}

/// The value of e5m2 code `c` (exact; ±inf and NaN as IEEE).
pub fn e5m2_to_f32(c: u8) -> f32 {
    match c & 0x7f {
        0x7c => {
            if c & 0x80 != 0 {
                f32::NEG_INFINITY
            } else {
                f32::INFINITY
            }
        }
        0x7d..=0x7f => f32::NAN,
        _ => E5M2.decode_finite(u32::from(c)),
    }
}

/// `x` as an e2m1 code in the low 4 bits (round to nearest even, saturating to ±6). `None` for
/// NaN and ±inf, which e2m1 cannot hold.
pub fn f32_to_e2m1(x: f32) -> Option<u8> {
    x.is_finite().then(|| E2M1.encode_finite(x) as u8)
}

/// The value of the e2m1 code in the low 4 bits of `c` (the high bits are ignored).
pub fn e2m1_to_f32(c: u8) -> f32 {
    E2M1.decode_finite(u32::from(c & 0xf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_round_trips() {
        for c in 0..=255u8 {
            let v = e4m3_to_f32(c);
            if v.is_nan() {
                assert_eq!(c & 0x7f, 0x7f);
            } else {
                assert_eq!(f32_to_e4m3(v), c, "e4m3 {c:#x} = {v}");
            }
            let v = e5m2_to_f32(c);
            if v.is_nan() {
                assert!(c & 0x7f > 0x7c, "{c:#x}");
            } else {
                assert_eq!(f32_to_e5m2(v), c, "e5m2 {c:#x} = {v}");
            }
        }
        for c in 0..16u8 {
            assert_eq!(f32_to_e2m1(e2m1_to_f32(c)), Some(c), "e2m1 {c:#x}");
        }
    }

    #[test]
    fn known_values() {
        assert_eq!(e4m3_to_f32(0x7e), 448.0);
        assert_eq!(e4m3_to_f32(0x01), 2f32.powi(-9));
        assert_eq!(e4m3_to_f32(0x38), 1.0);
        assert_eq!(e4m3_to_f32(0xc0), -2.0);
        assert_eq!(e5m2_to_f32(0x7b), 57344.0);
        assert_eq!(e5m2_to_f32(0x01), 2f32.powi(-16));
        assert_eq!(e5m2_to_f32(0x3c), 1.0);
        assert_eq!(e5m2_to_f32(0xfc), f32::NEG_INFINITY);
        let e2m1: Vec<f32> = (0..8).map(e2m1_to_f32).collect();
        assert_eq!(e2m1, [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]);
        assert_eq!(e2m1_to_f32(0xb), -1.5);
    }

    #[test]
    fn rounding_is_to_nearest_even_and_saturating() {
        // 1.0625 is halfway between e4m3's 1.0 and 1.125: ties go to the even mantissa (1.0).
        assert_eq!(e4m3_to_f32(f32_to_e4m3(1.0625)), 1.0);
        assert_eq!(e4m3_to_f32(f32_to_e4m3(1.1875)), 1.25);
        assert_eq!(e4m3_to_f32(f32_to_e4m3(1.07)), 1.125);
        assert_eq!(e4m3_to_f32(f32_to_e4m3(470.0)), 448.0);
        assert_eq!(e4m3_to_f32(f32_to_e4m3(-1e30)), -448.0);
        assert_eq!(e5m2_to_f32(f32_to_e5m2(1e9)), 57344.0);
        // Subnormal e4m3: 2.5 steps of 2^-9 round to 2 steps; 1.5 to 2.
        assert_eq!(f32_to_e4m3(2.5 * 2f32.powi(-9)), 0x02);
        assert_eq!(f32_to_e4m3(1.5 * 2f32.powi(-9)), 0x02);
        assert_eq!(f32_to_e4m3(1e-6), 0x00);
        assert_eq!(f32_to_e4m3(-0.0), 0x80);
        // e2m1: 2.5 ties to 2 (even), 5 ties to 4, 0.25 ties to 0, 0.75 to 1.
        let round = |x| f32_to_e2m1(x).map(e2m1_to_f32);
        assert_eq!(
            [round(2.5), round(5.0), round(0.25), round(0.75)],
            [Some(2.0), Some(4.0), Some(0.0), Some(1.0)]
        );
        assert_eq!(round(-100.0), Some(-6.0));
        assert_eq!(f32_to_e2m1(f32::NAN), None);
    }

    #[test]
    fn non_finite_inputs() {
        assert!(e4m3_to_f32(f32_to_e4m3(f32::NAN)).is_nan());
        assert!(e4m3_to_f32(f32_to_e4m3(f32::INFINITY)).is_nan());
        assert!(e5m2_to_f32(f32_to_e5m2(f32::NAN)).is_nan());
        assert_eq!(e5m2_to_f32(f32_to_e5m2(f32::NEG_INFINITY)), f32::NEG_INFINITY);
    }
}
