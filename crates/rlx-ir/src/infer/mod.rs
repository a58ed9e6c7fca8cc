//! Output-type inference: checks the arity, dtypes and attributes of every [`Op`] against its
//! operand types and returns the node's [`TensorType`]. `Graph::push` calls [`infer`] for every
//! node, builders and passes alike; the verifier calls it again to detect type drift.

mod fft;
mod grouped;
mod nn;
mod quant;
mod random;
mod shape_ops;
mod state;

use crate::{DType, IrError, Op, Shape, ShapeList, TensorType, UnaryOp};

/// The output type of `op` applied to operands of types `inputs`, or the first problem found.
/// The result's element count and byte size are checked ([`Shape::check_size`]), so a node
/// whose output would overflow is `TooLarge`, never a wrapped shape.
pub fn infer(op: &Op, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    let ty = infer_type(op, inputs)?;
    ty.check_size(op.name())?;
    Ok(ty)
}

fn infer_type(op: &Op, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    let name = op.name();
    match op {
        Op::Input { .. } | Op::Param { .. } | Op::State { .. } => Err(IrError::Attribute {
            op: name,
            attr: "type",
            shape: Shape::scalar(),
            reason: "inputs, params and states carry their own type; create them with \
                     Graph::input / Graph::param / Graph::state (or Graph::push_leaf)"
                .into(),
        }),
        Op::Constant(t) => {
            arity(name, inputs, 0)?;
            Ok(TensorType::new(t.shape().clone(), t.dtype()))
        }
        Op::Unary(u) => {
            arity(name, inputs, 1)?;
            unary_dtype(name, *u, 0, inputs[0].dtype)?;
            Ok(inputs[0].clone())
        }
        Op::Binary(_) => {
            arity(name, inputs, 2)?;
            numeric(name, 0, inputs[0].dtype)?;
            same_dtype(name, inputs, 0, 1)?;
            let shape = broadcast_shapes(name, &inputs[0].shape, &inputs[1].shape)?;
            Ok(TensorType::new(shape, inputs[0].dtype))
        }
        Op::Compare(_) => {
            arity(name, inputs, 2)?;
            same_dtype(name, inputs, 0, 1)?;
            let shape = broadcast_shapes(name, &inputs[0].shape, &inputs[1].shape)?;
            Ok(TensorType::new(shape, DType::Bool))
        }
        Op::Where => {
            arity(name, inputs, 3)?;
            want_dtype(name, 0, inputs[0].dtype, DType::Bool)?;
            same_dtype(name, inputs, 1, 2)?;
            let s = broadcast_shapes(name, &inputs[0].shape, &inputs[1].shape)?;
            let s = broadcast_shapes(name, &s, &inputs[2].shape).map_err(|_| {
                mismatch(name, inputs, "cond, a and b must broadcast together; expand or reshape one")
            })?;
            Ok(TensorType::new(s, inputs[1].dtype))
        }
        Op::WriteRows { axis } => state::write_rows(name, *axis, inputs),
        Op::Cast(d) => {
            arity(name, inputs, 1)?;
            Ok(TensorType::new(inputs[0].shape.clone(), *d))
        }
        Op::Reduce { .. }
        | Op::ArgReduce { .. }
        | Op::Cumsum { .. }
        | Op::TopK { .. }
        | Op::Reshape(_)
        | Op::Permute(_)
        | Op::Slice { .. }
        | Op::Concat { .. }
        | Op::Expand(_)
        | Op::Gather { .. }
        | Op::Pad { .. }
        | Op::Reverse { .. } => shape_ops::infer_shape_op(op, inputs),
        Op::QuantMatMul { quant } => quant::quant_matmul(name, *quant, inputs),
        Op::QuantGather { quant } => quant::quant_gather(name, *quant, inputs),
        Op::GroupedMatMul => grouped::grouped_matmul(name, inputs),
        Op::Fft { .. } => fft::fft(name, inputs),
        Op::MatMul { .. }
        | Op::LayerNorm { .. }
        | Op::RmsNorm { .. }
        | Op::Softmax
        | Op::LogSoftmax
        | Op::Attention(_)
        | Op::Rope { .. }
        | Op::Conv2d { .. }
        | Op::Pool2d { .. }
        | Op::Upsample2x
        | Op::FusedMatMul { .. }
        | Op::AddNorm { .. }
        | Op::FusedElementwise(_) => nn::infer_nn_op(op, inputs),
        Op::Random { shape, .. } => random::infer_random(name, shape, inputs),
        Op::Custom(call) => call.op().infer(inputs).map_err(|reason| IrError::Custom {
            op: call.op().name().to_string(),
            shapes: inputs.iter().map(|t| t.shape.clone()).collect::<Vec<_>>().into(),
            reason,
        }),
    }
}

