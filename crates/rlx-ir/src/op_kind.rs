//! [`OpKind`], the payload-free tag of an [`Op`], and the queries made on kinds.

use crate::{ArgReduceOp, Op, RandomDist};

/// Payload-free tag of an [`Op`], for capability sets and tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    Input,
    Param,
    Constant,
    State,
    WriteRows,
    Unary,
    Binary,
    Compare,
    Where,
    Cast,
    Reduce,
    ArgReduce,
    Cumsum,
    TopK,
    Reshape,
    Permute,
    Slice,
    Concat,
    Expand,
    Gather,
    Pad,
    Reverse,
    MatMul,
    QuantMatMul,
    QuantGather,
    GroupedMatMul,
    SelectiveScan,
    GatedDeltaRule,
    Fft,
    LayerNorm,
    RmsNorm,
    Softmax,
    LogSoftmax,
    Attention,
    Rope,
    Conv2d,
    Pool2d,
    Upsample2x,
    Random,
    FusedMatMul,
    AddNorm,
    FusedElementwise,
    Custom,
}

impl Op {
    pub fn kind(&self) -> OpKind {
        match self {
            Op::Input { .. } => OpKind::Input,
            Op::Param { .. } => OpKind::Param,
            Op::Constant(_) => OpKind::Constant,
            Op::State { .. } => OpKind::State,
            Op::WriteRows { .. } => OpKind::WriteRows,
            Op::Unary(_) => OpKind::Unary,
            Op::Binary(_) => OpKind::Binary,
            Op::Compare(_) => OpKind::Compare,
            Op::Where => OpKind::Where,
            Op::Cast(_) => OpKind::Cast,
            Op::Reduce { .. } => OpKind::Reduce,
            Op::ArgReduce { .. } => OpKind::ArgReduce,
            Op::Cumsum { .. } => OpKind::Cumsum,
            Op::TopK { .. } => OpKind::TopK,
            Op::Reshape(_) => OpKind::Reshape,
            Op::Permute(_) => OpKind::Permute,
            Op::Slice { .. } => OpKind::Slice,
            Op::Concat { .. } => OpKind::Concat,
            Op::Expand(_) => OpKind::Expand,
            Op::Gather { .. } => OpKind::Gather,
            Op::Pad { .. } => OpKind::Pad,
            Op::Reverse { .. } => OpKind::Reverse,
            Op::MatMul { .. } => OpKind::MatMul,
            Op::QuantMatMul { .. } => OpKind::QuantMatMul,
            Op::QuantGather { .. } => OpKind::QuantGather,
            Op::GroupedMatMul => OpKind::GroupedMatMul,
            Op::SelectiveScan { .. } => OpKind::SelectiveScan,
            Op::GatedDeltaRule { .. } => OpKind::GatedDeltaRule,
            Op::Fft { .. } => OpKind::Fft,
            Op::LayerNorm { .. } => OpKind::LayerNorm,
            Op::RmsNorm { .. } => OpKind::RmsNorm,
            Op::Softmax => OpKind::Softmax,
            Op::LogSoftmax => OpKind::LogSoftmax,
            Op::Attention(_) => OpKind::Attention,
            Op::Rope { .. } => OpKind::Rope,
            Op::Conv2d { .. } => OpKind::Conv2d,
            Op::Pool2d { .. } => OpKind::Pool2d,
            Op::Upsample2x => OpKind::Upsample2x,
            Op::Random { .. } => OpKind::Random,
            Op::FusedMatMul { .. } => OpKind::FusedMatMul,
            Op::AddNorm { .. } => OpKind::AddNorm,
            Op::FusedElementwise(_) => OpKind::FusedElementwise,
            Op::Custom(_) => OpKind::Custom,
        }
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
            Op::QuantMatMul { .. } => Some(1),
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
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Input => "input",
            OpKind::Param => "param",
            OpKind::Constant => "constant",
            OpKind::State => "state",
            OpKind::WriteRows => "write_rows",
            OpKind::Unary => "unary",
            OpKind::Binary => "binary",
            OpKind::Compare => "compare",
            OpKind::Where => "where",
            OpKind::Cast => "cast",
            OpKind::Reduce => "reduce",
            OpKind::ArgReduce => "arg_reduce",
            OpKind::Cumsum => "cumsum",
            OpKind::TopK => "topk",
            OpKind::Reshape => "reshape",
            OpKind::Permute => "permute",
            OpKind::Slice => "slice",
            OpKind::Concat => "concat",
            OpKind::Expand => "expand",
            OpKind::Gather => "gather",
            OpKind::Pad => "pad",
            OpKind::Reverse => "reverse",
            OpKind::MatMul => "matmul",
            OpKind::QuantMatMul => "quant_matmul",
            OpKind::QuantGather => "quant_gather",
            OpKind::GroupedMatMul => "grouped_matmul",
            OpKind::SelectiveScan => "selective_scan",
            OpKind::GatedDeltaRule => "gated_delta_rule",
            OpKind::Fft => "fft",
            OpKind::LayerNorm => "layer_norm",
            OpKind::RmsNorm => "rms_norm",
            OpKind::Softmax => "softmax",
            OpKind::LogSoftmax => "log_softmax",
            OpKind::Attention => "attention",
            OpKind::Rope => "rope",
            OpKind::Conv2d => "conv2d",
            OpKind::Pool2d => "pool2d",
            OpKind::Upsample2x => "upsample2x",
            OpKind::Random => "random",
            OpKind::FusedMatMul => "fused_matmul",
            OpKind::AddNorm => "add_norm",
            OpKind::FusedElementwise => "fused_elementwise",
            OpKind::Custom => "custom",
        }
    }
}
