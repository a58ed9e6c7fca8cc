//! The op-code constant tables of the kernels, generated from the Rust enums that name the
//! codes: a kernel compares its `OP`, `T`, `ACT`, … define (the constant's name, see each
//! family's `spec`) with constants such as `const OP_ADD: u32 = 0u;`, and those lines are
//! written here once, not in the WGSL. [`crate::KernelVariant::wgsl`] appends a variant's tables
//! after the prelude (WGSL module-scope constants may be declared after their use), so kernel
//! line numbers stay those of the file.
//!
//! Each table is the list of (name part, code) of one enum: the name part is the one the
//! family's define is built from (`upper(prefix, part)`), so a define always names a constant
//! its table declares. The codes are those the kernels have always used.

use super::attention::AttentionKernel;
use super::elementwise::{ElementwiseKernel, UnaryFn};
use super::matmul::Epilogue;
use super::reduce::{arg_name, topk_name, IntReduceOp, ReduceKernel};
use super::{upper, WordType};
use crate::KernelKey;
use rlx_ir::{ArgReduceOp, BinaryOp, CompareOp, DType, RandomDist, TopKOutput};
use std::fmt::Write as _;

/// One constant table: the WGSL prefix and each (name part, code).
pub(crate) type Table = (&'static str, Vec<(&'static str, u32)>);

/// `const <PREFIX><NAME>: u32 = <code>u;` for each entry of `table`, one line each.
pub(crate) fn wgsl_consts((prefix, entries): &Table) -> String {
    let mut text = String::new();
    for (part, code) in entries {
        // Writing to a String cannot fail.
        let _ = writeln!(text, "const {}: u32 = {code}u;", upper(prefix, part));
    }
    text
}

/// Position in a list as a code.
fn codes<T: Copy>(
    items: impl IntoIterator<Item = T>,
    name: impl Fn(T) -> &'static str,
) -> Vec<(&'static str, u32)> {
    items.into_iter().enumerate().map(|(i, t)| (name(t), i as u32)).collect()
}

/// Word types as kernels take them (`T_F32`, …; `prelude.wgsl`): every variant has this table.
pub(crate) fn word_types() -> Table {
    ("T_", codes(WordType::ALL, WordType::name))
}

/// `binary.wgsl`'s `OP_*`: arithmetic from 0, comparisons from 10.
pub(crate) fn binary_ops() -> Table {
    let mut ops = codes(BinaryOp::ALL, BinaryOp::name);
    ops.extend(CompareOp::ALL.iter().enumerate().map(|(i, op)| (op.name(), 10 + i as u32)));
    ("OP_", ops)
}

/// `unary.wgsl`'s `OP_*`: the f32 math ops, then the word maps, in [`UnaryFn::all`] order.
pub(crate) fn unary_ops() -> Table {
    ("OP_", codes(UnaryFn::all(), UnaryFn::op_name))
}

/// `cast.wgsl`'s `D_*`: every dtype, in [`DType::ALL`] order.
pub(crate) fn cast_dtypes() -> Table {
    ("D_", codes(DType::ALL, DType::name))
}

/// `reduce.wgsl`'s `OP_*` (f32 and integer reductions).
pub(crate) fn reduce_ops() -> Table {
    let int = |op: IntReduceOp| op.name();
    (
        "OP_",
        vec![
            ("sum", 0),
            ("mean", 1),
            (int(IntReduceOp::Prod), 2),
            (int(IntReduceOp::Max), 3),
            (int(IntReduceOp::Min), 4),
        ],
    )
}

/// `arg_reduce.wgsl`'s `OP_*`.
pub(crate) fn arg_ops() -> Table {
    ("OP_", codes([ArgReduceOp::ArgMax, ArgReduceOp::ArgMin], arg_name))
}

/// `topk.wgsl`'s `OUT_*`.
pub(crate) fn topk_outputs() -> Table {
    ("OUT_", codes([TopKOutput::Values, TopKOutput::Indices], topk_name))
}

/// `random_philox.wgsl`'s `DIST_*`.
pub(crate) fn random_dists() -> Table {
    ("DIST_", codes(RandomDist::ALL, RandomDist::name))
}

/// `matmul_epilogue.wgsl`'s `ACT_*`: none, then each [`Epilogue`].
pub(crate) fn epilogue_acts() -> Table {
    let mut acts = vec![("none", 0)];
    acts.extend(Epilogue::ALL.iter().enumerate().map(|(i, e)| (e.name(), 1 + i as u32)));
    ("ACT_", acts)
}

/// `attention_common.wgsl`'s `MASK_*`: the `mask_kind` codes of the attention params.
pub(crate) fn mask_kinds() -> Table {
    use super::attention::params::mask;
    (
        "MASK_",
        vec![
            ("none", mask::NONE),
            ("causal", mask::CAUSAL),
            ("sliding", mask::SLIDING),
            ("padding", mask::PADDING),
            ("bias", mask::BIAS),
        ],
    )
}

