//! Output-type inference and flop counts, one file per op family ([`OpFamily`]): each family's
//! file holds its shape rule (`infer`: checks the arity, dtypes and attributes of an [`Op`]
//! against its operand types and returns the node's [`TensorType`]) and, for compute-bound
//! families, its flop count (`flops`). `Graph::push` calls [`infer`] for every node, builders
//! and passes alike; the verifier calls it again to detect type drift; rlx-runtime's device
//! ranking sums [`flops`].

mod attention;
mod cast;
mod conv;
mod custom;
mod elementwise;
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

use crate::{DType, IrError, Op, OpFamily, Shape, ShapeList, TensorType, UnaryOp};

/// The output type of `op` applied to operands of types `inputs`, or the first problem found.
/// The result's element count and byte size are checked ([`Shape::check_size`]), so a node
/// whose output would overflow is `TooLarge`, never a wrapped shape.
pub fn infer(op: &Op, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    let ty = infer_type(op, inputs)?;
    ty.check_size(op.name())?;
    Ok(ty)
}

fn infer_type(op: &Op, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    match op.kind().family() {
        OpFamily::Leaf => leaf(op, inputs),
        OpFamily::Elementwise => elementwise::infer(op, inputs),
        OpFamily::Cast => cast::infer(op, inputs),
        OpFamily::Shape => shape::infer(op, inputs),
        OpFamily::Reduce => reduce::infer(op, inputs),
        OpFamily::Matmul => matmul::infer(op, inputs),
        OpFamily::Norm => norm::infer(op, inputs),
        OpFamily::Attention => attention::infer(op, inputs),
        OpFamily::Rope => rope::infer(op, inputs),
        OpFamily::Conv => conv::infer(op, inputs),
        OpFamily::Quant => quant::infer(op, inputs),
        OpFamily::Grouped => grouped::infer(op, inputs),
        OpFamily::Ssm => ssm::infer(op, inputs),
        OpFamily::Fft => fft::infer(op, inputs),
        OpFamily::Random => random::infer(op, inputs),
        OpFamily::State => state::infer(op, inputs),
        OpFamily::Custom => custom::infer(op, inputs),
    }
}

/// Flops of one node computing `op` on operands of types `inputs` into `out`, two per
/// multiply-add. Only the compute-bound families count (matmul, attention, convolution,
/// quantized and grouped matmul, the scans, FFT); the others are bandwidth-bound and give 0
/// (a cost model counts their bytes instead). A missing operand counts as an empty shape.
pub fn flops(op: &Op, inputs: &[&TensorType], out: &TensorType) -> f64 {
    match op.kind().family() {
        OpFamily::Matmul => matmul::flops(op, inputs, out),
        OpFamily::Attention => attention::flops(op, inputs, out),
        OpFamily::Conv => conv::flops(op, inputs, out),
        OpFamily::Quant => quant::flops(op, inputs, out),
        OpFamily::Grouped => grouped::flops(op, inputs, out),
        OpFamily::Ssm => ssm::flops(op, inputs, out),
        OpFamily::Fft => fft::flops(op, inputs, out),
        OpFamily::Leaf
        | OpFamily::Elementwise
        | OpFamily::Cast
        | OpFamily::Shape
        | OpFamily::Reduce
        | OpFamily::Norm
        | OpFamily::Rope
        | OpFamily::Random
        | OpFamily::State
        | OpFamily::Custom => 0.0,
    }
}

/// Inputs, params and constants. States are leaves too, but of the state family.
fn leaf(op: &Op, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    let name = op.name();
    match op {
        Op::Constant(t) => {
            arity(name, inputs, 0)?;
            Ok(TensorType::new(t.shape().clone(), t.dtype()))
        }
        _ => Err(leaf_type(name)),
    }
}

/// Inputs, params and states carry their own type: they have no shape rule.
pub(crate) fn leaf_type(name: &'static str) -> IrError {
    IrError::Attribute {
        op: name,
        attr: "type",
        shape: Shape::scalar(),
        reason: "inputs, params and states carry their own type; create them with \
                 Graph::input / Graph::param / Graph::state (or Graph::push_leaf)"
            .into(),
    }
}

/// A family's `infer` got an op of another family: `infer_type` dispatches by
/// [`crate::OpKind::family`], so this is a bug in rlx-ir, reported rather than a panic.
pub(crate) fn not_in_family(op: &Op, inputs: &[&TensorType], family: OpFamily) -> IrError {
    mismatch(op.name(), inputs, format!("internal: not a {} op", family.name()))
}

/// The dims of operand `i`, or none when it is missing (for flop counts).
pub(crate) fn dims<'a>(inputs: &[&'a TensorType], i: usize) -> &'a [usize] {
    inputs.get(i).map_or(&[][..], |t| t.shape.dims())
}

