//! Shape ops, written once for every dtype: each computes the source offset of every output
//! element and moves the data with [`take`] / [`take_or_fill`].

use crate::elem::{elems, float_tensor, floats, invalid, tensor, with_elem, Elem};
use crate::index::{
    broadcast_offsets, contiguous_strides, split_at_axis, strided_offsets, take, take_or_fill, FILL,
};
use rlx_backend::BackendError;
use rlx_ir::{Tensor, TensorType};

/// Moves elements of `x` to a tensor of type `out`: output element `i` is `x[idx[i]]`, or the
/// fill value (converted like a cast) where `idx[i]` is [`FILL`].
pub(crate) fn gather_elems(
    x: &Tensor,
    idx: &[usize],
    fill: f64,
    out: &TensorType,
    op: &str,
) -> Result<Tensor, BackendError> {
    with_elem!(x.dtype(), T => {
        let src = elems::<T>(x, op)?;
        let data = if idx.contains(&FILL) {
            take_or_fill(src, idx, T::from_f64(fill))
        } else {
            take(src, idx)
        };
        tensor(&out.shape, T::wrap(data))
    })
}

/// Same data, new shape.
pub fn reshape(x: &Tensor, out: &TensorType) -> Result<Tensor, BackendError> {
    tensor(&out.shape, x.data().clone())
}

/// `out.dims[i] = x.dims[perm[i]]`.
pub fn permute(perm: &[usize], x: &Tensor, out: &TensorType) -> Result<Tensor, BackendError> {
    let s = contiguous_strides(x.dims());
    let strides = perm.iter().map(|&p| s.get(p).copied().unwrap_or(0)).collect::<Vec<_>>();
    gather_elems(x, &strided_offsets(out.shape.dims(), &strides, 0), 0.0, out, "permute")
}

/// Elements `start, start+step, …` below `end` along `axis`.
pub fn slice(
    axis: usize,
    start: usize,
    step: usize,
    x: &Tensor,
    out: &TensorType,
) -> Result<Tensor, BackendError> {
    let mut strides = contiguous_strides(x.dims());
    let base = match strides.get_mut(axis) {
        Some(s) => {
            let base = start as isize * *s;
            *s *= step as isize;
            base
        }
        None => return Err(invalid("slice", format!("axis {axis} of a rank-{} tensor", x.dims().len()))),
    };
    gather_elems(x, &strided_offsets(out.shape.dims(), &strides, base), 0.0, out, "slice")
}

/// Numpy broadcast to `out.shape`.
pub fn expand(x: &Tensor, out: &TensorType) -> Result<Tensor, BackendError> {
    gather_elems(x, &broadcast_offsets(x.dims(), out.shape.dims()), 0.0, out, "expand")
}

/// Flips each listed axis.
pub fn reverse(axes: &[usize], x: &Tensor, out: &TensorType) -> Result<Tensor, BackendError> {
    let dims = x.dims();
    let mut strides = contiguous_strides(dims);
    let mut base = 0isize;
    for &a in axes {
        if let (Some(s), Some(&d)) = (strides.get_mut(a), dims.get(a)) {
            base += (d as isize - 1).max(0) * *s;
            *s = -*s;
        }
    }
    gather_elems(x, &strided_offsets(dims, &strides, base), 0.0, out, "reverse")
}

/// Constant padding: `pads[d] = (before, after)`, new elements set to `value`.
pub fn pad(
    pads: &[(usize, usize)],
    value: f64,
    x: &Tensor,
    out: &TensorType,
) -> Result<Tensor, BackendError> {
    let in_dims = x.dims();
    let out_dims = out.shape.dims();
    let in_strides = contiguous_strides(in_dims);
    let n = out.numel();
    let mut idx = Vec::with_capacity(n);
    let mut pos = vec![0usize; out_dims.len()];
    for _ in 0..n {
        let mut off = 0isize;
        let mut inside = true;
        for (d, &p) in pos.iter().enumerate() {
            let before = pads.get(d).map_or(0, |q| q.0);
            match p.checked_sub(before) {
                Some(i) if i < in_dims.get(d).copied().unwrap_or(0) => off += i as isize * in_strides[d],
                _ => inside = false,
            }
        }
        idx.push(if inside { off as usize } else { FILL });
        // Advance the row-major position.
        for d in (0..pos.len()).rev() {
            pos[d] += 1;
            if pos[d] < out_dims[d] {
                break;
            }
            pos[d] = 0;
        }
    }
    gather_elems(x, &idx, value, out, "pad")
}

