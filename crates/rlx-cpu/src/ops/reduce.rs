//! Reductions: sum/mean/max/min/prod over any axes, argmax/argmin, cumsum and top-k.
//!
//! Float reductions accumulate in f64 and round once. Integer ones run in i64 with wrapping
//! arithmetic and truncate to 32 bits at the end, which equals wrapping 32-bit arithmetic.

use crate::elem::{elems, float_tensor, floats, tensor, unsupported, with_elem};
use crate::index::{contiguous_strides, split_at_axis, strided_offsets, take, PAR_MIN};
use rayon::prelude::*;
use rlx_backend::BackendError;
use rlx_ir::{ArgReduceOp, DType, ReduceOp, Tensor, TensorData, TensorType, TopKOutput};
use std::cmp::Ordering;

/// Element offsets of `dims` reordered so that the `axes` come last: output element `o`'s
/// reduced elements are then the `count` consecutive entries starting at `o * count`.
/// `None` when the axes already are the trailing dims (the identity order).
fn reduction_order(dims: &[usize], axes: &[usize]) -> Option<Vec<usize>> {
    let rank = dims.len();
    let trailing = axes.iter().enumerate().all(|(i, &a)| a == rank - axes.len() + i);
    if trailing {
        return None;
    }
    let strides = contiguous_strides(dims);
    let order: Vec<usize> = (0..rank).filter(|d| !axes.contains(d)).chain(axes.iter().copied()).collect();
    let pdims: Vec<usize> = order.iter().map(|&d| dims[d]).collect();
    let pstrides: Vec<isize> = order.iter().map(|&d| strides[d]).collect();
    Some(strided_offsets(&pdims, &pstrides, 0))
}

/// Applies `f` to the reduced elements of each output, in parallel for large inputs.
fn per_output<T: Copy + Send + Sync, R: Send>(
    v: &[T],
    order: Option<&[usize]>,
    n_out: usize,
    count: usize,
    f: impl Fn(&mut dyn Iterator<Item = T>) -> R + Sync + Send,
) -> Vec<R> {
    let one = |o: usize| match order {
        Some(ord) => f(&mut ord[o * count..(o + 1) * count].iter().map(|&i| v[i])),
        None => f(&mut v[o * count..(o + 1) * count].iter().copied()),
    };
    if n_out * count >= PAR_MIN && n_out > 1 {
        (0..n_out).into_par_iter().map(one).collect()
    } else {
        (0..n_out).map(one).collect()
    }
}

fn nan_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

fn nan_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}

/// Reduces `x` over `axes` (sorted, unique). `keepdim` only changes `out.shape`, not the data.
/// Over an empty axis: sum 0, prod 1, mean/max/min NaN for floats, max/min 0 for integers.
pub fn reduce(op: ReduceOp, axes: &[usize], x: &Tensor, out: &TensorType) -> Result<Tensor, BackendError> {
    let dims = x.dims();
    let count: usize = axes.iter().map(|&a| dims.get(a).copied().unwrap_or(1)).product();
    let n_out = out.numel();
    let order = reduction_order(dims, axes);
    let order = order.as_deref();
    match x.dtype() {
        DType::F32 | DType::F16 | DType::BF16 => {
            let v = floats(x, op.name())?;
            let r = per_output(&v, order, n_out, count, |it| {
                let it = it.map(|e| e as f64);
                let r = match op {
                    ReduceOp::Sum => it.sum::<f64>(),
                    ReduceOp::Mean => it.sum::<f64>() / count as f64,
                    ReduceOp::Prod => it.product::<f64>(),
                    ReduceOp::Max if count == 0 => f64::NAN,
                    ReduceOp::Min if count == 0 => f64::NAN,
                    ReduceOp::Max => it.fold(f64::NEG_INFINITY, nan_max),
                    ReduceOp::Min => it.fold(f64::INFINITY, nan_min),
                };
                r as f32
            });
            float_tensor(&out.shape, out.dtype, r)
        }
        DType::I32 | DType::U32 => {
            if op == ReduceOp::Mean {
                return Err(unsupported("mean", "integer operands (cast to a float first)"));
            }
            let v = ints(x)?;
            let r = per_output(&v, order, n_out, count, |it| match op {
                ReduceOp::Sum | ReduceOp::Mean => it.fold(0i64, i64::wrapping_add),
                ReduceOp::Prod => it.fold(1i64, i64::wrapping_mul),
                ReduceOp::Max => it.max().unwrap_or(0),
                ReduceOp::Min => it.min().unwrap_or(0),
            });
            tensor(&out.shape, pack_ints(out.dtype, r))
        }
        // U8 reaches no kernel: `eval` computes it as I32 (see `widen.rs`).
        d @ (DType::U8 | DType::Bool) => Err(unsupported(op.name(), format!("dtype {d}"))),
    }
}

