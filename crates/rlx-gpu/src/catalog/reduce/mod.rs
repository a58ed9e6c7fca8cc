//! Kernel family "reduce": reductions over any axes, argmax/argmin, cumsum and top-k. Its keys
//! ([`ReduceKernel`]), variants and params structs ([`params`]).
//!
//! Every kernel of this family reads 32-bit words (`array<u32>` bindings) and reinterprets them
//! with `bitcast` where the dtype matters.

pub mod params;
#[cfg(test)]
mod params_tests;

pub use super::WordType;
use super::{name, params_of, upper, Spec, IN_OUT};
use params::{AxisParams, ReduceParams, TopKParams};
use rlx_ir::{ArgReduceOp, ReduceOp, TopKOutput};

unit_keys! {
    /// The integer word types.
    pub enum IntType {
        I32,
        U32,
    }
}

unit_keys! {
    /// Reductions that integers take (mean needs a float).
    pub enum IntReduceOp {
        Sum,
        Prod,
        Max,
        Min,
    }
}

/// Kernels of the reduce family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceKernel {
    /// `reduce.wgsl`, [`ReduceParams`]: f32 reduction over any axes.
    F32(ReduceOp),
    /// `reduce.wgsl`, [`ReduceParams`]: wrapping integer reduction over any axes.
    Int(IntReduceOp, IntType),
    /// `arg_reduce.wgsl`, [`AxisParams`]: index of the extreme along an axis, as i32.
    Arg(ArgReduceOp, WordType),
    /// `cumsum.wgsl`, [`AxisParams`]: inclusive prefix sum along an axis.
    Cumsum(WordType),
    /// `topk.wgsl`, [`TopKParams`]: the k largest or smallest along an axis, sorted.
    TopK(WordType, TopKOutput),
}

const REDUCE_SRC: &str = kernel_src!("reduce/reduce.wgsl", "include/line_main.wgsl");
const ARG_REDUCE_SRC: &str =
    kernel_src!("reduce/arg_reduce.wgsl", "include/axis_params.wgsl", "include/line_main.wgsl");
const CUMSUM_SRC: &str =
    kernel_src!("reduce/cumsum.wgsl", "include/axis_params.wgsl", "include/line_main.wgsl");
const TOPK_SRC: &str = kernel_src!("reduce/topk.wgsl", "include/line_main.wgsl");

impl IntReduceOp {
    pub(crate) fn name(self) -> &'static str {
        match self {
            IntReduceOp::Sum => "sum",
            IntReduceOp::Prod => "prod",
            IntReduceOp::Max => "max",
            IntReduceOp::Min => "min",
        }
    }
}

impl IntType {
    fn word(self) -> WordType {
        match self {
            IntType::I32 => WordType::I32,
            IntType::U32 => WordType::U32,
        }
    }
}

/// `<kernel>_<op>_<dtype>` with the `OP` and `T` defines.
fn op_t(kernel: &str, op: &'static str, t: WordType) -> (std::borrow::Cow<'static, str>, super::Defines) {
    (name(&[kernel, op, t.name()]), vec![("OP", upper("OP_", op)), t.define()])
}

/// The op part of an arg-reduction's name and `OP` define.
pub(crate) fn arg_name(op: ArgReduceOp) -> &'static str {
    match op {
        ArgReduceOp::ArgMax => "argmax",
        ArgReduceOp::ArgMin => "argmin",
    }
}

/// The output part of a top-k variant's name and `OUT` define.
pub(crate) fn topk_name(output: TopKOutput) -> &'static str {
    match output {
        TopKOutput::Values => "values",
        TopKOutput::Indices => "indices",
    }
}

/// The variant of `k`.
pub(crate) fn spec(k: ReduceKernel) -> Spec {
    let reduce = |parts| {
        Spec::wg256(parts, "kernels/reduce/reduce.wgsl", REDUCE_SRC, IN_OUT, params_of::<ReduceParams>())
    };
    match k {
        ReduceKernel::F32(op) => reduce(op_t("reduce", op.name(), WordType::F32)),
        ReduceKernel::Int(op, t) => reduce(op_t("reduce", op.name(), t.word())),
        ReduceKernel::Arg(op, t) => {
            let op = arg_name(op);
            let file = "kernels/reduce/arg_reduce.wgsl";
            Spec::wg256(op_t("", op, t), file, ARG_REDUCE_SRC, IN_OUT, params_of::<AxisParams>())
        }
        ReduceKernel::Cumsum(t) => {
            let parts = (name(&["cumsum", t.name()]), vec![t.define()]);
            Spec::wg256(parts, "kernels/reduce/cumsum.wgsl", CUMSUM_SRC, IN_OUT, params_of::<AxisParams>())
        }
        ReduceKernel::TopK(t, output) => {
            let out = topk_name(output);
            let parts = (name(&["topk", out, t.name()]), vec![("OUT", upper("OUT_", out)), t.define()]);
            Spec::wg256(parts, "kernels/reduce/topk.wgsl", TOPK_SRC, IN_OUT, params_of::<TopKParams>())
        }
    }
}

/// Every key of this family, in a fixed order.
pub(crate) fn keys() -> Vec<ReduceKernel> {
    let mut keys = Vec::new();
    for op in [ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod] {
        keys.push(ReduceKernel::F32(op));
    }
    for op in IntReduceOp::ALL {
        keys.extend(IntType::ALL.iter().map(|&t| ReduceKernel::Int(op, t)));
    }
    for op in [ArgReduceOp::ArgMax, ArgReduceOp::ArgMin] {
        keys.extend(WordType::ALL.iter().map(|&t| ReduceKernel::Arg(op, t)));
    }
    keys.extend(WordType::ALL.iter().map(|&t| ReduceKernel::Cumsum(t)));
    for output in [TopKOutput::Values, TopKOutput::Indices] {
        keys.extend(WordType::ALL.iter().map(|&t| ReduceKernel::TopK(t, output)));
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn family_has_every_combination_once() {
        let keys = keys();
        // 5 + 8 reduce, 6 arg, 3 cumsum, 6 topk.
        assert_eq!(keys.len(), 13 + 6 + 3 + 6);
        let names: std::collections::HashSet<_> = keys.iter().map(|&k| spec(k).name).collect();
        assert_eq!(names.len(), keys.len());
        assert_eq!(spec(ReduceKernel::Int(IntReduceOp::Max, IntType::I32)).name, "reduce_max_i32");
        assert_eq!(spec(ReduceKernel::Arg(ArgReduceOp::ArgMin, WordType::U32)).name, "argmin_u32");
        let topk = spec(ReduceKernel::TopK(WordType::U32, TopKOutput::Indices));
        assert_eq!((topk.define("OUT"), topk.define("T")), (Some("OUT_INDICES"), Some("T_U32")));
    }

    #[test]
    fn op_and_dtype_defines_match_the_name() {
        for k in keys() {
            let v = spec(k);
            let get = |n: &str| v.define(n).map(str::to_ascii_lowercase);
            if let Some(t) = get("T") {
                assert!(v.name.ends_with(t.trim_start_matches("t")), "{}: {t}", v.name);
            }
            if let Some(op) = get("OP") {
                let op = op.trim_start_matches("op_");
                assert!(
                    v.name.starts_with(&format!("{op}_")) || v.name.contains(&format!("_{op}_")),
                    "{}: {op}",
                    v.name
                );
            }
        }
    }
}
