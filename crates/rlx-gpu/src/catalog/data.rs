//! Kernel family "data": where on every dtype, data movement (strided copy, fill, gather) and
//! reductions (reduce over any axes, argmax/argmin, cumsum, top-k). Its keys, variants and
//! params structs ([`params`]). Binary ops, comparisons, casts and maps are the
//! [`super::elementwise`] family's.
//!
//! Every kernel of this family moves 32-bit words (`array<u32>` bindings) and reinterprets them
//! with `bitcast` where the dtype matters, so one kernel serves f32, i32, u32 and Bool (a u32
//! 0/1 word) wherever the bits alone decide.

#[path = "data_params.rs"]
pub mod params;

pub use super::WordType;
use super::{size_of, Defines, Spec, IN2_OUT, IN3_OUT, IN_OUT, OUT};
use params::{
    AxisParams, CopyParams, FillParams, GatherParams, ReduceParams, TopKParams, WhereParams, WriteRowsParams,
};
use rlx_ir::{ArgReduceOp, ReduceOp, TopKOutput};

/// The integer word types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IntType {
    I32,
    U32,
}

impl IntType {
    pub const ALL: [IntType; 2] = [IntType::I32, IntType::U32];
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
    /// `where.wgsl`, [`WhereParams`]: cond ? a : b, all three broadcast.
    Where,
    /// `copy.wgsl`, [`CopyParams`]: strided word copy (permute, slice, expand, reverse,
    /// pad interiors, concat parts, reshape copies).
    Copy,
    /// `fill.wgsl`, [`FillParams`]: every word of the output set to one value.
    Fill,
    /// `gather.wgsl`, [`GatherParams`]: numpy take; out-of-range indices give 0 words.
    Gather,
    /// `reduce.wgsl`, [`ReduceParams`]: f32 reduction over any axes.
    ReduceF32(ReduceOp),
    /// `reduce.wgsl`, [`ReduceParams`]: wrapping integer reduction over any axes.
    ReduceInt(IntReduceOp, IntType),
    /// `arg_reduce.wgsl`, [`AxisParams`]: index of the extreme along an axis, as i32.
    ArgReduce(ArgReduceOp, WordType),
    /// `cumsum.wgsl`, [`AxisParams`]: inclusive prefix sum along an axis.
    Cumsum(WordType),
    /// `topk.wgsl`, [`TopKParams`]: the k largest or smallest along an axis, sorted.
    TopK(WordType, TopKOutput),
    /// `write_rows.wgsl`, [`WriteRowsParams`]: rows written into a state in place at a
    /// run-time offset.
    WriteRows,
}

const WHERE_SRC: &str = include_str!("../../kernels/elementwise/where.wgsl");
const COPY_SRC: &str = include_str!("../../kernels/shape/copy.wgsl");
const FILL_SRC: &str = include_str!("../../kernels/shape/fill.wgsl");
const GATHER_SRC: &str = include_str!("../../kernels/shape/gather.wgsl");
const REDUCE_SRC: &str = include_str!("../../kernels/reduce/reduce.wgsl");
const ARG_REDUCE_SRC: &str = include_str!("../../kernels/reduce/arg_reduce.wgsl");
const CUMSUM_SRC: &str = include_str!("../../kernels/reduce/cumsum.wgsl");
const TOPK_SRC: &str = include_str!("../../kernels/reduce/topk.wgsl");
const WRITE_ROWS_SRC: &str = include_str!("../../kernels/state/write_rows.wgsl");

/// Name and defines of a variant whose defines are `OP` and `T` (`<kernel>_<op>_<dtype>`).
macro_rules! op_t {
    ($prefix:literal, $op:literal, $OP:literal, $t:literal, $T:literal) => {
        (concat!($prefix, $op, "_", $t), &[("OP", concat!("OP_", $OP)), ("T", concat!("T_", $T))])
    };
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

pub(crate) fn spec(k: DataKernel) -> Spec {
    match k {
        DataKernel::Where => Spec::wg256(
            ("data_where_word", &[]),
            "kernels/elementwise/where.wgsl",
            WHERE_SRC,
            IN3_OUT,
            size_of::<WhereParams>(),
        ),
        DataKernel::Copy => Spec::wg256(
            ("data_copy_word", &[]),
            "kernels/shape/copy.wgsl",
            COPY_SRC,
            IN_OUT,
            size_of::<CopyParams>(),
        ),
        DataKernel::Fill => Spec::wg256(
            ("data_fill_word", &[]),
            "kernels/shape/fill.wgsl",
            FILL_SRC,
            OUT,
            size_of::<FillParams>(),
        ),
        DataKernel::Gather => Spec::wg256(
            ("data_gather_word", &[]),
            "kernels/shape/gather.wgsl",
            GATHER_SRC,
            IN2_OUT,
            size_of::<GatherParams>(),
        ),
        DataKernel::ReduceF32(op) => Spec::wg256(
            reduce_f32_parts(op),
            "kernels/reduce/reduce.wgsl",
            REDUCE_SRC,
            IN_OUT,
            size_of::<ReduceParams>(),
        ),
        DataKernel::ReduceInt(op, t) => Spec::wg256(
            reduce_int_parts(op, t),
            "kernels/reduce/reduce.wgsl",
            REDUCE_SRC,
            IN_OUT,
            size_of::<ReduceParams>(),
        ),
        DataKernel::ArgReduce(op, t) => Spec::wg256(
            arg_reduce_parts(op, t),
            "kernels/reduce/arg_reduce.wgsl",
            ARG_REDUCE_SRC,
            IN_OUT,
            size_of::<AxisParams>(),
        ),
        DataKernel::Cumsum(t) => Spec::wg256(
            cumsum_parts(t),
            "kernels/reduce/cumsum.wgsl",
            CUMSUM_SRC,
            IN_OUT,
            size_of::<AxisParams>(),
        ),
        DataKernel::TopK(t, output) => Spec::wg256(
            topk_parts(t, output),
            "kernels/reduce/topk.wgsl",
            TOPK_SRC,
            IN_OUT,
            size_of::<TopKParams>(),
        ),
        DataKernel::WriteRows => Spec::wg256(
            ("data_write_rows_word", &[]),
            "kernels/state/write_rows.wgsl",
            WRITE_ROWS_SRC,
            IN2_OUT,
            size_of::<WriteRowsParams>(),
        ),
    }
}

/// Every key of this family, in a fixed order.
pub(crate) fn keys() -> Vec<DataKernel> {
    let mut keys = vec![
        DataKernel::Where,
        DataKernel::Copy,
        DataKernel::Fill,
        DataKernel::Gather,
        DataKernel::WriteRows,
    ];
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
        // 5 movement, 5 + 8 reduce, 6 arg, 3 cumsum, 6 topk.
        assert_eq!(keys.len(), 5 + 13 + 6 + 3 + 6);
        let names: std::collections::HashSet<_> = keys.iter().map(|&k| spec(k).name).collect();
        assert_eq!(names.len(), keys.len());
        assert_eq!(spec(DataKernel::ReduceInt(IntReduceOp::Max, IntType::I32)).name, "data_reduce_max_i32");
        assert_eq!(
            spec(DataKernel::TopK(WordType::U32, TopKOutput::Indices)).defines,
            &[("OUT", "OUT_INDICES"), ("T", "T_U32")]
        );
    }

    #[test]
    fn op_and_dtype_defines_match_the_name() {
        for k in keys() {
            let v = spec(k);
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
