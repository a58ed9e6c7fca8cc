//! Kernel family "elementwise": one broadcasting binary kernel (`binary.wgsl`: arithmetic and
//! comparisons) and one contiguous unary kernel (`unary.wgsl`: f32 math, casts, i32 neg/abs),
//! each with variants by op × dtype, and where (`where.wgsl`). Their f32 math is
//! `include/ew_math.wgsl`'s, which the kernels generated for fused programs (`lower/fused.rs`)
//! share. Its keys ([`ElementwiseKernel`]),
//! variants and params structs ([`params`]).
//!
//! Both kernels move 32-bit words (`array<u32>` bindings) and reinterpret them with `bitcast`
//! where the dtype matters, so one source serves f32, i32, u32 and Bool (a u32 0/1 word).

pub mod params;
#[cfg(test)]
mod params_tests;

use super::{name, params_of, upper, Spec, WordType, IN2_OUT, IN3_OUT, IN_OUT};
use params::{BinaryParams, UnaryParams, WhereParams};
use rlx_ir::{BinaryOp, CompareOp, UnaryOp};
use std::borrow::Cow;

const BINARY_SRC: &str = flat_kernel!("elementwise/binary.wgsl", "include/ew_math.wgsl");
const UNARY_SRC: &str = flat_kernel!("elementwise/unary.wgsl", "include/ew_math.wgsl");
const WHERE_SRC: &str = flat_kernel!("elementwise/where.wgsl");

/// What the binary kernel computes. With [`WordType`] it picks a variant; every pair exists.
/// Arithmetic on f32 follows IEEE with PyTorch's NaN-propagating maximum/minimum and C's pow;
/// on integers it wraps, division truncates and x / 0 = 0. Comparisons give u32 0/1, NaN
/// compares unequal to everything.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryFn {
    Arith(BinaryOp),
    Compare(CompareOp),
}

impl BinaryFn {
    /// Every binary function, arithmetic first.
    pub fn all() -> impl Iterator<Item = BinaryFn> {
        BinaryOp::ALL
            .into_iter()
            .map(BinaryFn::Arith)
            .chain(CompareOp::ALL.into_iter().map(BinaryFn::Compare))
    }
}

/// What the unary kernel computes (one variant each). Casts follow rlx-cpu: floats round to
/// nearest even, integers truncate toward zero and saturate, NaN → 0; a cast to Bool is `!= 0`
/// (NaN is nonzero, −0 is zero). Casts from Bool use the U32 casts (its words are 0/1); casts
/// that keep the bits (same dtype, Bool → I32/U32) are copies and have no variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryFn {
    /// An f32 math op.
    F32(UnaryOp),
    CastF32ToI32,
    CastF32ToU32,
    CastI32ToF32,
    CastI32ToU32,
    CastU32ToF32,
    CastU32ToI32,
    /// f32 → Bool.
    NonzeroF32,
    /// I32 or U32 → Bool.
    NonzeroWord,
    /// Wrapping negation of i32.
    NegI32,
    /// Wrapping absolute value of i32 (|i32::MIN| = i32::MIN).
    AbsI32,
}

impl UnaryFn {
    /// The word maps: every [`UnaryFn`] but the f32 math ops.
    pub const MAPS: [UnaryFn; 10] = [
        UnaryFn::CastF32ToI32,
        UnaryFn::CastF32ToU32,
        UnaryFn::CastI32ToF32,
        UnaryFn::CastI32ToU32,
        UnaryFn::CastU32ToF32,
        UnaryFn::CastU32ToI32,
        UnaryFn::NonzeroF32,
        UnaryFn::NonzeroWord,
        UnaryFn::NegI32,
        UnaryFn::AbsI32,
    ];

    /// Every unary function, the f32 math ops first.
    pub fn all() -> impl Iterator<Item = UnaryFn> {
        UnaryOp::ALL.into_iter().map(UnaryFn::F32).chain(UnaryFn::MAPS)
    }
}

/// The kernels of this family. Where sits here, not with the shape kernels: it is a
/// broadcasting three-operand map (`where.wgsl`, [`WhereParams`]), one thread per output word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElementwiseKernel {
    /// Broadcasting binary op or comparison on one word type ([`BinaryParams`]).
    Binary(BinaryFn, WordType),
    /// Unary op on a contiguous tensor ([`UnaryParams`]).
    Unary(UnaryFn),
    /// `cond ? a : b`, all three broadcast, on words of any type ([`WhereParams`]).
    Where,
}

impl BinaryFn {
    /// The op part of the variant name and of the `OP` define.
    fn name(self) -> &'static str {
        match self {
            BinaryFn::Arith(op) => op.name(),
            BinaryFn::Compare(op) => op.name(),
        }
    }
}

