//! Queries on [`Op`] and [`OpKind`] (the payload-free tag generated from `Op` in `op.rs`), and
//! [`OpFamily`], the family each kind belongs to.

use crate::{ArgReduceOp, Op, OpKind, RandomDist};

impl Op {
    /// The op's payload-free tag.
    pub fn kind(&self) -> OpKind {
        OpKind::from(self)
    }

    /// Short lower-case name used in errors and the text dump.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Unary(u) => u.name(),
            Op::Binary(b) => b.name(),
            Op::Compare(c) => c.name(),
            Op::Reduce { op, .. } => op.name(),
            Op::ArgReduce { op: ArgReduceOp::ArgMax, .. } => "argmax",
            Op::ArgReduce { op: ArgReduceOp::ArgMin, .. } => "argmin",
            Op::Random { dist: RandomDist::Uniform, .. } => "random_uniform",
            Op::Random { dist: RandomDist::Normal, .. } => "random_normal",
            _ => self.kind().name(),
        }
    }

    /// True for ops with no inputs (input, param, constant, state).
    pub fn is_leaf(&self) -> bool {
        matches!(self, Op::Input { .. } | Op::Param { .. } | Op::Constant(_) | Op::State { .. })
    }

    /// The name of an input, param or state leaf.
    pub fn leaf_name(&self) -> Option<&str> {
        match self {
            Op::Input { name } | Op::Param { name } | Op::State { name } => Some(name),
            _ => None,
        }
    }

    /// True for ops whose result is their first operand's storage, written in place
    /// ([`Op::WriteRows`]): the memory planner aliases them like views, and dead-code
    /// elimination keeps them, since the write outlives the run.
    pub fn writes_in_place(&self) -> bool {
        matches!(self, Op::WriteRows { .. })
    }

    /// True for ops that only reinterpret their input's memory (reshape): the memory planner
    /// may alias their output with their input.
    pub fn is_view(&self) -> bool {
        matches!(self, Op::Reshape(_))
    }

    /// The operand an op reads as packed quantized blocks (U8 bytes it decodes itself), if any:
    /// dtype legalization must leave that operand's bytes as they are instead of widening them.
    pub fn packed_operand(&self) -> Option<usize> {
        match self {
            Op::QuantMatMul { .. } | Op::QuantGroupedMatMul { .. } => Some(1),
            Op::QuantGather { .. } => Some(0),
            _ => None,
        }
    }

    /// True for pointwise ops (each output element depends on the same-index, broadcast input
    /// elements only).
    pub fn is_elementwise(&self) -> bool {
        matches!(
            self,
            Op::Unary(_) | Op::Binary(_) | Op::Compare(_) | Op::Where | Op::Cast(_) | Op::FusedElementwise(_)
        )
    }
}

impl OpKind {
    /// Short lower-case name ("matmul", "layer_norm"), the kind's name in errors and tables.
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// Every op kind, in declaration order.
    pub fn all() -> impl Iterator<Item = OpKind> {
        <OpKind as strum::IntoEnumIterator>::iter()
    }

    /// The family this kind belongs to: the name of its file or folder in every crate.
    pub fn family(self) -> OpFamily {
        use OpFamily as F;
        match self {
            OpKind::Input | OpKind::Param | OpKind::Constant => F::Leaf,
            OpKind::Unary | OpKind::Binary | OpKind::Compare | OpKind::Where | OpKind::FusedElementwise => {
                F::Elementwise
            }
            OpKind::Cast => F::Cast,
            OpKind::Reshape
            | OpKind::Permute
            | OpKind::Slice
            | OpKind::Concat
            | OpKind::Expand
            | OpKind::Gather
            | OpKind::ScatterAdd
            | OpKind::Pad
            | OpKind::Reverse => F::Shape,
            OpKind::Reduce | OpKind::ArgReduce | OpKind::Cumsum | OpKind::TopK => F::Reduce,
            OpKind::MatMul | OpKind::FusedMatMul => F::Matmul,
            OpKind::LayerNorm | OpKind::RmsNorm | OpKind::AddNorm | OpKind::Softmax | OpKind::LogSoftmax => {
                F::Norm
            }
            OpKind::Attention | OpKind::AttentionGrad => F::Attention,
            OpKind::Rope => F::Rope,
            OpKind::Conv2d | OpKind::Pool2d | OpKind::Upsample2x => F::Conv,
            OpKind::QuantMatMul | OpKind::QuantGather => F::Quant,
            OpKind::GroupedMatMul | OpKind::QuantGroupedMatMul => F::Grouped,
            OpKind::SelectiveScan | OpKind::GatedDeltaRule => F::Ssm,
            OpKind::Fft => F::Fft,
            OpKind::Random => F::Random,
            OpKind::State | OpKind::WriteRows => F::State,
            OpKind::Custom => F::Custom,
        }
    }
}

