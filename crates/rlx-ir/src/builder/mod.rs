//! Builder methods on [`Graph`]: one per op (the primitives; composites of several ops are
//! rlx-nn's). Every method goes through `Graph::push`, so operands are checked and the output
//! type inferred.
//! Axes are `isize`: negative values count from the end, as in PyTorch.

mod custom;
mod fft;
mod grouped;
mod nn;
mod quant;
mod random;
mod shape_ops;
mod ssm;
mod state;

pub use fft::complex_rows;

use crate::{BinaryOp, CompareOp, DType, Graph, IrError, NodeId, Op, Shape, Tensor, TensorType, UnaryOp};

impl Graph {
    /// A value fed on every run.
    pub fn input(&mut self, name: &str, dims: &[usize], dtype: DType) -> Result<NodeId, IrError> {
        self.push_leaf(Op::Input { name: name.to_string() }, TensorType::new(dims, dtype))
    }

    /// A weight, set once on the executable.
    pub fn param(&mut self, name: &str, dims: &[usize], dtype: DType) -> Result<NodeId, IrError> {
        self.push_leaf(Op::Param { name: name.to_string() }, TensorType::new(dims, dtype))
    }

    /// Data baked into the graph.
    pub fn constant(&mut self, t: Tensor) -> Result<NodeId, IrError> {
        self.push(Op::Constant(t), &[])
    }

    /// A rank-0 F32 constant.
    pub fn scalar(&mut self, x: f32) -> Result<NodeId, IrError> {
        self.constant(Tensor::scalar_f32(x))
    }

    /// An F32 constant; `v` must have `dims.iter().product()` elements.
    pub fn constant_f32(&mut self, dims: &[usize], v: Vec<f32>) -> Result<NodeId, IrError> {
        self.constant(Tensor::from_f32(dims, v)?)
    }

    /// A constant of `dtype` and shape `dims` filled with `value` (converted like a cast).
    pub fn full(&mut self, dims: &[usize], dtype: DType, value: f64) -> Result<NodeId, IrError> {
        let n = Shape::new(dims).check_size("full", dtype)?;
        self.constant(Tensor::from_f64(dims, dtype, &vec![value; n])?)
    }

    pub fn binary(&mut self, op: BinaryOp, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
        self.push(Op::Binary(op), &[a, b])
    }
    pub fn add(&mut self, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
        self.binary(BinaryOp::Add, a, b)
    }
    pub fn sub(&mut self, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
        self.binary(BinaryOp::Sub, a, b)
    }
    pub fn mul(&mut self, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
        self.binary(BinaryOp::Mul, a, b)
    }
    pub fn div(&mut self, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
        self.binary(BinaryOp::Div, a, b)
    }
    pub fn pow(&mut self, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
        self.binary(BinaryOp::Pow, a, b)
    }
    pub fn maximum(&mut self, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
        self.binary(BinaryOp::Maximum, a, b)
    }
    pub fn minimum(&mut self, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
        self.binary(BinaryOp::Minimum, a, b)
    }