/// Integer elements widened to i64 (i32 sign-extended, u32 zero-extended).
fn ints(x: &Tensor) -> Result<Vec<i64>, BackendError> {
    match x.data() {
        TensorData::I32(v) => Ok(v.iter().map(|&e| e as i64).collect()),
        TensorData::U32(v) => Ok(v.iter().map(|&e| e as i64).collect()),
        other => Err(unsupported("integer reduction", format!("dtype {}", other.dtype()))),
    }
}

/// i64 results truncated to 32 bits, which makes them wrapping 32-bit results.
fn pack_ints(dtype: DType, v: Vec<i64>) -> TensorData {
    match dtype {
        DType::U32 => TensorData::U32(v.into_iter().map(|e| e as u32).collect()),
        _ => TensorData::I32(v.into_iter().map(|e| e as i32).collect()),
    }
}

/// Index of the largest (ArgMax) or smallest (ArgMin) element along `axis`, as I32. Ties give
/// the first index; the first NaN wins over everything.
pub fn arg_reduce(
    op: ArgReduceOp,
    axis: usize,
    x: &Tensor,
    out: &TensorType,
) -> Result<Tensor, BackendError> {
    let v = x.to_f64_vec();
    let (outer, len, inner) = split_at_axis(x.dims(), axis);
    let mut res = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            let at = |j: usize| v[(o * len + j) * inner + i];
            let mut best = 0usize;
            for j in 0..len {
                let (e, b) = (at(j), at(best));
                if b.is_nan() {
                    break;
                }
                let better = match op {
                    ArgReduceOp::ArgMax => e > b,
                    ArgReduceOp::ArgMin => e < b,
                };
                if e.is_nan() || better {
                    best = j;
                }
            }
            res.push(best as i32);
        }
    }
    tensor(&out.shape, TensorData::I32(res))
}

/// Inclusive prefix sum along `axis` (f64 running sum for floats, wrapping for integers).
pub fn cumsum(axis: usize, x: &Tensor, out: &TensorType) -> Result<Tensor, BackendError> {
    let (outer, len, inner) = split_at_axis(x.dims(), axis);
    let scan = |get: &dyn Fn(usize) -> f64| -> Vec<f64> {
        let mut res = vec![0f64; outer * len * inner];
        for o in 0..outer {
            for i in 0..inner {
                let mut acc = 0f64;
                for j in 0..len {
                    let k = (o * len + j) * inner + i;
                    acc += get(k);
                    res[k] = acc;
                }
            }
        }
        res
    };
    match x.dtype() {
        DType::F32 | DType::F16 | DType::BF16 => {
            let v = floats(x, "cumsum")?;
            let r = scan(&|k| v[k] as f64);
            float_tensor(&out.shape, out.dtype, r.into_iter().map(|e| e as f32).collect())
        }
        DType::I32 | DType::U32 => {
            let v = ints(x)?;
            let mut res = vec![0i64; v.len()];
            for o in 0..outer {
                for i in 0..inner {
                    let mut acc = 0i64;
                    for j in 0..len {
                        let k = (o * len + j) * inner + i;
                        acc = acc.wrapping_add(v[k]);
                        res[k] = acc;
                    }
                }
            }
            tensor(&out.shape, pack_ints(out.dtype, res))
        }
        d @ (DType::U8 | DType::Bool) => Err(unsupported("cumsum", format!("dtype {d}"))),
    }
}

/// Total order with NaN above every number (NaNs equal to each other).
fn nan_last(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// The `k` largest (or smallest) elements along `axis`, sorted, ties by lower index; NaN counts
/// as largest. `output` picks the values or their I32 indices.
pub fn topk(
    k: usize,
    axis: usize,
    largest: bool,
    output: TopKOutput,
    x: &Tensor,
    out: &TensorType,
) -> Result<Tensor, BackendError> {
    let v = x.to_f64_vec();
    let (outer, len, inner) = split_at_axis(x.dims(), axis);
    let k = k.min(len);
    // Output element (o, r, i) copies source (o, picks[r], i).
    let mut src = vec![0usize; outer * k * inner];
    let mut pos = vec![0i32; outer * k * inner];
    let mut idx: Vec<usize> = Vec::with_capacity(len);
    for o in 0..outer {
        for i in 0..inner {
            let at = |j: usize| v[(o * len + j) * inner + i];
            idx.clear();
            idx.extend(0..len);
            // Stable sort: equal elements keep ascending index order.
            if largest {
                idx.sort_by(|&p, &q| nan_last(at(q), at(p)));
            } else {
                idx.sort_by(|&p, &q| nan_last(at(p), at(q)));
            }
            for (r, &j) in idx.iter().take(k).enumerate() {
                let d = (o * k + r) * inner + i;
                src[d] = (o * len + j) * inner + i;
                pos[d] = j as i32;
            }
        }
    }
    match output {
        TopKOutput::Indices => tensor(&out.shape, TensorData::I32(pos)),
        TopKOutput::Values => with_elem!(x.dtype(), T => {
            tensor(&out.shape, <T as crate::elem::Elem>::wrap(take(elems::<T>(x, "topk")?, &src)))
        }),
    }
}
