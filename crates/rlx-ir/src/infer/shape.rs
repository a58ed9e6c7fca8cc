//! The shape family: pure data movement (`Reshape`, `Permute`, `Slice`, `Concat`, `Expand`,
//! `Gather`, `ScatterAdd`, `Pad`, `Reverse`). Shape rule (bandwidth-bound: no flop count).

use super::broadcast_shapes;
use super::{arity, attr_err, check_axes, check_axis, mismatch, not_in_family, want_dtype};
use crate::{DType, IrError, Op, OpFamily, TensorType};

pub(super) fn infer(op: &Op, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    let name = op.name();
    if let Op::Concat { axis } = op {
        return concat(name, *axis, inputs);
    }
    if let Op::Gather { axis } = op {
        return gather(name, *axis, inputs);
    }
    if let Op::ScatterAdd { axis, len } = op {
        return scatter_add(name, *axis, *len, inputs);
    }
    arity(name, inputs, 1)?;
    let x = inputs[0];
    let dims = x.shape.dims();
    match op {
        Op::Reshape(s) => {
            // A target past the size limits is reported as such, not as a count mismatch.
            s.check_size(name, x.dtype)?;
            if s.numel() != x.numel() {
                return Err(mismatch(
                    name,
                    &[x, &TensorType::new(s.clone(), x.dtype)],
                    format!(
                        "the input has {} elements but the target shape has {}; pick a target with \
                         the same element count",
                        x.numel(),
                        s.numel()
                    ),
                ));
            }
            Ok(TensorType::new(s.clone(), x.dtype))
        }
        Op::Permute(perm) => {
            let mut seen = vec![false; dims.len()];
            let ok = perm.len() == dims.len()
                && perm.iter().all(|&p| match seen.get_mut(p) {
                    Some(s) if !*s => {
                        *s = true;
                        true
                    }
                    _ => false,
                });
            if !ok {
                return Err(attr_err(
                    name,
                    "perm",
                    &x.shape,
                    format!(
                        "{perm:?} is not a permutation of 0..{}; list every axis exactly once",
                        dims.len()
                    ),
                ));
            }
            let out = perm.iter().map(|&p| dims[p]).collect::<Vec<_>>();
            Ok(TensorType::new(out, x.dtype))
        }
        Op::Slice { axis, start, end, step } => {
            check_axis(name, &x.shape, *axis)?;
            let d = dims[*axis];
            if *step < 1 {
                return Err(attr_err(name, "step", &x.shape, "step is 0; use step ≥ 1"));
            }
            if start > end || *end > d {
                return Err(attr_err(
                    name,
                    "range",
                    &x.shape,
                    format!("start {start}, end {end} on axis {axis} of size {d}; need start ≤ end ≤ {d}"),
                ));
            }
            let mut out = dims.to_vec();
            out[*axis] = (end - start).div_ceil(*step);
            Ok(TensorType::new(out, x.dtype))
        }
        Op::Expand(target) => {
            let ok = target.rank() >= x.shape.rank()
                && broadcast_shapes(name, &x.shape, target).is_ok_and(|s| &s == target);
            if !ok {
                return Err(mismatch(
                    name,
                    &[x, &TensorType::new(target.clone(), x.dtype)],
                    "the input does not broadcast to the target: aligned from the right, each input \
                     dim must equal the target dim or be 1",
                ));
            }
            Ok(TensorType::new(target.clone(), x.dtype))
        }
        Op::Pad { pads, value } => {
            if pads.len() != dims.len() {
                return Err(attr_err(
                    name,
                    "pads",
                    &x.shape,
                    format!(
                        "{} (before, after) pairs given for rank {}; pass one pair per dim",
                        pads.len(),
                        dims.len()
                    ),
                ));
            }
            if value.is_nan() && !x.dtype.is_float() {
                return Err(attr_err(
                    name,
                    "value",
                    &x.shape,
                    format!("NaN fill for {} data; use a finite value", x.dtype),
                ));
            }
            let mut out = Vec::with_capacity(dims.len());
            for (&d, &(b, a)) in dims.iter().zip(pads) {
                let n = d.checked_add(b).and_then(|n| n.checked_add(a));
                out.push(n.ok_or_else(|| attr_err(name, "pads", &x.shape, "padding overflows usize"))?);
            }
            Ok(TensorType::new(out, x.dtype))
        }
        Op::Reverse { axes } => {
            check_axes(name, "axes", &x.shape, axes)?;
            Ok(x.clone())
        }
        _ => Err(not_in_family(op, inputs, OpFamily::Shape)),
    }
}

