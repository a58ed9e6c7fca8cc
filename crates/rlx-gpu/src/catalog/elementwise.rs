//! Kernel family "elementwise": one broadcasting binary kernel (`binary.wgsl`: arithmetic and
//! comparisons) and one contiguous unary kernel (`unary.wgsl`: f32 math, casts, i32 neg/abs),
//! each with variants by op × dtype. Its keys ([`BinaryFn`] × [`WordType`], [`UnaryFn`]),
//! variants and params structs ([`params`]).
//!
//! Both kernels move 32-bit words (`array<u32>` bindings) and reinterpret them with `bitcast`
//! where the dtype matters, so one source serves f32, i32, u32 and Bool (a u32 0/1 word).

#[path = "elementwise_params.rs"]
pub mod params;

use super::{size_of, Defines, Spec, WordType, IN2_OUT, IN_OUT};
use params::{BinaryParams, UnaryParams};
use rlx_ir::{BinaryOp, CompareOp, UnaryOp};

const BINARY_SRC: &str = include_str!("../../kernels/elementwise/binary.wgsl");
const UNARY_SRC: &str = include_str!("../../kernels/elementwise/unary.wgsl");

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

/// Name and defines of a binary variant: `binary_<op>_<dtype>`, `OP` and `T`.
macro_rules! op_t {
    ($op:literal, $OP:literal, $t:expr) => {
        match $t {
            WordType::F32 => {
                (concat!("binary_", $op, "_f32"), &[("OP", concat!("OP_", $OP)), ("T", "T_F32")] as Defines)
            }
            WordType::I32 => {
                (concat!("binary_", $op, "_i32"), &[("OP", concat!("OP_", $OP)), ("T", "T_I32")] as Defines)
            }
            WordType::U32 => {
                (concat!("binary_", $op, "_u32"), &[("OP", concat!("OP_", $OP)), ("T", "T_U32")] as Defines)
            }
        }
    };
}

fn binary_parts(f: BinaryFn, t: WordType) -> (&'static str, Defines) {
    use BinaryFn::{Arith, Compare};
    match f {
        Arith(BinaryOp::Add) => op_t!("add", "ADD", t),
        Arith(BinaryOp::Sub) => op_t!("sub", "SUB", t),
        Arith(BinaryOp::Mul) => op_t!("mul", "MUL", t),
        Arith(BinaryOp::Div) => op_t!("div", "DIV", t),
        Arith(BinaryOp::Pow) => op_t!("pow", "POW", t),
        Arith(BinaryOp::Maximum) => op_t!("maximum", "MAXIMUM", t),
        Arith(BinaryOp::Minimum) => op_t!("minimum", "MINIMUM", t),
        Compare(CompareOp::Eq) => op_t!("eq", "EQ", t),
        Compare(CompareOp::Ne) => op_t!("ne", "NE", t),
        Compare(CompareOp::Lt) => op_t!("lt", "LT", t),
        Compare(CompareOp::Le) => op_t!("le", "LE", t),
        Compare(CompareOp::Gt) => op_t!("gt", "GT", t),
        Compare(CompareOp::Ge) => op_t!("ge", "GE", t),
    }
}

