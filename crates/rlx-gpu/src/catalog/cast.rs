//! Kernel family "cast": conversions from or to the packed dtypes, f16, bf16 (two to a 32-bit
//! word) and u8 (four to a word), against every stored dtype (`kernels/cast/cast.wgsl`). One variant
//! per ordered pair, `cast_<from>_<to>`, keyed by [`CastFn`]; casts between the 32-bit dtypes
//! stay with the unary kernel ([`super::elementwise::UnaryFn`]). Its params: [`CastParams`].

use super::{size_of, Defines, Spec, IN_OUT};
use crate::grid::{self, fits_u32};
use crate::GpuError;
use bytemuck::{Pod, Zeroable};
use rlx_ir::DType;

const CAST_SRC: &str = include_str!("../../kernels/cast/cast.wgsl");

/// Threads per workgroup of the cast kernel; each writes one output word.
const WG: u32 = 256;

/// One variant: the pair it converts, its name and its `FROM`/`TO` defines.
struct Entry {
    from: DType,
    to: DType,
    name: &'static str,
    defines: Defines,
}

/// The name part and the WGSL constant of each dtype.
#[rustfmt::skip]
macro_rules! part {
    (F32) => { "f32" }; (F16) => { "f16" }; (BF16) => { "bf16" }; (I32) => { "i32" };
    (U32) => { "u32" }; (U8) => { "u8" }; (Bool) => { "bool" };
}

#[rustfmt::skip]
macro_rules! constant {
    (F32) => { "D_F32" }; (F16) => { "D_F16" }; (BF16) => { "D_BF16" }; (I32) => { "D_I32" };
    (U32) => { "D_U32" }; (U8) => { "D_U8" }; (Bool) => { "D_BOOL" };
}

macro_rules! pair {
    ($from:ident => $to:ident) => {
        Entry {
            from: DType::$from,
            to: DType::$to,
            name: concat!("cast_", part!($from), "_", part!($to)),
            defines: &[("FROM", constant!($from)), ("TO", constant!($to))],
        }
    };
}

/// Every pair with a packed side, in a fixed order.
const PAIRS: [Entry; 30] = [
    pair!(F16 => F32),
    pair!(F16 => BF16),
    pair!(F16 => I32),
    pair!(F16 => U32),
    pair!(F16 => U8),
    pair!(F16 => Bool),
    pair!(BF16 => F32),
    pair!(BF16 => F16),
    pair!(BF16 => I32),
    pair!(BF16 => U32),
    pair!(BF16 => U8),
    pair!(BF16 => Bool),
    pair!(U8 => F32),
    pair!(U8 => F16),
    pair!(U8 => BF16),
    pair!(U8 => I32),
    pair!(U8 => U32),
    pair!(U8 => Bool),
    pair!(F32 => F16),
    pair!(I32 => F16),
    pair!(U32 => F16),
    pair!(Bool => F16),
    pair!(F32 => BF16),
    pair!(I32 => BF16),
    pair!(U32 => BF16),
    pair!(Bool => BF16),
    pair!(F32 => U8),
    pair!(I32 => U8),
    pair!(U32 => U8),
    pair!(Bool => U8),
];

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
        PAIRS.iter().position(|e| (e.from, e.to) == (from, to)).map(|i| CastFn { index: i as u8 })
    }

    /// Every cast of the family, in table order.
    pub fn all() -> impl Iterator<Item = CastFn> {
        (0..PAIRS.len()).map(|i| CastFn { index: i as u8 })
    }

    fn entry(self) -> &'static Entry {
        // `index` comes from a position in PAIRS (see `new` and `all`).
        &PAIRS[usize::from(self.index)]
    }

    pub fn from(self) -> DType {
        self.entry().from
    }

    pub fn to(self) -> DType {
        self.entry().to
    }
}

impl std::fmt::Debug for CastFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CastFn({} → {})", self.from(), self.to())
    }
}

/// The variant computing `f` ([`CastParams`]).
pub(crate) fn spec(f: CastFn) -> Spec {
    let e = f.entry();
    Spec::wg256((e.name, e.defines), "kernels/cast/cast.wgsl", CAST_SRC, IN_OUT, size_of::<CastParams>())
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