fn concat(name: &'static str, axis: usize, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    let Some(first) = inputs.first() else {
        return Err(IrError::Arity { op: name, expected: "at least 1".into(), got: 0 });
    };
    check_axis(name, &first.shape, axis)?;
    let mut total = 0usize;
    for (i, t) in inputs.iter().enumerate() {
        if t.dtype != first.dtype {
            return Err(IrError::DType {
                op: name,
                operand: i,
                got: t.dtype,
                expected: format!("{}, the dtype of operand 0 (cast it first)", first.dtype),
            });
        }
        let same = t.shape.rank() == first.shape.rank()
            && t.shape
                .dims()
                .iter()
                .zip(first.shape.dims())
                .enumerate()
                .all(|(j, (a, b))| j == axis || a == b);
        if !same {
            return Err(mismatch(
                name,
                inputs,
                format!("operand {i} differs from operand 0 outside axis {axis}; all dims but the concat axis must match"),
            ));
        }
        total =
            total.checked_add(t.shape.dims()[axis]).ok_or_else(|| mismatch(name, inputs, "size overflow"))?;
    }
    let mut out = first.shape.dims().to_vec();
    out[axis] = total;
    Ok(TensorType::new(out, first.dtype))
}

fn gather(name: &'static str, axis: usize, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    arity(name, inputs, 2)?;
    let (data, idx) = (inputs[0], inputs[1]);
    want_dtype(name, 1, idx.dtype, DType::I32)?;
    check_axis(name, &data.shape, axis)?;
    let d = data.shape.dims();
    let mut out = d[..axis].to_vec();
    out.extend_from_slice(idx.shape.dims());
    out.extend_from_slice(&d[axis + 1..]);
    Ok(TensorType::new(out, data.dtype))
}

/// ids (I32), src (float) whose dims `axis..axis + ids.rank` are the ids' dims: those dims
/// become one of size `len`.
fn scatter_add(
    name: &'static str,
    axis: usize,
    len: usize,
    inputs: &[&TensorType],
) -> Result<TensorType, IrError> {
    arity(name, inputs, 2)?;
    let (ids, src) = (inputs[0], inputs[1]);
    if ids.dtype != DType::I32 {
        return Err(IrError::DType {
            op: name,
            operand: 0,
            got: ids.dtype,
            expected: "i32 ids (cast them first)".into(),
        });
    }
    if !src.dtype.is_float() {
        return Err(IrError::DType {
            op: name,
            operand: 1,
            got: src.dtype,
            expected: "f32, f16 or bf16 values to add (cast them first)".into(),
        });
    }
    if len == 0 {
        return Err(attr_err(name, "len", &src.shape, "len is 0; pass the table's length V ≥ 1"));
    }
    let (sd, idd) = (src.shape.dims(), ids.shape.dims());
    let end = axis.checked_add(idd.len()).filter(|&e| e <= sd.len());
    let Some(end) = end else {
        return Err(attr_err(
            name,
            "axis",
            &src.shape,
            format!(
                "axis {axis} with rank-{} ids needs src of rank ≥ {}, got rank {}; use an axis in \
                 0..={}",
                idd.len(),
                axis.saturating_add(idd.len()),
                sd.len(),
                sd.len().saturating_sub(idd.len())
            ),
        ));
    };
    if &sd[axis..end] != idd {
        return Err(mismatch(
            name,
            inputs,
            format!(
                "src dims {:?} at axes {axis}..{end} must equal the ids' dims {idd:?} (src is the \
                 gradient of a gather by these ids along axis {axis})",
                &sd[axis..end]
            ),
        ));
    }
    let mut out = sd[..axis].to_vec();
    out.push(len);
    out.extend_from_slice(&sd[end..]);
    Ok(TensorType::new(out, src.dtype))
}