/// Joins `xs` along `axis`.
pub fn concat(axis: usize, xs: &[&Tensor], out: &TensorType) -> Result<Tensor, BackendError> {
    let (outer, _, inner) = split_at_axis(out.shape.dims(), axis);
    with_elem!(out.dtype, T => {
        let parts = xs
            .iter()
            .map(|t| Ok((elems::<T>(t, "concat")?, t.dims().get(axis).copied().unwrap_or(1) * inner)))
            .collect::<Result<Vec<_>, BackendError>>()?;
        let mut data: Vec<T> = Vec::with_capacity(out.numel());
        for o in 0..outer {
            for &(src, chunk) in &parts {
                data.extend_from_slice(&src[o * chunk..(o + 1) * chunk]);
            }
        }
        tensor(&out.shape, T::wrap(data))
    })
}

/// Numpy `take` along `axis` with I32 indices; an index outside `[0, dim)` gives zeros.
pub fn gather(
    axis: usize,
    data: &Tensor,
    indices: &Tensor,
    out: &TensorType,
) -> Result<Tensor, BackendError> {
    let ids = elems::<i32>(indices, "gather")?;
    let (outer, len, inner) = split_at_axis(data.dims(), axis);
    let mut idx = Vec::with_capacity(out.numel());
    for o in 0..outer {
        for &id in ids {
            match usize::try_from(id) {
                Ok(j) if j < len => idx.extend((0..inner).map(|i| (o * len + j) * inner + i)),
                _ => idx.extend(std::iter::repeat_n(FILL, inner)),
            }
        }
    }
    gather_elems(data, &idx, 0.0, out, "gather")
}

/// The transpose of [`gather`] (`Op::ScatterAdd`): src seen as [outer, n, inner] (n = the ids'
/// count), the output as [outer, len, inner], and `out[o, v, j] = Σ_{i : ids[i] == v}
/// src[o, i, j]`. Each sum starts from +0.0 and adds its terms in increasing i, in f32 (f16
/// and bf16 widened exactly, the result rounded once): the order every backend follows, so
/// results are bit-identical run to run. An id outside `[0, len)` adds nothing.
pub fn scatter_add(
    axis: usize,
    ids: &Tensor,
    src: &Tensor,
    out: &TensorType,
) -> Result<Tensor, BackendError> {
    const OP: &str = "scatter_add";
    let ids = elems::<i32>(ids, OP)?;
    let s = floats(src, OP)?;
    let (outer, len, inner) = split_at_axis(out.shape.dims(), axis);
    let n = ids.len();
    if s.len() != outer * n * inner {
        return Err(invalid(
            OP,
            format!("src has {} elements, not {outer}·{n}·{inner} for {n} ids into {}", s.len(), out),
        ));
    }
    let mut acc = vec![0f32; outer * len * inner];
    if inner > 0 {
        for o in 0..outer {
            let rows = s[o * n * inner..(o + 1) * n * inner].chunks_exact(inner);
            let table = &mut acc[o * len * inner..(o + 1) * len * inner];
            for (&id, row) in ids.iter().zip(rows) {
                let v = usize::try_from(id).ok().filter(|&v| v < len);
                let Some(dst) = v.and_then(|v| table.get_mut(v * inner..(v + 1) * inner)) else {
                    continue;
                };
                for (d, &x) in dst.iter_mut().zip(row) {
                    *d += x;
                }
            }
        }
    }
    float_tensor(&out.shape, out.dtype, acc)
}