    pub fn unary(&mut self, op: UnaryOp, x: NodeId) -> Result<NodeId, IrError> {
        self.push(Op::Unary(op), &[x])
    }
    pub fn gelu(&mut self, x: NodeId) -> Result<NodeId, IrError> {
        self.unary(UnaryOp::Gelu, x)
    }
    pub fn gelu_tanh(&mut self, x: NodeId) -> Result<NodeId, IrError> {
        self.unary(UnaryOp::GeluTanh, x)
    }
    pub fn silu(&mut self, x: NodeId) -> Result<NodeId, IrError> {
        self.unary(UnaryOp::Silu, x)
    }
    pub fn relu(&mut self, x: NodeId) -> Result<NodeId, IrError> {
        self.unary(UnaryOp::Relu, x)
    }
    pub fn sigmoid(&mut self, x: NodeId) -> Result<NodeId, IrError> {
        self.unary(UnaryOp::Sigmoid, x)
    }
    pub fn tanh(&mut self, x: NodeId) -> Result<NodeId, IrError> {
        self.unary(UnaryOp::Tanh, x)
    }
    pub fn exp(&mut self, x: NodeId) -> Result<NodeId, IrError> {
        self.unary(UnaryOp::Exp, x)
    }
    pub fn log(&mut self, x: NodeId) -> Result<NodeId, IrError> {
        self.unary(UnaryOp::Log, x)
    }
    pub fn sqrt(&mut self, x: NodeId) -> Result<NodeId, IrError> {
        self.unary(UnaryOp::Sqrt, x)
    }
    pub fn rsqrt(&mut self, x: NodeId) -> Result<NodeId, IrError> {
        self.unary(UnaryOp::Rsqrt, x)
    }
    pub fn neg(&mut self, x: NodeId) -> Result<NodeId, IrError> {
        self.unary(UnaryOp::Neg, x)
    }
    pub fn abs(&mut self, x: NodeId) -> Result<NodeId, IrError> {
        self.unary(UnaryOp::Abs, x)
    }
    pub fn sin(&mut self, x: NodeId) -> Result<NodeId, IrError> {
        self.unary(UnaryOp::Sin, x)
    }
    pub fn cos(&mut self, x: NodeId) -> Result<NodeId, IrError> {
        self.unary(UnaryOp::Cos, x)
    }
    pub fn recip(&mut self, x: NodeId) -> Result<NodeId, IrError> {
        self.unary(UnaryOp::Recip, x)
    }
    pub fn square(&mut self, x: NodeId) -> Result<NodeId, IrError> {
        self.unary(UnaryOp::Square, x)
    }

    pub fn compare(&mut self, op: CompareOp, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
        self.push(Op::Compare(op), &[a, b])
    }
    /// Elementwise `a == b` (Bool).
    pub fn eq(&mut self, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
        self.compare(CompareOp::Eq, a, b)
    }
    /// Elementwise `a != b` (Bool).
    pub fn ne(&mut self, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
        self.compare(CompareOp::Ne, a, b)
    }
    pub fn lt(&mut self, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
        self.compare(CompareOp::Lt, a, b)
    }
    pub fn le(&mut self, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
        self.compare(CompareOp::Le, a, b)
    }
    pub fn gt(&mut self, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
        self.compare(CompareOp::Gt, a, b)
    }
    pub fn ge(&mut self, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
        self.compare(CompareOp::Ge, a, b)
    }

    /// `cond ? a : b`, all three broadcast together; `cond` is Bool.
    pub fn where_(&mut self, cond: NodeId, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
        self.push(Op::Where, &[cond, a, b])
    }

    pub fn cast(&mut self, x: NodeId, dtype: DType) -> Result<NodeId, IrError> {
        self.push(Op::Cast(dtype), &[x])
    }

    /// The shape of `id`, cloned, with `op` named in an unknown-node error.
    pub fn shape_of(&self, op: &'static str, id: NodeId) -> Result<Shape, IrError> {
        Ok(self.ty_for(op, id)?.shape.clone())
    }
}

/// Normalises a PyTorch-style axis (negative counts from the end) against `shape`'s rank.
pub(crate) fn norm_axis(op: &'static str, axis: isize, shape: &Shape) -> Result<usize, IrError> {
    let rank = shape.rank();
    let a = if axis < 0 { axis.checked_add(rank as isize) } else { Some(axis) };
    match a {
        Some(a) if a >= 0 && (a as usize) < rank => Ok(a as usize),
        _ => Err(IrError::Attribute {
            op,
            attr: "axis",
            shape: shape.clone(),
            reason: format!(
                "axis {axis} is out of range for rank {rank}; use -{rank}..{rank} (negative counts from the end)"
            ),
        }),
    }
}

/// Normalises and sorts a list of axes (duplicates are left for inference to report).
pub(crate) fn norm_axes(op: &'static str, axes: &[isize], shape: &Shape) -> Result<Vec<usize>, IrError> {
    let mut v = axes.iter().map(|&a| norm_axis(op, a, shape)).collect::<Result<Vec<_>, _>>()?;
    v.sort_unstable();
    Ok(v)
}