/// Numpy broadcasting of two shapes: align from the right; each pair of dims must be equal or
/// contain a 1. `op` names the caller in the error.
pub fn broadcast_shapes(op: &'static str, a: &Shape, b: &Shape) -> Result<Shape, IrError> {
    let rank = a.rank().max(b.rank());
    let mut out = vec![0; rank];
    for (i, o) in out.iter_mut().enumerate() {
        // Dim i of the result, counted from the right via the offsets of each operand.
        let da = (i + a.rank()).checked_sub(rank).map_or(1, |j| a.0[j]);
        let db = (i + b.rank()).checked_sub(rank).map_or(1, |j| b.0[j]);
        *o = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(IrError::ShapeMismatch {
                op,
                shapes: ShapeList(vec![a.clone(), b.clone()]),
                reason: format!(
                    "dim {i} of the broadcast result gets {da} from one operand and {db} from the \
                     other; sizes must be equal or 1 (reshape or expand one operand)"
                ),
            });
        };
    }
    Ok(Shape(out))
}

// ---- small checking helpers shared by the inference modules ----

pub(crate) fn shape_list(inputs: &[&TensorType]) -> ShapeList {
    ShapeList(inputs.iter().map(|t| t.shape.clone()).collect())
}

pub(crate) fn mismatch(op: &'static str, inputs: &[&TensorType], reason: impl Into<String>) -> IrError {
    IrError::ShapeMismatch { op, shapes: shape_list(inputs), reason: reason.into() }
}

pub(crate) fn attr_err(
    op: &'static str,
    attr: &'static str,
    shape: &Shape,
    reason: impl Into<String>,
) -> IrError {
    IrError::Attribute { op, attr, shape: shape.clone(), reason: reason.into() }
}

pub(crate) fn arity(op: &'static str, inputs: &[&TensorType], n: usize) -> Result<(), IrError> {
    if inputs.len() != n {
        return Err(IrError::Arity { op, expected: n.to_string(), got: inputs.len() });
    }
    Ok(())
}

pub(crate) fn arity_range(
    op: &'static str,
    inputs: &[&TensorType],
    lo: usize,
    hi: usize,
) -> Result<(), IrError> {
    if inputs.len() < lo || inputs.len() > hi {
        return Err(IrError::Arity { op, expected: format!("{lo} to {hi}"), got: inputs.len() });
    }
    Ok(())
}

pub(crate) fn want_dtype(
    op: &'static str,
    operand: usize,
    got: DType,
    expected: DType,
) -> Result<(), IrError> {
    if got != expected {
        return Err(IrError::DType { op, operand, got, expected: format!("{expected} (cast it first)") });
    }
    Ok(())
}

pub(crate) fn float(op: &'static str, operand: usize, got: DType) -> Result<(), IrError> {
    if !got.is_float() {
        return Err(IrError::DType { op, operand, got, expected: "f32, f16 or bf16 (cast it first)".into() });
    }
    Ok(())
}

pub(crate) fn numeric(op: &'static str, operand: usize, got: DType) -> Result<(), IrError> {
    if got == DType::Bool {
        return Err(IrError::DType {
            op,
            operand,
            got,
            expected: "a numeric dtype (f32, f16, bf16, i32, u32 or u8; cast bool first)".into(),
        });
    }
    Ok(())
}

pub(crate) fn unary_dtype(op: &'static str, u: UnaryOp, operand: usize, got: DType) -> Result<(), IrError> {
    if matches!(u, UnaryOp::Neg | UnaryOp::Abs) && got == DType::I32 {
        return Ok(());
    }
    if !got.is_float() {
        let expected = if matches!(u, UnaryOp::Neg | UnaryOp::Abs) {
            "f32, f16, bf16 or i32 (cast it first)"
        } else {
            "f32, f16 or bf16 (cast it first)"
        };
        return Err(IrError::DType { op, operand, got, expected: expected.into() });
    }
    Ok(())
}

/// Operands `a` and `b` must share a dtype.
pub(crate) fn same_dtype(
    op: &'static str,
    inputs: &[&TensorType],
    a: usize,
    b: usize,
) -> Result<(), IrError> {
    let (da, db) = (inputs[a].dtype, inputs[b].dtype);
    if da != db {
        return Err(IrError::DType {
            op,
            operand: b,
            got: db,
            expected: format!("{da}, the dtype of operand {a} (cast one of them)"),
        });
    }
    Ok(())
}
