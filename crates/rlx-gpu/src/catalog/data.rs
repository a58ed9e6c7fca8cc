//! Kernel family "data": elementwise ops on every dtype the GPU stores (casts, i32 neg/abs,
//! integer binary ops, comparisons, where), data movement (strided copy, fill, gather) and
//! reductions (reduce over any axes, argmax/argmin, cumsum, top-k). Its keys, variants and
//! params structs ([`params`]).
//!
//! Every kernel of this family moves 32-bit words (`array<u32>` bindings) and reinterprets them
//! with `bitcast` where the dtype matters, so one kernel serves f32, i32, u32 and Bool (a u32
//! 0/1 word) wherever the bits alone decide.

#[path = "data_params.rs"]
pub mod params;

use crate::variants::size_of;
use crate::{Access, BinaryParams, KernelKey, KernelVariant, UnaryParams};
use params::{AxisParams, CopyParams, FillParams, GatherParams, ReduceParams, TopKParams, WhereParams};
use rlx_ir::{ArgReduceOp, BinaryOp, CompareOp, ReduceOp, TopKOutput};

/// A 32-bit word type as kernels compute on it. Bool words compare and move as `U32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WordType {
    F32,
    I32,
    U32,
}

impl WordType {
    pub const ALL: [WordType; 3] = [WordType::F32, WordType::I32, WordType::U32];
}

/// The integer word types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IntType {
    I32,
    U32,
}

impl IntType {
    pub const ALL: [IntType; 2] = [IntType::I32, IntType::U32];
}

/// One-input contiguous word maps (`data_map.wgsl`). Casts follow rlx-cpu: floats round to
/// nearest even, integers truncate toward zero and saturate, NaN → 0; a cast to Bool is `!= 0`
/// (NaN is nonzero, −0 is zero). Casts from Bool use the U32 maps (its words are 0/1); casts
/// that keep the bits (same dtype, Bool → I32/U32) are copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MapFn {
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

impl MapFn {
    pub const ALL: [MapFn; 10] = [
        MapFn::CastF32ToI32,
        MapFn::CastF32ToU32,
        MapFn::CastI32ToF32,
        MapFn::CastI32ToU32,
        MapFn::CastU32ToF32,
        MapFn::CastU32ToI32,
        MapFn::NonzeroF32,
        MapFn::NonzeroWord,
        MapFn::NegI32,
        MapFn::AbsI32,
    ];
}

/// Reductions that integers take (mean needs a float).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IntReduceOp {
    Sum,
    Prod,
    Max,
    Min,
}

impl IntReduceOp {
    pub const ALL: [IntReduceOp; 4] =
        [IntReduceOp::Sum, IntReduceOp::Prod, IntReduceOp::Max, IntReduceOp::Min];
}

/// Kernels of the data family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DataKernel {
    /// `data_map.wgsl`, [`UnaryParams`]: out[i] = f(x[i]).
    Map(MapFn),
    /// `data_binary.wgsl`, [`BinaryParams`]: broadcasting integer binary op, wrapping; integer
    /// division truncates and x / 0 = 0.
    IntBinary(BinaryOp, IntType),
    /// `data_binary.wgsl`, [`BinaryParams`]: broadcasting comparison → u32 0/1. NaN compares
    /// unequal to everything.
    Compare(CompareOp, WordType),
    /// `data_where.wgsl`, [`WhereParams`]: cond ? a : b, all three broadcast.
    Where,
    /// `data_copy.wgsl`, [`CopyParams`]: strided word copy (permute, slice, expand, reverse,
    /// pad interiors, concat parts, reshape copies).
    Copy,
    /// `data_fill.wgsl`, [`FillParams`]: every word of the output set to one value.
    Fill,
    /// `data_gather.wgsl`, [`GatherParams`]: numpy take; out-of-range indices give 0 words.
    Gather,
    /// `data_reduce.wgsl`, [`ReduceParams`]: f32 reduction over any axes.
    ReduceF32(ReduceOp),
    /// `data_reduce.wgsl`, [`ReduceParams`]: wrapping integer reduction over any axes.
    ReduceInt(IntReduceOp, IntType),
    /// `data_arg_reduce.wgsl`, [`AxisParams`]: index of the extreme along an axis, as i32.
    ArgReduce(ArgReduceOp, WordType),
    /// `data_cumsum.wgsl`, [`AxisParams`]: inclusive prefix sum along an axis.
    Cumsum(WordType),
    /// `data_topk.wgsl`, [`TopKParams`]: the k largest or smallest along an axis, sorted.
    TopK(WordType, TopKOutput),
}

