//! Seeded test data: one generator for every suite.

use rlx_ir::{f16_from_f64, DType, IrError, QuantType, Tensor, TensorType};

/// splitmix64: tiny, dependency-free, and good enough for test data. The same seed gives the
/// same stream everywhere.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A stream seeded by `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// A stream seeded by the FNV-1a hash of `name` (a test or case name).
    pub fn from_name(name: &str) -> Rng {
        Rng(seed_of(name))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1) with 24 random bits (every value exact in f32).
    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Uniform in [lo, hi).
    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.unit()
    }

    /// `n` values uniform in [lo, hi).
    pub fn uniform(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n).map(|_| self.range(lo, hi)).collect()
    }

    /// Uniform in [0, n) (0 when n = 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// An integer uniform in [lo, hi] (inclusive).
    pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
        let span = (hi as i128 - lo as i128 + 1).max(1) as u128;
        (lo as i128 + (self.next_u64() as u128 % span) as i128) as i64
    }

    /// True with probability 1/2.
    pub fn bool(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }
}

/// FNV-1a of `name`: a seed from a name.
pub fn seed_of(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// `n` values uniform in [−scale, scale), seeded by `seed`.
pub fn uniform(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    Rng::new(seed).uniform(n, -scale, scale)
}

/// A tensor of `ty` drawn from `rng`: floats uniform in [−1, 1), integers in [0, 4) (valid
/// indices into small tables; ties and equal pairs occur), bools half true.
pub fn random_tensor(rng: &mut Rng, ty: &TensorType) -> Result<Tensor, IrError> {
    let n = ty.numel();
    let v: Vec<f64> = (0..n)
        .map(|_| match ty.dtype {
            DType::F32 | DType::F16 | DType::BF16 => f64::from(rng.range(-1.0, 1.0)),
            DType::I32 | DType::U32 | DType::U8 => rng.below(4) as f64,
            DType::Bool => rng.below(2) as f64,
        })
        .collect();
    Tensor::from_f64(ty.shape.clone(), ty.dtype, &v)
}

/// `blocks` random but valid blocks of `ty`, back to back: every byte uniform except the
/// scales, which are finite, of either sign, with magnitudes in [scale / 4, scale) (so decoded
/// values stay in a range f32 sums handle without overflow): the f16 scales
/// ([`QuantType::f16_offsets`]), the fp8 formats' f32 scale and nvfp4's e4m3 micro-block scales
/// (rounded to e4m3), IQ1_M's d spread over its scale words. The fp8 codes are drawn from the finite ones (NaN and inf codes are
/// redrawn as their neighbours), so a block decodes to finite values only.
pub fn quant_blocks(rng: &mut Rng, ty: QuantType, blocks: usize, scale: f32) -> Vec<u8> {
    let mut bytes: Vec<u8> = (0..blocks * ty.block_bytes()).map(|_| rng.next_u64() as u8).collect();
    let draw = |rng: &mut Rng| {
        let sign = if rng.bool() { -1.0 } else { 1.0 };
        sign * rng.range(scale / 4.0, scale)
    };
    for block in bytes.chunks_exact_mut(ty.block_bytes()) {
        for &at in ty.f16_offsets() {
            let d = f16_from_f64(f64::from(draw(rng)));
            block[at..at + 2].copy_from_slice(&d.to_bits().to_le_bytes());
        }
        match ty {
            QuantType::Fp8E4M3 | QuantType::Fp8E5M2 => {
                block[..4].copy_from_slice(&draw(rng).to_le_bytes());
                let e4m3 = ty == QuantType::Fp8E4M3;
                for q in &mut block[4..] {
                    if e4m3 && *q & 0x7f == 0x7f {
                        *q ^= 1;
                    } else if !e4m3 && *q & 0x7c == 0x7c {
                        *q &= !0x40;
                    }
                }
            }
            QuantType::NvFp4 => {
                for s in &mut block[..4] {
                    *s = rlx_ir::minifloat::f32_to_e4m3(draw(rng));
                }
            }
            QuantType::IQ1M => {
                let d = f16_from_f64(f64::from(draw(rng)));
                rlx_ir::iq1m_write_d(block, d.to_bits());
            }
            _ => {}
        }
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_other_seed_other_stream() {
        assert_eq!(uniform(64, 7, 1.0), uniform(64, 7, 1.0));
        assert_ne!(uniform(64, 7, 1.0), uniform(64, 8, 1.0));
        let v = uniform(1000, 3, 2.5);
        assert!(v.iter().all(|&x| (-2.5..2.5).contains(&x)));
        // A spread, not one value repeated.
        let (lo, hi) = v.iter().fold((f32::MAX, f32::MIN), |(l, h), &x| (l.min(x), h.max(x)));
        assert!(lo < -2.0 && hi > 2.0, "{lo}..{hi}");
        assert_eq!(Rng::from_name("a").next_u64(), Rng::new(seed_of("a")).next_u64());
        assert_ne!(seed_of("case_a"), seed_of("case_b"));
    }

    #[test]
    fn ints_stay_in_their_inclusive_range_and_reach_both_ends() {
        let mut r = Rng::new(1);
        let v: Vec<i64> = (0..500).map(|_| r.int(-3, 3)).collect();
        assert!(v.iter().all(|x| (-3..=3).contains(x)));
        assert!(v.contains(&-3) && v.contains(&3));
        let full: Vec<i64> = (0..100).map(|_| r.int(i32::MIN as i64, i32::MAX as i64)).collect();
        assert!(full.iter().any(|&x| x < -1_000_000_000) && full.iter().any(|&x| x > 1_000_000_000));
    }

    #[test]
    fn random_tensors_fit_their_type() {
        let mut r = Rng::new(5);
        for dtype in [DType::F32, DType::I32, DType::U32, DType::Bool] {
            let ty = TensorType::new([3, 4], dtype);
            let t = random_tensor(&mut r, &ty).unwrap();
            assert_eq!((t.dtype(), t.dims()), (dtype, &[3usize, 4][..]));
            let v = t.data().to_f64_vec();
            assert!(v.iter().any(|&x| x != v[0]), "{dtype}: all equal {v:?}");
        }
    }

    #[test]
    fn quant_blocks_have_finite_scales_where_the_format_keeps_them() {
        let mut r = Rng::new(9);
        for ty in QuantType::ALL {
            let b = quant_blocks(&mut r, ty, 3, 0.5);
            assert_eq!(b.len(), 3 * ty.block_bytes());
            for block in b.chunks_exact(ty.block_bytes()) {
                for &at in ty.f16_offsets() {
                    let bits = u16::from_le_bytes([block[at], block[at + 1]]);
                    assert!(bits & 0x7c00 != 0x7c00, "{ty}: non-finite scale {bits:#x}");
                    assert!(bits & 0x7fff != 0, "{ty}: zero scale");
                }
                match ty {
                    QuantType::Fp8E4M3 => assert!(block[4..].iter().all(|q| q & 0x7f != 0x7f), "{ty}"),
                    QuantType::Fp8E5M2 => assert!(block[4..].iter().all(|q| q & 0x7c != 0x7c), "{ty}"),
                    QuantType::NvFp4 => {
                        let s: Vec<f32> =
                            block[..4].iter().map(|&c| rlx_ir::minifloat::e4m3_to_f32(c)).collect();
                        assert!(s.iter().all(|v| (0.1..=0.5).contains(&v.abs())), "{ty}: scales {s:?}");
                    }
                    _ => {}
                }
                if matches!(ty, QuantType::Fp8E4M3 | QuantType::Fp8E5M2) {
                    let s = f32::from_le_bytes([block[0], block[1], block[2], block[3]]);
                    assert!((0.125..0.5).contains(&s.abs()), "{ty}: scale {s}");
                }
            }
        }
    }
}