impl UnaryFn {
    /// The op part of the variant name (`gelu_tanh_f32`, `cast_u32_f32`) and of the `OP`
    /// define, which names the op without the dtype for f32 math (`OP_GELU_TANH`).
    fn parts(self) -> (Cow<'static, str>, &'static str) {
        let op = match self {
            UnaryFn::F32(op) => return (name(&[op.name(), "f32"]), op.name()),
            UnaryFn::CastF32ToI32 => "cast_f32_i32",
            UnaryFn::CastF32ToU32 => "cast_f32_u32",
            UnaryFn::CastI32ToF32 => "cast_i32_f32",
            UnaryFn::CastI32ToU32 => "cast_i32_u32",
            UnaryFn::CastU32ToF32 => "cast_u32_f32",
            UnaryFn::CastU32ToI32 => "cast_u32_i32",
            UnaryFn::NonzeroF32 => "nonzero_f32",
            UnaryFn::NonzeroWord => "nonzero_word",
            UnaryFn::NegI32 => "neg_i32",
            UnaryFn::AbsI32 => "abs_i32",
        };
        (Cow::Borrowed(op), op)
    }

    /// The op part of the `OP` define (`gelu_tanh`, `cast_u32_f32`).
    pub(crate) fn op_name(self) -> &'static str {
        self.parts().1
    }
}

/// The variant of `k`.
pub(crate) fn spec(k: ElementwiseKernel) -> Spec {
    match k {
        ElementwiseKernel::Binary(f, t) => {
            let parts =
                (name(&["binary", f.name(), t.name()]), vec![("OP", upper("OP_", f.name())), t.define()]);
            Spec::wg256(
                parts,
                "kernels/elementwise/binary.wgsl",
                BINARY_SRC,
                IN2_OUT,
                params_of::<BinaryParams>(),
            )
        }
        ElementwiseKernel::Unary(f) => {
            let (stem, op) = f.parts();
            let parts = (name(&["unary", &stem]), vec![("OP", upper("OP_", op))]);
            Spec::wg256(
                parts,
                "kernels/elementwise/unary.wgsl",
                UNARY_SRC,
                IN_OUT,
                params_of::<UnaryParams>(),
            )
        }
        ElementwiseKernel::Where => Spec::wg256(
            (name(&["where", "word"]), Vec::new()),
            "kernels/elementwise/where.wgsl",
            WHERE_SRC,
            IN3_OUT,
            params_of::<WhereParams>(),
        ),
    }
}

/// Every key of this family, in a fixed order.
pub(crate) fn keys() -> Vec<ElementwiseKernel> {
    let binary = BinaryFn::all().flat_map(|f| WordType::ALL.map(|t| ElementwiseKernel::Binary(f, t)));
    let unary = UnaryFn::all().map(ElementwiseKernel::Unary);
    binary.chain(unary).chain([ElementwiseKernel::Where]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn binary(f: BinaryFn, t: WordType) -> Spec {
        spec(ElementwiseKernel::Binary(f, t))
    }

    fn unary(f: UnaryFn) -> Spec {
        spec(ElementwiseKernel::Unary(f))
    }

    #[test]
    fn every_op_and_dtype_has_its_own_variant() {
        let all: Vec<Spec> = keys().into_iter().map(spec).collect();
        assert_eq!(all.len(), (7 + 6) * 3 + 16 + 10 + 1);
        let names: HashSet<_> = all.iter().map(|s| s.name.clone()).collect();
        assert_eq!(names.len(), all.len());
        assert_eq!(binary(BinaryFn::Arith(BinaryOp::Maximum), WordType::F32).name, "binary_maximum_f32");
        assert_eq!(binary(BinaryFn::Arith(BinaryOp::Div), WordType::U32).name, "binary_div_u32");
        assert_eq!(binary(BinaryFn::Compare(CompareOp::Le), WordType::F32).name, "binary_le_f32");
        assert_eq!(unary(UnaryFn::F32(UnaryOp::GeluTanh)).name, "unary_gelu_tanh_f32");
        assert_eq!(unary(UnaryFn::CastU32ToF32).name, "unary_cast_u32_f32");
        assert_eq!(spec(ElementwiseKernel::Where).name, "where_word");
    }

    #[test]
    fn op_and_dtype_defines_match_the_name() {
        let lower = |s: &Spec, d: &str| s.define(d).map(str::to_ascii_lowercase);
        for f in BinaryFn::all() {
            for t in WordType::ALL {
                let s = binary(f, t);
                let op = lower(&s, "OP").unwrap();
                let ty = lower(&s, "T").unwrap();
                let expected =
                    format!("binary_{}_{}", op.trim_start_matches("op_"), ty.trim_start_matches("t_"));
                assert_eq!(s.name, expected);
            }
        }
        for f in UnaryFn::all() {
            let s = unary(f);
            let op = lower(&s, "OP").unwrap();
            let stem = s.name.trim_start_matches("unary_");
            let stem = stem.strip_suffix("_f32").filter(|_| matches!(f, UnaryFn::F32(_))).unwrap_or(stem);
            assert_eq!(op, format!("op_{stem}"), "{}", s.name);
        }
    }
}