const MAP_SRC: &str = include_str!("../../kernels/data_map.wgsl");
const BINARY_SRC: &str = include_str!("../../kernels/data_binary.wgsl");
const WHERE_SRC: &str = include_str!("../../kernels/data_where.wgsl");
const COPY_SRC: &str = include_str!("../../kernels/data_copy.wgsl");
const FILL_SRC: &str = include_str!("../../kernels/data_fill.wgsl");
const GATHER_SRC: &str = include_str!("../../kernels/data_gather.wgsl");
const REDUCE_SRC: &str = include_str!("../../kernels/data_reduce.wgsl");
const ARG_REDUCE_SRC: &str = include_str!("../../kernels/data_arg_reduce.wgsl");
const CUMSUM_SRC: &str = include_str!("../../kernels/data_cumsum.wgsl");
const TOPK_SRC: &str = include_str!("../../kernels/data_topk.wgsl");

const IN_OUT: &[Access] = &[Access::Read, Access::ReadWrite];
const IN_IN_OUT: &[Access] = &[Access::Read, Access::Read, Access::ReadWrite];
const IN_IN_IN_OUT: &[Access] = &[Access::Read, Access::Read, Access::Read, Access::ReadWrite];
const OUT: &[Access] = &[Access::ReadWrite];

type Defines = &'static [(&'static str, &'static str)];

/// Name and defines of a variant whose defines are `OP` and `T` (`<kernel>_<op>_<dtype>`).
macro_rules! op_t {
    ($prefix:literal, $op:literal, $OP:literal, $t:literal, $T:literal) => {
        (concat!($prefix, $op, "_", $t), &[("OP", concat!("OP_", $OP)), ("T", concat!("T_", $T))])
    };
}

fn map_parts(f: MapFn) -> (&'static str, Defines) {
    match f {
        MapFn::CastF32ToI32 => ("data_cast_f32_i32", &[("FN", "FN_CAST_F32_I32")]),
        MapFn::CastF32ToU32 => ("data_cast_f32_u32", &[("FN", "FN_CAST_F32_U32")]),
        MapFn::CastI32ToF32 => ("data_cast_i32_f32", &[("FN", "FN_CAST_I32_F32")]),
        MapFn::CastI32ToU32 => ("data_cast_i32_u32", &[("FN", "FN_CAST_I32_U32")]),
        MapFn::CastU32ToF32 => ("data_cast_u32_f32", &[("FN", "FN_CAST_U32_F32")]),
        MapFn::CastU32ToI32 => ("data_cast_u32_i32", &[("FN", "FN_CAST_U32_I32")]),
        MapFn::NonzeroF32 => ("data_nonzero_f32", &[("FN", "FN_NONZERO_F32")]),
        MapFn::NonzeroWord => ("data_nonzero_word", &[("FN", "FN_NONZERO_WORD")]),
        MapFn::NegI32 => ("data_neg_i32", &[("FN", "FN_NEG_I32")]),
        MapFn::AbsI32 => ("data_abs_i32", &[("FN", "FN_ABS_I32")]),
    }
}

fn int_binary_parts(op: BinaryOp, t: IntType) -> (&'static str, Defines) {
    use BinaryOp::*;
    match (op, t) {
        (Add, IntType::I32) => op_t!("data_", "add", "ADD", "i32", "I32"),
        (Add, IntType::U32) => op_t!("data_", "add", "ADD", "u32", "U32"),
        (Sub, IntType::I32) => op_t!("data_", "sub", "SUB", "i32", "I32"),
        (Sub, IntType::U32) => op_t!("data_", "sub", "SUB", "u32", "U32"),
        (Mul, IntType::I32) => op_t!("data_", "mul", "MUL", "i32", "I32"),
        (Mul, IntType::U32) => op_t!("data_", "mul", "MUL", "u32", "U32"),
        (Div, IntType::I32) => op_t!("data_", "div", "DIV", "i32", "I32"),
        (Div, IntType::U32) => op_t!("data_", "div", "DIV", "u32", "U32"),
        (Pow, IntType::I32) => op_t!("data_", "pow", "POW", "i32", "I32"),
        (Pow, IntType::U32) => op_t!("data_", "pow", "POW", "u32", "U32"),
        (Maximum, IntType::I32) => op_t!("data_", "maximum", "MAXIMUM", "i32", "I32"),
        (Maximum, IntType::U32) => op_t!("data_", "maximum", "MAXIMUM", "u32", "U32"),
        (Minimum, IntType::I32) => op_t!("data_", "minimum", "MINIMUM", "i32", "I32"),
        (Minimum, IntType::U32) => op_t!("data_", "minimum", "MINIMUM", "u32", "U32"),
    }
}