/// An op family: the ops that share one file or folder name in every crate (rlx-ir
/// `infer/<family>.rs`, rlx-cpu `ops/<family>.rs`, rlx-gpu `catalog/<family>/`,
/// `lower/<family>.rs` and `kernels/<family>/`, rlx-parity `cases/<family>.rs`).
/// [`OpKind::family`] puts every kind in exactly one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, strum::EnumIter, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum OpFamily {
    /// Graph leaves with no computation of their own: inputs, params and constants.
    Leaf,
    /// Unary, binary and compare ops, `where`, and fused elementwise chains.
    Elementwise,
    /// Conversions between dtypes.
    Cast,
    /// Reshape, transpose, slice, concat, gather and the other data movements.
    Shape,
    /// Reductions over axes, arg-reductions, top-k, cumulative sums.
    Reduce,
    /// Matrix products and their fused and batched forms.
    Matmul,
    /// LayerNorm, RMSNorm, softmax and their relatives.
    Norm,
    /// Scaled dot-product attention.
    Attention,
    /// Rotary position embeddings.
    Rope,
    /// Convolutions, pooling, resizing.
    Conv,
    /// Matmuls and gathers on packed quantized weights, low-rank (LoRA) matmuls.
    Quant,
    /// Grouped (mixture-of-experts) matmuls.
    Grouped,
    /// State-space and linear-recurrence scans (Mamba, gated delta rule).
    Ssm,
    /// Fourier transforms.
    Fft,
    /// Counter-based random numbers.
    Random,
    /// Device-resident state that outlives a run (`write_rows`).
    State,
    /// User-defined ops (a shape rule, a CPU reference and a WGSL kernel).
    Custom,
}

impl OpFamily {
    /// The family's file and folder name ("shape", "norm", "matmul").
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// Every family, in declaration order.
    pub fn all() -> impl Iterator<Item = OpFamily> {
        <OpFamily as strum::IntoEnumIterator>::iter()
    }

    /// The kinds of this family, in declaration order.
    pub fn kinds(self) -> impl Iterator<Item = OpKind> {
        OpKind::all().filter(move |k| k.family() == self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names errors and tables used before `OpKind` was generated from `Op`: they must not
    /// change (golden files, error messages and kernel tables spell them).
    #[test]
    fn kind_names_are_the_historic_ones() {
        let names: Vec<&str> = OpKind::all().map(OpKind::name).collect();
        assert_eq!(
            names,
            [
                "input",
                "param",
                "constant",
                "state",
                "write_rows",
                "unary",
                "binary",
                "compare",
                "where",
                "cast",
                "reduce",
                "arg_reduce",
                "cumsum",
                "topk",
                "reshape",
                "permute",
                "slice",
                "concat",
                "expand",
                "gather",
                "scatter_add",
                "pad",
                "reverse",
                "matmul",
                "quant_matmul",
                "quant_gather",
                "grouped_matmul",
                "quant_grouped_matmul",
                "selective_scan",
                "gated_delta_rule",
                "fft",
                "layer_norm",
                "rms_norm",
                "softmax",
                "log_softmax",
                "attention",
                "attention_grad",
                "rope",
                "conv2d",
                "pool2d",
                "upsample2x",
                "random",
                "fused_matmul",
                "add_norm",
                "fused_elementwise",
                "custom",
            ]
        );
    }

    /// The families of the canonical table (docs/architecture.md), each with its kinds: every
    /// kind lands in exactly one, and no family is empty.
    #[test]
    fn every_kind_is_in_exactly_one_family() {
        let table: Vec<(&str, Vec<&str>)> =
            OpFamily::all().map(|f| (f.name(), f.kinds().map(OpKind::name).collect())).collect();
        let expected: Vec<(&str, Vec<&str>)> = vec![
            ("leaf", vec!["input", "param", "constant"]),
            ("elementwise", vec!["unary", "binary", "compare", "where", "fused_elementwise"]),
            ("cast", vec!["cast"]),
            (
                "shape",
                vec![
                    "reshape",
                    "permute",
                    "slice",
                    "concat",
                    "expand",
                    "gather",
                    "scatter_add",
                    "pad",
                    "reverse",
                ],
            ),
            ("reduce", vec!["reduce", "arg_reduce", "cumsum", "topk"]),
            ("matmul", vec!["matmul", "fused_matmul"]),
            ("norm", vec!["layer_norm", "rms_norm", "softmax", "log_softmax", "add_norm"]),
            ("attention", vec!["attention", "attention_grad"]),
            ("rope", vec!["rope"]),
            ("conv", vec!["conv2d", "pool2d", "upsample2x"]),
            ("quant", vec!["quant_matmul", "quant_gather"]),
            ("grouped", vec!["grouped_matmul", "quant_grouped_matmul"]),
            ("ssm", vec!["selective_scan", "gated_delta_rule"]),
            ("fft", vec!["fft"]),
            ("random", vec!["random"]),
            ("state", vec!["state", "write_rows"]),
            ("custom", vec!["custom"]),
        ];
        assert_eq!(table, expected);
        let total: usize = table.iter().map(|(_, k)| k.len()).sum();
        assert_eq!(total, OpKind::all().count());
    }
}
