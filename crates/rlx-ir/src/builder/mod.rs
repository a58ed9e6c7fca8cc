//! Builder methods on [`Graph`]: one per op (the primitives; composites of several ops are
//! rlx-nn's). Every method goes through `Graph::push`, so operands are checked and the output
//! type inferred.
//! Axes are `isize`: negative values count from the end, as in PyTorch.

mod attention;
mod conv;
mod custom;
mod fft;
mod grouped;
mod matmul;
mod norm;
mod quant;
mod random;
mod reduce;
mod rope;
mod shape;
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

    /// `a op b` elementwise, the operands broadcast together (NumPy rules).
    pub fn binary(&mut self, op: BinaryOp, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
        self.push(Op::Binary(op), &[a, b])
    }

    /// `op(x)` elementwise.
    pub fn unary(&mut self, op: UnaryOp, x: NodeId) -> Result<NodeId, IrError> {
        self.push(Op::Unary(op), &[x])
    }

    /// `a op b` elementwise, broadcast, giving Bool.
    pub fn compare(&mut self, op: CompareOp, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
        self.push(Op::Compare(op), &[a, b])
    }

    /// `cond ? a : b`, all three broadcast together; `cond` is Bool.
    pub fn where_(&mut self, cond: NodeId, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
        self.push(Op::Where, &[cond, a, b])
    }

    /// `x` converted to `dtype` (floats to integers round toward zero and saturate; Bool is 0
    /// or 1).
    pub fn cast(&mut self, x: NodeId, dtype: DType) -> Result<NodeId, IrError> {
        self.push(Op::Cast(dtype), &[x])
    }

    /// The shape of `id`, cloned, with `op` named in an unknown-node error.
    pub fn shape_of(&self, op: &'static str, id: NodeId) -> Result<Shape, IrError> {
        Ok(self.ty_for(op, id)?.shape.clone())
    }
}

/// One shorthand method per variant of an elementwise op enum: `$name(operands)` is
/// `self.$general($Enum::$variant, operands)`.
macro_rules! shorthands {
    ($general:ident($Enum:ident; $a:ident, $b:ident): $($(#[$doc:meta])* $name:ident => $variant:ident),+ $(,)?) => {
        impl Graph {
            $(
                $(#[$doc])*
                #[doc = concat!("[`Graph::", stringify!($general), "`] with [`", stringify!($Enum), "::", stringify!($variant), "`].")]
                pub fn $name(&mut self, $a: NodeId, $b: NodeId) -> Result<NodeId, IrError> {
                    self.$general($Enum::$variant, $a, $b)
                }
            )+
        }
    };
    ($general:ident($Enum:ident; $x:ident): $($(#[$doc:meta])* $name:ident => $variant:ident),+ $(,)?) => {
        impl Graph {
            $(
                $(#[$doc])*
                #[doc = concat!("[`Graph::", stringify!($general), "`] with [`", stringify!($Enum), "::", stringify!($variant), "`].")]
                pub fn $name(&mut self, $x: NodeId) -> Result<NodeId, IrError> {
                    self.$general($Enum::$variant, $x)
                }
            )+
        }
    };
}

shorthands!(binary(BinaryOp; a, b):
    add => Add, sub => Sub, mul => Mul, div => Div, pow => Pow, maximum => Maximum, minimum => Minimum,
);
shorthands!(unary(UnaryOp; x):
    gelu => Gelu, gelu_tanh => GeluTanh, silu => Silu, relu => Relu, sigmoid => Sigmoid, tanh => Tanh,
    exp => Exp, log => Log, sqrt => Sqrt, rsqrt => Rsqrt, neg => Neg, abs => Abs, sin => Sin,
    cos => Cos, recip => Recip, square => Square,
);
shorthands!(compare(CompareOp; a, b):
    /// Elementwise `a == b` (Bool).
    eq => Eq,
    /// Elementwise `a != b` (Bool).
    ne => Ne,
    lt => Lt, le => Le, gt => Gt, ge => Ge,
);

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