fn compare_parts(op: CompareOp, t: WordType) -> (&'static str, Defines) {
    use CompareOp::*;
    use WordType::*;
    match (op, t) {
        (Eq, F32) => op_t!("data_", "eq", "EQ", "f32", "F32"),
        (Eq, I32) => op_t!("data_", "eq", "EQ", "i32", "I32"),
        (Eq, U32) => op_t!("data_", "eq", "EQ", "u32", "U32"),
        (Ne, F32) => op_t!("data_", "ne", "NE", "f32", "F32"),
        (Ne, I32) => op_t!("data_", "ne", "NE", "i32", "I32"),
        (Ne, U32) => op_t!("data_", "ne", "NE", "u32", "U32"),
        (Lt, F32) => op_t!("data_", "lt", "LT", "f32", "F32"),
        (Lt, I32) => op_t!("data_", "lt", "LT", "i32", "I32"),
        (Lt, U32) => op_t!("data_", "lt", "LT", "u32", "U32"),
        (Le, F32) => op_t!("data_", "le", "LE", "f32", "F32"),
        (Le, I32) => op_t!("data_", "le", "LE", "i32", "I32"),
        (Le, U32) => op_t!("data_", "le", "LE", "u32", "U32"),
        (Gt, F32) => op_t!("data_", "gt", "GT", "f32", "F32"),
        (Gt, I32) => op_t!("data_", "gt", "GT", "i32", "I32"),
        (Gt, U32) => op_t!("data_", "gt", "GT", "u32", "U32"),
        (Ge, F32) => op_t!("data_", "ge", "GE", "f32", "F32"),
        (Ge, I32) => op_t!("data_", "ge", "GE", "i32", "I32"),
        (Ge, U32) => op_t!("data_", "ge", "GE", "u32", "U32"),
    }
}

fn reduce_f32_parts(op: ReduceOp) -> (&'static str, Defines) {
    match op {
        ReduceOp::Sum => op_t!("data_reduce_", "sum", "SUM", "f32", "F32"),
        ReduceOp::Mean => op_t!("data_reduce_", "mean", "MEAN", "f32", "F32"),
        ReduceOp::Max => op_t!("data_reduce_", "max", "MAX", "f32", "F32"),
        ReduceOp::Min => op_t!("data_reduce_", "min", "MIN", "f32", "F32"),
        ReduceOp::Prod => op_t!("data_reduce_", "prod", "PROD", "f32", "F32"),
    }
}

fn reduce_int_parts(op: IntReduceOp, t: IntType) -> (&'static str, Defines) {
    use IntReduceOp::*;
    match (op, t) {
        (Sum, IntType::I32) => op_t!("data_reduce_", "sum", "SUM", "i32", "I32"),
        (Sum, IntType::U32) => op_t!("data_reduce_", "sum", "SUM", "u32", "U32"),
        (Prod, IntType::I32) => op_t!("data_reduce_", "prod", "PROD", "i32", "I32"),
        (Prod, IntType::U32) => op_t!("data_reduce_", "prod", "PROD", "u32", "U32"),
        (Max, IntType::I32) => op_t!("data_reduce_", "max", "MAX", "i32", "I32"),
        (Max, IntType::U32) => op_t!("data_reduce_", "max", "MAX", "u32", "U32"),
        (Min, IntType::I32) => op_t!("data_reduce_", "min", "MIN", "i32", "I32"),
        (Min, IntType::U32) => op_t!("data_reduce_", "min", "MIN", "u32", "U32"),
    }
}