fn unary_parts(f: UnaryFn) -> (&'static str, Defines) {
    match f {
        UnaryFn::F32(op) => match op {
            UnaryOp::Gelu => ("unary_gelu_f32", &[("OP", "OP_GELU")]),
            UnaryOp::GeluTanh => ("unary_gelu_tanh_f32", &[("OP", "OP_GELU_TANH")]),
            UnaryOp::Silu => ("unary_silu_f32", &[("OP", "OP_SILU")]),
            UnaryOp::Relu => ("unary_relu_f32", &[("OP", "OP_RELU")]),
            UnaryOp::Sigmoid => ("unary_sigmoid_f32", &[("OP", "OP_SIGMOID")]),
            UnaryOp::Tanh => ("unary_tanh_f32", &[("OP", "OP_TANH")]),
            UnaryOp::Exp => ("unary_exp_f32", &[("OP", "OP_EXP")]),
            UnaryOp::Log => ("unary_log_f32", &[("OP", "OP_LOG")]),
            UnaryOp::Sqrt => ("unary_sqrt_f32", &[("OP", "OP_SQRT")]),
            UnaryOp::Rsqrt => ("unary_rsqrt_f32", &[("OP", "OP_RSQRT")]),
            UnaryOp::Neg => ("unary_neg_f32", &[("OP", "OP_NEG")]),
            UnaryOp::Abs => ("unary_abs_f32", &[("OP", "OP_ABS")]),
            UnaryOp::Sin => ("unary_sin_f32", &[("OP", "OP_SIN")]),
            UnaryOp::Cos => ("unary_cos_f32", &[("OP", "OP_COS")]),
            UnaryOp::Recip => ("unary_recip_f32", &[("OP", "OP_RECIP")]),
            UnaryOp::Square => ("unary_square_f32", &[("OP", "OP_SQUARE")]),
        },
        UnaryFn::CastF32ToI32 => ("unary_cast_f32_i32", &[("OP", "OP_CAST_F32_I32")]),
        UnaryFn::CastF32ToU32 => ("unary_cast_f32_u32", &[("OP", "OP_CAST_F32_U32")]),
        UnaryFn::CastI32ToF32 => ("unary_cast_i32_f32", &[("OP", "OP_CAST_I32_F32")]),
        UnaryFn::CastI32ToU32 => ("unary_cast_i32_u32", &[("OP", "OP_CAST_I32_U32")]),
        UnaryFn::CastU32ToF32 => ("unary_cast_u32_f32", &[("OP", "OP_CAST_U32_F32")]),
        UnaryFn::CastU32ToI32 => ("unary_cast_u32_i32", &[("OP", "OP_CAST_U32_I32")]),
        UnaryFn::NonzeroF32 => ("unary_nonzero_f32", &[("OP", "OP_NONZERO_F32")]),
        UnaryFn::NonzeroWord => ("unary_nonzero_word", &[("OP", "OP_NONZERO_WORD")]),
        UnaryFn::NegI32 => ("unary_neg_i32", &[("OP", "OP_NEG_I32")]),
        UnaryFn::AbsI32 => ("unary_abs_i32", &[("OP", "OP_ABS_I32")]),
    }
}

/// The binary variant computing `f` on words of type `t` ([`BinaryParams`]).
pub(crate) fn binary(f: BinaryFn, t: WordType) -> Spec {
    let parts = binary_parts(f, t);
    Spec::wg256(parts, "kernels/elementwise/binary.wgsl", BINARY_SRC, IN2_OUT, size_of::<BinaryParams>())
}

/// The unary variant computing `f` ([`UnaryParams`]).
pub(crate) fn unary(f: UnaryFn) -> Spec {
    Spec::wg256(unary_parts(f), "kernels/elementwise/unary.wgsl", UNARY_SRC, IN_OUT, size_of::<UnaryParams>())
}

/// Every binary key of this family, in a fixed order.
pub(crate) fn binary_keys() -> Vec<(BinaryFn, WordType)> {
    BinaryFn::all().flat_map(|f| WordType::ALL.map(|t| (f, t))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn define(spec: &Spec, name: &str) -> Option<String> {
        spec.defines.iter().find(|(d, _)| *d == name).map(|(_, v)| v.to_ascii_lowercase())
    }

    #[test]
    fn every_op_and_dtype_has_its_own_variant() {
        let bins: Vec<Spec> = binary_keys().into_iter().map(|(f, t)| binary(f, t)).collect();
        let uns: Vec<Spec> = UnaryFn::all().map(unary).collect();
        assert_eq!(bins.len(), (7 + 6) * 3);
        assert_eq!(uns.len(), 16 + 10);
        let names: HashSet<_> = bins.iter().chain(&uns).map(|s| s.name).collect();
        assert_eq!(names.len(), bins.len() + uns.len());
        assert_eq!(binary(BinaryFn::Arith(BinaryOp::Maximum), WordType::F32).name, "binary_maximum_f32");
        assert_eq!(binary(BinaryFn::Arith(BinaryOp::Div), WordType::U32).name, "binary_div_u32");
        assert_eq!(binary(BinaryFn::Compare(CompareOp::Le), WordType::F32).name, "binary_le_f32");
        assert_eq!(unary(UnaryFn::F32(UnaryOp::GeluTanh)).name, "unary_gelu_tanh_f32");
        assert_eq!(unary(UnaryFn::CastU32ToF32).name, "unary_cast_u32_f32");
    }

    #[test]
    fn op_and_dtype_defines_match_the_name() {
        for (f, t) in binary_keys() {
            let s = binary(f, t);
            let op = define(&s, "OP").unwrap();
            let ty = define(&s, "T").unwrap();
            let expected = format!("binary_{}_{}", op.trim_start_matches("op_"), ty.trim_start_matches("t_"));
            assert_eq!(s.name, expected);
        }
        for f in UnaryFn::all() {
            let s = unary(f);
            let op = define(&s, "OP").unwrap();
            let stem = s.name.trim_start_matches("unary_");
            let stem = stem.strip_suffix("_f32").filter(|_| matches!(f, UnaryFn::F32(_))).unwrap_or(stem);
            assert_eq!(op, format!("op_{stem}"), "{}", s.name);
        }
    }
}