/// Where output element `i` (row-major over `out`) of a numpy broadcast reads the contiguous
/// operand of shape `input`: at `(i / div) % modulus`, returned as `(div, modulus)`. `Some`
/// when the operand's dims that are not broadcast form one run of `out`'s dims (size-1 output
/// dims ignored): the whole tensor, a scalar, a row such as a bias, a column. `None` for other
/// patterns (`[M, 1, K]` read as `[M, N, K]`) or operands that do not broadcast to `out`.
/// Fused elementwise kernels index their inputs this way.
pub fn broadcast_run(out: &[usize], input: &[usize]) -> Option<(u64, u64)> {
    if input.len() > out.len() {
        return None;
    }
    let lead = out.len() - input.len();
    // (size, present) of each output dim of size > 1.
    let mut dims = Vec::with_capacity(out.len());
    for (d, &n) in out.iter().enumerate() {
        let x = if d >= lead { input[d - lead] } else { 1 };
        if x != 1 && x != n {
            return None;
        }
        if n != 1 {
            dims.push((n as u64, x == n));
        }
    }
    let first = dims.iter().position(|&(_, p)| p);
    let last = dims.iter().rposition(|&(_, p)| p);
    let (Some(first), Some(last)) = (first, last) else { return Some((1, 1)) };
    if dims[first..=last].iter().any(|&(_, p)| !p) {
        return None;
    }
    let modulus = dims[first..=last].iter().map(|&(n, _)| n).product();
    let div = dims[last + 1..].iter().map(|&(n, _)| n).product();
    Some((div, modulus))
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

/// `axis < rank`.
pub(crate) fn check_axis(op: &'static str, shape: &Shape, axis: usize) -> Result<(), IrError> {
    if axis >= shape.rank() {
        return Err(attr_err(
            op,
            "axis",
            shape,
            format!(
                "axis {axis} is out of range for rank {}; use 0..{} (or negative from the end)",
                shape.rank(),
                shape.rank()
            ),
        ));
    }
    Ok(())
}

/// Axes sorted ascending, unique, each `< rank`.
pub(crate) fn check_axes(
    op: &'static str,
    attr: &'static str,
    shape: &Shape,
    axes: &[usize],
) -> Result<(), IrError> {
    for (i, &a) in axes.iter().enumerate() {
        if a >= shape.rank() {
            return Err(attr_err(
                op,
                attr,
                shape,
                format!("axis {a} is out of range for rank {}; use 0..{}", shape.rank(), shape.rank()),
            ));
        }
        if i > 0 && axes[i - 1] >= a {
            return Err(attr_err(
                op,
                attr,
                shape,
                format!("{axes:?} must be sorted ascending without repeats"),
            ));
        }
    }
    Ok(())
}

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

#[cfg(test)]
mod flops_tests;
#[cfg(test)]
mod broadcast_run_tests {
    use super::broadcast_run;

    #[test]
    fn runs_of_present_dims_index_by_div_and_modulus() {
        // The whole tensor, a scalar, a bias row, a column, a middle run.
        assert_eq!(broadcast_run(&[4, 5], &[4, 5]), Some((1, 20)));
        assert_eq!(broadcast_run(&[4, 5], &[]), Some((1, 1)));
        assert_eq!(broadcast_run(&[4, 5], &[1, 1]), Some((1, 1)));
        assert_eq!(broadcast_run(&[4, 5], &[5]), Some((1, 5)));
        assert_eq!(broadcast_run(&[4, 5], &[4, 1]), Some((5, 4)));
        assert_eq!(broadcast_run(&[2, 3, 4], &[3, 1]), Some((4, 3)));
        // Size-1 output dims do not break a run.
        assert_eq!(broadcast_run(&[2, 1, 3], &[2, 1, 3]), Some((1, 6)));
        // Two separate runs, or sizes that do not broadcast.
        assert_eq!(broadcast_run(&[2, 3, 4], &[2, 1, 4]), None);
        assert_eq!(broadcast_run(&[4, 5], &[3]), None);
        assert_eq!(broadcast_run(&[5], &[2, 5]), None);
        // Every element of the output reads inside the operand.
        for (out, input) in [(vec![3, 4, 5], vec![4, 1]), (vec![3, 4, 5], vec![5]), (vec![6, 2], vec![6, 1])]
        {
            let (div, m) = broadcast_run(&out, &input).unwrap();
            let n: usize = out.iter().product();
            let numel: u64 = input.iter().product::<usize>() as u64;
            assert!((0..n as u64).all(|i| (i / div) % m < numel));
        }
    }
}