fn arg_reduce_parts(op: ArgReduceOp, t: WordType) -> (&'static str, Defines) {
    use WordType::*;
    match (op, t) {
        (ArgReduceOp::ArgMax, F32) => op_t!("data_", "argmax", "ARGMAX", "f32", "F32"),
        (ArgReduceOp::ArgMax, I32) => op_t!("data_", "argmax", "ARGMAX", "i32", "I32"),
        (ArgReduceOp::ArgMax, U32) => op_t!("data_", "argmax", "ARGMAX", "u32", "U32"),
        (ArgReduceOp::ArgMin, F32) => op_t!("data_", "argmin", "ARGMIN", "f32", "F32"),
        (ArgReduceOp::ArgMin, I32) => op_t!("data_", "argmin", "ARGMIN", "i32", "I32"),
        (ArgReduceOp::ArgMin, U32) => op_t!("data_", "argmin", "ARGMIN", "u32", "U32"),
    }
}

fn cumsum_parts(t: WordType) -> (&'static str, Defines) {
    match t {
        WordType::F32 => ("data_cumsum_f32", &[("T", "T_F32")]),
        WordType::I32 => ("data_cumsum_i32", &[("T", "T_I32")]),
        WordType::U32 => ("data_cumsum_u32", &[("T", "T_U32")]),
    }
}

fn topk_parts(t: WordType, output: TopKOutput) -> (&'static str, Defines) {
    use TopKOutput::*;
    use WordType::*;
    match (output, t) {
        (Values, F32) => ("data_topk_values_f32", &[("OUT", "OUT_VALUES"), ("T", "T_F32")]),
        (Values, I32) => ("data_topk_values_i32", &[("OUT", "OUT_VALUES"), ("T", "T_I32")]),
        (Values, U32) => ("data_topk_values_u32", &[("OUT", "OUT_VALUES"), ("T", "T_U32")]),
        (Indices, F32) => ("data_topk_indices_f32", &[("OUT", "OUT_INDICES"), ("T", "T_F32")]),
        (Indices, I32) => ("data_topk_indices_i32", &[("OUT", "OUT_INDICES"), ("T", "T_I32")]),
        (Indices, U32) => ("data_topk_indices_u32", &[("OUT", "OUT_INDICES"), ("T", "T_U32")]),
    }
}

