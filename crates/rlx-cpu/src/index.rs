//! Index arithmetic shared by all kernels: broadcasting, strided views and axis splits.
//!
//! Shape ops are written once over element offsets: a kernel computes, for every output
//! element, the offset of the input element it copies ([`strided_offsets`]), and
//! [`take`] moves the data whatever its dtype.

use crate::elem::Elem;
use rayon::prelude::*;
use std::borrow::Cow;

/// Below this many elements, parallel loops cost more than they save.
pub(crate) const PAR_MIN: usize = 1 << 15;

/// Offset meaning "no source element: use the fill value" in [`take_or_fill`].
pub(crate) const FILL: usize = usize::MAX;

/// Row-major strides of `dims`, as signed steps.
pub(crate) fn contiguous_strides(dims: &[usize]) -> Vec<isize> {
    let mut s = vec![1isize; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * dims[i + 1] as isize;
    }
    s
}

/// Strides (one per output dim) that read `in_dims` broadcast to `out_dims` with numpy rules:
/// dims are right-aligned; a size-1 or missing input dim gets stride 0.
pub(crate) fn broadcast_strides(in_dims: &[usize], out_dims: &[usize]) -> Vec<isize> {
    let own = contiguous_strides(in_dims);
    let lead = out_dims.len().saturating_sub(in_dims.len());
    (0..out_dims.len())
        .map(|i| match i.checked_sub(lead) {
            Some(j) if in_dims[j] != 1 => own[j],
            _ => 0,
        })
        .collect()
}

/// For every element of a tensor of shape `dims` in row-major order, the offset
/// `base + Σ index[d]·strides[d]`. Callers choose strides that keep offsets non-negative.
pub(crate) fn strided_offsets(dims: &[usize], strides: &[isize], base: isize) -> Vec<usize> {
    let n: usize = dims.iter().product();
    let mut out = Vec::with_capacity(n);
    if n == 0 {
        return out;
    }
    let Some((&last, outer)) = dims.split_last() else {
        out.push(base as usize);
        return out;
    };
    let last_stride = strides[outer.len()];
    let mut idx = vec![0usize; outer.len()];
    let mut off = base;
    loop {
        out.extend((0..last).map(|j| (off + j as isize * last_stride) as usize));
        // Odometer step over the outer dims, last one fastest.
        let mut d = outer.len();
        loop {
            if d == 0 {
                return out;
            }
            d -= 1;
            idx[d] += 1;
            off += strides[d];
            if idx[d] < outer[d] {
                break;
            }
            off -= strides[d] * outer[d] as isize;
            idx[d] = 0;
        }
    }
}

/// Offsets into a tensor of `in_dims` for each element of its broadcast to `out_dims`.
pub(crate) fn broadcast_offsets(in_dims: &[usize], out_dims: &[usize]) -> Vec<usize> {
    strided_offsets(out_dims, &broadcast_strides(in_dims, out_dims), 0)
}

/// `v` (shaped `in_dims`) broadcast to `out_dims`; borrowed when no broadcasting is needed.
pub(crate) fn expand<'a, T: Copy + Send + Sync>(
    v: &'a [T],
    in_dims: &[usize],
    out_dims: &[usize],
) -> Cow<'a, [T]> {
    if in_dims == out_dims {
        Cow::Borrowed(v)
    } else {
        Cow::Owned(take(v, &broadcast_offsets(in_dims, out_dims)))
    }
}

/// `src[i]` for each `i` in `idx`.
pub(crate) fn take<T: Copy + Send + Sync>(src: &[T], idx: &[usize]) -> Vec<T> {
    if idx.len() >= PAR_MIN {
        idx.par_iter().map(|&i| src[i]).collect()
    } else {
        idx.iter().map(|&i| src[i]).collect()
    }
}

/// Like [`take`], with [`FILL`] (or any offset past the end) giving `fill`.
pub(crate) fn take_or_fill<T: Elem>(src: &[T], idx: &[usize], fill: T) -> Vec<T> {
    idx.iter().map(|&i| src.get(i).copied().unwrap_or(fill)).collect()
}

/// `(outer, len, inner)`: the element counts before, at and after `axis`.
pub(crate) fn split_at_axis(dims: &[usize], axis: usize) -> (usize, usize, usize) {
    let outer = dims.iter().take(axis).product();
    let len = dims.get(axis).copied().unwrap_or(1);
    let inner = dims.iter().skip(axis + 1).product();
    (outer, len, inner)
}

/// Maps `f` over `v`, in parallel for large inputs.
pub(crate) fn par_map<T: Sync, R: Send>(v: &[T], f: impl Fn(&T) -> R + Sync + Send) -> Vec<R> {
    if v.len() >= PAR_MIN {
        v.par_iter().map(f).collect()
    } else {
        v.iter().map(f).collect()
    }
}

/// Maps `f` over pairs of equal-length slices, in parallel for large inputs.
pub(crate) fn par_zip<A: Sync, B: Sync, R: Send>(
    a: &[A],
    b: &[B],
    f: impl Fn(&A, &B) -> R + Sync + Send,
) -> Vec<R> {
    if a.len() >= PAR_MIN {
        a.par_iter().zip(b.par_iter()).map(|(x, y)| f(x, y)).collect()
    } else {
        a.iter().zip(b).map(|(x, y)| f(x, y)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strides_and_offsets() {
        assert_eq!(contiguous_strides(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(broadcast_strides(&[3, 1], &[2, 3, 4]), vec![0, 1, 0]);
        // Transpose of a 2x3 matrix read through strides.
        assert_eq!(strided_offsets(&[3, 2], &[1, 3], 0), vec![0, 3, 1, 4, 2, 5]);
        // Reverse of 4 elements.
        assert_eq!(strided_offsets(&[4], &[-1], 3), vec![3, 2, 1, 0]);
        assert_eq!(strided_offsets(&[], &[], 5), vec![5]);
        assert!(strided_offsets(&[2, 0, 3], &[0, 3, 1], 0).is_empty());
        assert_eq!(broadcast_offsets(&[1, 3], &[2, 3]), vec![0, 1, 2, 0, 1, 2]);
        assert_eq!(split_at_axis(&[2, 3, 5], 1), (2, 3, 5));
        assert_eq!(take_or_fill(&[1i32, 2], &[1, FILL, 0], 9), vec![2, 9, 1]);
    }
}