/// The tables a built-in variant's kernel uses, besides [`word_types`].
pub(crate) fn tables(key: KernelKey) -> Vec<Table> {
    match key {
        // Each includes ew_math.wgsl, which names both tables' math ops.
        KernelKey::Elementwise(ElementwiseKernel::Binary(..) | ElementwiseKernel::Unary(_)) => {
            vec![binary_ops(), unary_ops()]
        }
        KernelKey::Cast(_) => vec![cast_dtypes()],
        KernelKey::Reduce(ReduceKernel::F32(_) | ReduceKernel::Int(..)) => vec![reduce_ops()],
        KernelKey::Reduce(ReduceKernel::Arg(..)) => vec![arg_ops()],
        KernelKey::Reduce(ReduceKernel::TopK(..)) => vec![topk_outputs()],
        KernelKey::Random(_) => vec![random_dists()],
        KernelKey::Matmul(_) => vec![epilogue_acts()],
        KernelKey::Attention(k) if k != AttentionKernel::Combine => vec![mask_kinds()],
        _ => Vec::new(),
    }
}

/// The WGSL of every table of `key`: what [`crate::KernelVariant::wgsl`] appends.
pub(crate) fn declarations(key: KernelKey) -> String {
    let mut text = String::from("// Op codes from their Rust enums (rlx-gpu catalog/consts_wgsl.rs).\n");
    for table in [word_types()].into_iter().chain(tables(key)) {
        text.push_str(&wgsl_consts(&table));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `NAME=code` of each entry, as the kernels declared them before the tables moved here.
    fn listed(table: Table) -> String {
        let text = wgsl_consts(&table);
        let pairs: Vec<String> = text
            .lines()
            .map(|l| {
                let (name, code) = l.trim_start_matches("const ").split_once(": u32 = ").unwrap();
                format!("{name}={}", code.trim_end_matches("u;"))
            })
            .collect();
        pairs.join(" ")
    }

    #[test]
    fn tables_keep_the_kernels_names_and_codes() {
        let cases = [
            (word_types(), "T_F32=0 T_I32=1 T_U32=2"),
            (
                binary_ops(),
                "OP_ADD=0 OP_SUB=1 OP_MUL=2 OP_DIV=3 OP_POW=4 OP_MAXIMUM=5 OP_MINIMUM=6 \
                 OP_EQ=10 OP_NE=11 OP_LT=12 OP_LE=13 OP_GT=14 OP_GE=15",
            ),
            (
                unary_ops(),
                "OP_GELU=0 OP_GELU_TANH=1 OP_SILU=2 OP_RELU=3 OP_SIGMOID=4 OP_TANH=5 OP_EXP=6 \
                 OP_LOG=7 OP_SQRT=8 OP_RSQRT=9 OP_NEG=10 OP_ABS=11 OP_SIN=12 OP_COS=13 \
                 OP_RECIP=14 OP_SQUARE=15 OP_CAST_F32_I32=16 OP_CAST_F32_U32=17 \
                 OP_CAST_I32_F32=18 OP_CAST_I32_U32=19 OP_CAST_U32_F32=20 OP_CAST_U32_I32=21 \
                 OP_NONZERO_F32=22 OP_NONZERO_WORD=23 OP_NEG_I32=24 OP_ABS_I32=25",
            ),
            (cast_dtypes(), "D_F32=0 D_F16=1 D_BF16=2 D_I32=3 D_U32=4 D_U8=5 D_BOOL=6"),
            (reduce_ops(), "OP_SUM=0 OP_MEAN=1 OP_PROD=2 OP_MAX=3 OP_MIN=4"),
            (arg_ops(), "OP_ARGMAX=0 OP_ARGMIN=1"),
            (topk_outputs(), "OUT_VALUES=0 OUT_INDICES=1"),
            (random_dists(), "DIST_UNIFORM=0 DIST_NORMAL=1"),
            (
                epilogue_acts(),
                "ACT_NONE=0 ACT_GELU=1 ACT_GELU_TANH=2 ACT_RELU=3 ACT_SILU=4 ACT_SIGMOID=5 ACT_TANH=6",
            ),
            (mask_kinds(), "MASK_NONE=0 MASK_CAUSAL=1 MASK_SLIDING=2 MASK_PADDING=3 MASK_BIAS=4"),
        ];
        for (table, expected) in cases {
            assert_eq!(listed(table), expected);
        }
    }

    #[test]
    fn every_define_names_a_constant_of_its_variant() {
        // A define whose value is a generated constant's name (`OP_ADD`) must be declared by
        // the variant's tables; naga would reject the variant otherwise (wgsl_tests checks that
        // every variant compiles), this says which define is missing.
        for v in crate::variants() {
            let decl = declarations(v.key);
            for (define, value) in &v.defines {
                let prefixed = ["OP_", "T_", "D_", "OUT_", "DIST_", "ACT_"];
                if prefixed.iter().any(|p| {
                    value.starts_with(p)
                        && value.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                }) {
                    assert!(decl.contains(&format!("const {value}: u32 =")), "{} {define}={value}", v.name);
                }
            }
        }
    }
}
