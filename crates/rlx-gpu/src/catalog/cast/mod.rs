//! Kernel family "cast": conversions from or to the packed dtypes, f16, bf16 (two to a 32-bit
//! word) and u8 (four to a word), against every stored dtype (`kernels/cast/cast.wgsl`). One variant
//! per ordered pair, `cast_<from>_<to>`, keyed by [`CastFn`]; casts between the 32-bit dtypes
//! stay with the unary kernel ([`super::elementwise::UnaryFn`]). Its params: [`CastParams`].

use super::{name, params_of, upper, Spec, IN_OUT};
use crate::grid::{self, fits_u32};
use crate::GpuError;
use bytemuck::{Pod, Zeroable};
use rlx_ir::DType;
use std::borrow::Cow;

const CAST_SRC: &str = flat_kernel!("cast/cast.wgsl", "include/float_narrow.wgsl");

/// Threads per workgroup of the cast kernel; each writes one output word.
const WG: u32 = 256;

/// Every pair with a packed side, in a fixed order: the variants of this family.
const PAIRS: [(DType, DType); 30] = [
    (DType::F16, DType::F32),
    (DType::F16, DType::BF16),
    (DType::F16, DType::I32),
    (DType::F16, DType::U32),
    (DType::F16, DType::U8),
    (DType::F16, DType::Bool),
    (DType::BF16, DType::F32),
    (DType::BF16, DType::F16),
    (DType::BF16, DType::I32),
    (DType::BF16, DType::U32),
    (DType::BF16, DType::U8),
    (DType::BF16, DType::Bool),
    (DType::U8, DType::F32),
    (DType::U8, DType::F16),
    (DType::U8, DType::BF16),
    (DType::U8, DType::I32),
    (DType::U8, DType::U32),
    (DType::U8, DType::Bool),
    (DType::F32, DType::F16),
    (DType::I32, DType::F16),
    (DType::U32, DType::F16),
    (DType::Bool, DType::F16),
    (DType::F32, DType::BF16),
    (DType::I32, DType::BF16),
    (DType::U32, DType::BF16),
    (DType::Bool, DType::BF16),
    (DType::F32, DType::U8),
    (DType::I32, DType::U8),
    (DType::U32, DType::U8),
    (DType::Bool, DType::U8),
];

/// The WGSL constant of a dtype in `cast.wgsl` (`D_F16`, …).
fn constant(t: DType) -> Cow<'static, str> {
    upper("D_", t.name())
}

/// Which cast the kernel computes: an ordered pair of different dtypes, at least one of them
/// packed (f16, bf16 or u8). Made only by [`CastFn::new`] and [`CastFn::all`], so every value
/// has a variant.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CastFn {
    /// Position in the variants table.
    index: u8,
}

impl CastFn {
    /// The cast kernel converting `from` to `to`, or `None` for a pair it does not handle (the
    /// same dtype, or two 32-bit dtypes: the unary kernel's casts).
    pub fn new(from: DType, to: DType) -> Option<CastFn> {
        PAIRS.iter().position(|&p| p == (from, to)).map(|i| CastFn { index: i as u8 })
    }

    /// The first cast of the table (f16 → f32).
    pub(crate) const FIRST: CastFn = CastFn { index: 0 };

    /// Every cast of the family, in table order.
    pub fn all() -> impl Iterator<Item = CastFn> {
        (0..PAIRS.len()).map(|i| CastFn { index: i as u8 })
    }

    fn pair(self) -> (DType, DType) {
        // `index` comes from a position in PAIRS (see `new` and `all`).
        PAIRS[usize::from(self.index)]
    }

    pub fn from(self) -> DType {
        self.pair().0
    }

    pub fn to(self) -> DType {
        self.pair().1
    }
}

impl std::fmt::Debug for CastFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CastFn({} → {})", self.from(), self.to())
    }
}

/// The variant computing `f` ([`CastParams`]).
pub(crate) fn spec(f: CastFn) -> Spec {
    let (from, to) = f.pair();
    let parts =
        (name(&["cast", from.name(), to.name()]), vec![("FROM", constant(from)), ("TO", constant(to))]);
    Spec::wg256(parts, "kernels/cast/cast.wgsl", CAST_SRC, IN_OUT, params_of::<CastParams>())
}

/// Params of `cast.wgsl`: `numel` elements of `x` converted into `words` packed output words.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct CastParams {
    pub numel: u32,
    pub words: u32,
    pub _pad: [u32; 2],
}

impl CastParams {
    /// Params for casting `numel` elements to `to`, and the workgroup counts (one thread per
    /// output word).
    pub fn new(numel: usize, to: DType) -> Result<(Self, [u32; 3]), GpuError> {
        const K: &str = "cast";
        let per = 4 / crate::convert::stored_size(to).max(1);
        let words = (numel as u64).div_ceil(per);
        // Element indices run up to words · per − 1, which must fit the kernel's u32.
        fits_u32(K, "element count", words * per)?;
        let n = fits_u32(K, "element count", numel as u64)?;
        let (words, groups) = (words as u32, words.div_ceil(u64::from(WG)));
        Ok((CastParams { numel: n, words, _pad: [0; 2] }, grid::linear(K, groups, WG)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    const PACKED: [DType; 3] = [DType::F16, DType::BF16, DType::U8];

    #[test]
    fn every_pair_with_a_packed_side_has_one_variant() {
        let mut seen = HashSet::new();
        for from in DType::ALL {
            for to in DType::ALL {
                let handled = from != to && (PACKED.contains(&from) || PACKED.contains(&to));
                match CastFn::new(from, to) {
                    Some(f) => {
                        assert!(handled, "{from} → {to}");
                        assert_eq!((f.from(), f.to()), (from, to));
                        assert_eq!(spec(f).name, format!("cast_{from}_{to}"));
                        assert!(seen.insert(spec(f).name));
                    }
                    None => assert!(!handled, "{from} → {to} has no variant"),
                }
            }
        }
        assert_eq!(seen.len(), PAIRS.len());
        assert_eq!(CastFn::all().count(), 30);
        assert_eq!(format!("{:?}", CastFn::new(DType::U8, DType::Bool).unwrap()), "CastFn(u8 → bool)");
    }

    #[test]
    fn defines_name_the_pair() {
        for f in CastFn::all() {
            let s = spec(f);
            let get = |k: &str| s.defines.iter().find(|(d, _)| *d == k).map(|(_, v)| v.to_ascii_lowercase());
            let name = format!("cast_{}_{}", &get("FROM").unwrap()[2..], &get("TO").unwrap()[2..]);
            assert_eq!(name, s.name);
        }
    }

    #[test]
    fn one_thread_per_output_word() {
        let (p, grid) = CastParams::new(7, DType::U8).unwrap();
        assert_eq!((p.numel, p.words, grid), (7, 2, [1, 1, 1]));
        let (p, _) = CastParams::new(7, DType::F16).unwrap();
        assert_eq!(p.words, 4);
        let (p, grid) = CastParams::new(1025, DType::F32).unwrap();
        assert_eq!((p.words, grid), (1025, [5, 1, 1]));
        let (p, grid) = CastParams::new(0, DType::BF16).unwrap();
        assert_eq!((p.words, grid), (0, [0, 1, 1]));
        assert!(CastParams::new(u32::MAX as usize, DType::U8).is_err());
    }
}
