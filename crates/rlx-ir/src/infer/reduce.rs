//! The reduce family: `Reduce` over axes, `ArgReduce`, `Cumsum` and `TopK` along one axis.
//! Shape rule (bandwidth-bound: no flop count).

use super::{arity, attr_err, check_axes, check_axis, float, not_in_family, numeric};
use crate::{DType, IrError, Op, OpFamily, ReduceOp, Shape, TensorType, TopKOutput};

pub(super) fn infer(op: &Op, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    let name = op.name();
    arity(name, inputs, 1)?;
    let x = inputs[0];
    let dims = x.shape.dims();
    match op {
        Op::Reduce { op: r, axes, keepdim } => {
            if *r == ReduceOp::Mean {
                float(name, 0, x.dtype)?;
            } else {
                numeric(name, 0, x.dtype)?;
            }
            if axes.is_empty() {
                return Err(attr_err(
                    name,
                    "axes",
                    &x.shape,
                    "the axes list is empty; pass the axes to reduce (or use reshape for a no-op)",
                ));
            }
            check_axes(name, "axes", &x.shape, axes)?;
            let out = dims
                .iter()
                .enumerate()
                .filter_map(|(i, &d)| match (axes.contains(&i), keepdim) {
                    (false, _) => Some(d),
                    (true, true) => Some(1),
                    (true, false) => None,
                })
                .collect::<Vec<_>>();
            Ok(TensorType::new(out, x.dtype))
        }
        Op::ArgReduce { axis, keepdim, .. } => {
            numeric(name, 0, x.dtype)?;
            check_axis(name, &x.shape, *axis)?;
            nonempty_axis(name, &x.shape, *axis)?;
            let mut out = dims.to_vec();
            if *keepdim {
                out[*axis] = 1;
            } else {
                out.remove(*axis);
            }
            Ok(TensorType::new(out, DType::I32))
        }
        Op::Cumsum { axis } => {
            numeric(name, 0, x.dtype)?;
            check_axis(name, &x.shape, *axis)?;
            Ok(x.clone())
        }
        Op::TopK { k, axis, output, .. } => {
            numeric(name, 0, x.dtype)?;
            check_axis(name, &x.shape, *axis)?;
            let d = dims[*axis];
            if *k < 1 || *k > d {
                return Err(attr_err(
                    name,
                    "k",
                    &x.shape,
                    format!("k = {k} but axis {axis} has size {d}; pick 1 ≤ k ≤ {d}"),
                ));
            }
            let mut out = dims.to_vec();
            out[*axis] = *k;
            let dtype = match output {
                TopKOutput::Values => x.dtype,
                TopKOutput::Indices => DType::I32,
            };
            Ok(TensorType::new(out, dtype))
        }
        _ => Err(not_in_family(op, inputs, OpFamily::Reduce)),
    }
}

/// An arg-reduction over an empty axis has no answer.
fn nonempty_axis(op: &'static str, shape: &Shape, axis: usize) -> Result<(), IrError> {
    if shape.dims().get(axis) == Some(&0) {
        return Err(attr_err(
            op,
            "axis",
            shape,
            format!("axis {axis} has size 0, so there is no index to return"),
        ));
    }
    Ok(())
}