/// A variant of this family with a 256-thread 1-D workgroup (every kernel here has one).
fn wg256(
    k: DataKernel,
    (name, defines): (&'static str, Defines),
    file: &'static str,
    source: &'static str,
    bindings: &'static [Access],
    params_size: u32,
) -> KernelVariant {
    KernelVariant {
        key: KernelKey::Data(k),
        name,
        file,
        source,
        defines,
        workgroup_size: [256, 1, 1],
        bindings,
        params_size,
    }
}

pub(crate) fn variant(k: DataKernel) -> KernelVariant {
    match k {
        DataKernel::Map(f) => {
            wg256(k, map_parts(f), "kernels/data_map.wgsl", MAP_SRC, IN_OUT, size_of::<UnaryParams>())
        }
        DataKernel::IntBinary(op, t) => wg256(
            k,
            int_binary_parts(op, t),
            "kernels/data_binary.wgsl",
            BINARY_SRC,
            IN_IN_OUT,
            size_of::<BinaryParams>(),
        ),
        DataKernel::Compare(op, t) => wg256(
            k,
            compare_parts(op, t),
            "kernels/data_binary.wgsl",
            BINARY_SRC,
            IN_IN_OUT,
            size_of::<BinaryParams>(),
        ),
        DataKernel::Where => wg256(
            k,
            ("data_where_word", &[]),
            "kernels/data_where.wgsl",
            WHERE_SRC,
            IN_IN_IN_OUT,
            size_of::<WhereParams>(),
        ),
        DataKernel::Copy => wg256(
            k,
            ("data_copy_word", &[]),
            "kernels/data_copy.wgsl",
            COPY_SRC,
            IN_OUT,
            size_of::<CopyParams>(),
        ),
        DataKernel::Fill => wg256(
            k,
            ("data_fill_word", &[]),
            "kernels/data_fill.wgsl",
            FILL_SRC,
            OUT,
            size_of::<FillParams>(),
        ),
        DataKernel::Gather => wg256(
            k,
            ("data_gather_word", &[]),
            "kernels/data_gather.wgsl",
            GATHER_SRC,
            IN_IN_OUT,
            size_of::<GatherParams>(),
        ),
        DataKernel::ReduceF32(op) => wg256(
            k,
            reduce_f32_parts(op),
            "kernels/data_reduce.wgsl",
            REDUCE_SRC,
            IN_OUT,
            size_of::<ReduceParams>(),
        ),
        DataKernel::ReduceInt(op, t) => wg256(
            k,
            reduce_int_parts(op, t),
            "kernels/data_reduce.wgsl",
            REDUCE_SRC,
            IN_OUT,
            size_of::<ReduceParams>(),
        ),
        DataKernel::ArgReduce(op, t) => wg256(
            k,
            arg_reduce_parts(op, t),
            "kernels/data_arg_reduce.wgsl",
            ARG_REDUCE_SRC,
            IN_OUT,
            size_of::<AxisParams>(),
        ),
        DataKernel::Cumsum(t) => {
            wg256(k, cumsum_parts(t), "kernels/data_cumsum.wgsl", CUMSUM_SRC, IN_OUT, size_of::<AxisParams>())
        }
        DataKernel::TopK(t, output) => wg256(
            k,
            topk_parts(t, output),
            "kernels/data_topk.wgsl",
            TOPK_SRC,
            IN_OUT,
            size_of::<TopKParams>(),
        ),
    }
}

/// Every key of this family, in a fixed order.
pub(crate) fn keys() -> Vec<DataKernel> {
    let mut keys: Vec<DataKernel> = MapFn::ALL.iter().map(|&f| DataKernel::Map(f)).collect();
    for op in BinaryOp::ALL {
        keys.extend(IntType::ALL.iter().map(|&t| DataKernel::IntBinary(op, t)));
    }
    for op in CompareOp::ALL {
        keys.extend(WordType::ALL.iter().map(|&t| DataKernel::Compare(op, t)));
    }
    keys.extend([DataKernel::Where, DataKernel::Copy, DataKernel::Fill, DataKernel::Gather]);
    for op in [ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod] {
        keys.push(DataKernel::ReduceF32(op));
    }
    for op in IntReduceOp::ALL {
        keys.extend(IntType::ALL.iter().map(|&t| DataKernel::ReduceInt(op, t)));
    }
    for op in [ArgReduceOp::ArgMax, ArgReduceOp::ArgMin] {
        keys.extend(WordType::ALL.iter().map(|&t| DataKernel::ArgReduce(op, t)));
    }
    keys.extend(WordType::ALL.iter().map(|&t| DataKernel::Cumsum(t)));
    for output in [TopKOutput::Values, TopKOutput::Indices] {
        keys.extend(WordType::ALL.iter().map(|&t| DataKernel::TopK(t, output)));
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn family_has_every_combination_once() {
        let keys = keys();
        // 10 maps, 14 int binary, 18 compare, 4 movement, 5 + 8 reduce, 6 arg, 3 cumsum, 6 topk.
        assert_eq!(keys.len(), 10 + 14 + 18 + 4 + 13 + 6 + 3 + 6);
        let names: std::collections::HashSet<_> = keys.iter().map(|&k| variant(k).name).collect();
        assert_eq!(names.len(), keys.len());
        assert_eq!(variant(DataKernel::IntBinary(BinaryOp::Div, IntType::U32)).name, "data_div_u32");
        assert_eq!(variant(DataKernel::Compare(CompareOp::Le, WordType::F32)).name, "data_le_f32");
        assert_eq!(
            variant(DataKernel::ReduceInt(IntReduceOp::Max, IntType::I32)).name,
            "data_reduce_max_i32"
        );
        assert_eq!(
            variant(DataKernel::TopK(WordType::U32, TopKOutput::Indices)).defines,
            &[("OUT", "OUT_INDICES"), ("T", "T_U32")]
        );
    }

    #[test]
    fn op_and_dtype_defines_match_the_name() {
        for k in keys() {
            let v = variant(k);
            let get = |n: &str| v.defines.iter().find(|(d, _)| *d == n).map(|(_, x)| x.to_ascii_lowercase());
            if let Some(t) = get("T") {
                assert!(v.name.ends_with(t.trim_start_matches("t")), "{}: {t}", v.name);
            }
            if let Some(op) = get("OP") {
                let op = op.trim_start_matches("op_");
                assert!(v.name.contains(&format!("_{op}_")), "{}: {op}", v.name);
            }
        }
    }
}
