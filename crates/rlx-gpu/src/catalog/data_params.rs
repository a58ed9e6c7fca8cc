//! Params structs of the data-family kernels, byte-identical to the WGSL structs of the same
//! name. Constructors check what the kernels' u32 index arithmetic needs and return the
//! workgroup counts.
//!
//! Kernels of this family index with u32 and loop with `i += 256`, so every element count they
//! see stays below 2^31 ([`MAX_ELEMENTS`]): no loop counter can wrap. Bindings are far smaller
//! than that (2^29 words at 2 GiB), so the limit never bites a real graph.

use crate::catalog::elementwise::params::MAX_RANK;
use crate::grid;
use crate::GpuError;
use bytemuck::{Pod, Zeroable};

/// Threads per workgroup of every data-family kernel.
pub const DATA_WG: u32 = 256;

/// Largest element count a data-family kernel indexes (exclusive).
pub const MAX_ELEMENTS: u64 = 1 << 31;

/// Highest rank of a where (after merging dims): four words per dim fill the 128 bytes.
pub const WHERE_MAX_RANK: usize = 7;

/// Highest rank of each of the kept and the reduced dims of a reduction (after merging).
pub const REDUCE_MAX_RANK: usize = 4;

/// Checks an element count against [`MAX_ELEMENTS`] and returns it as u32.
fn count32(kernel: &'static str, what: &'static str, n: u64) -> Result<u32, GpuError> {
    if n >= MAX_ELEMENTS {
        return Err(GpuError::TooLarge { kernel, what, value: n, limit: MAX_ELEMENTS - 1 });
    }
    Ok(n as u32)
}

/// Π dims, checked against [`MAX_ELEMENTS`].
fn product(
    kernel: &'static str,
    what: &'static str,
    dims: impl IntoIterator<Item = usize>,
) -> Result<u64, GpuError> {
    let n = dims.into_iter().try_fold(1u64, |acc, d| acc.checked_mul(d as u64)).unwrap_or(u64::MAX);
    count32(kernel, what, n)?;
    Ok(n)
}

/// Workgroup counts of a kernel with one thread per element.
fn per_element(kernel: &'static str, n: u64) -> Result<[u32; 3], GpuError> {
    grid::linear(kernel, n.div_ceil(DATA_WG as u64), DATA_WG)
}

/// Threads a row kernel gives each row of `len` elements when each thread takes about
/// `items` of them: a power of two from 1 to [`DATA_WG`], so that short rows share a
/// workgroup instead of leaving most of it idle.
pub fn row_threads(len: usize, items: usize) -> u32 {
    let want = len.div_ceil(items.max(1)).max(1);
    want.checked_next_power_of_two().unwrap_or(usize::MAX).min(DATA_WG as usize) as u32
}

/// Workgroup counts of a row kernel: `rows` rows of `row_threads` threads each, packed
/// DATA_WG / row_threads to a workgroup. Such kernels index with the group id and the local id
/// only, so only the group count is limited.
fn per_row(kernel: &'static str, rows: u64, row_threads: u32) -> Result<[u32; 3], GpuError> {
    let per_group = (DATA_WG / row_threads.clamp(1, DATA_WG)) as u64;
    grid::linear(kernel, rows.div_ceil(per_group), 1)
}

/// Params of `where.wgsl`: per output dim (size, cond stride, a stride, b stride).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct WhereParams {
    pub numel: u32,
    pub rank: u32,
    pub _pad: [u32; 2],
    pub dims: [[u32; 4]; WHERE_MAX_RANK],
}

impl WhereParams {
    /// Params for contiguous `cond`, `a`, `b` broadcast numpy-style to `out` (shapes
    /// right-aligned, each dim equal to the output's or 1).
    pub fn broadcast(
        out: &[usize],
        cond: &[usize],
        a: &[usize],
        b: &[usize],
    ) -> Result<(Self, [u32; 3]), GpuError> {
        const K: &str = "data_where";
        let shape_err = |reason: String| GpuError::Shape {
            kernel: K,
            shapes: format!("{out:?}, {cond:?}, {a:?} and {b:?}"),
            reason,
        };
        if out.len() > WHERE_MAX_RANK {
            return Err(shape_err(format!(
                "rank {} is above {WHERE_MAX_RANK} after merging dims",
                out.len()
            )));
        }
        let n = product(K, "output element count", out.iter().copied())?;
        let mut p = WhereParams { numel: n as u32, rank: out.len() as u32, ..Zeroable::zeroed() };
        for (slot, &d) in p.dims.iter_mut().zip(out) {
            slot[0] = d as u32;
        }
        for (k, operand) in [cond, a, b].into_iter().enumerate() {
            if operand.len() > out.len() {
                return Err(shape_err("an operand has a higher rank than the output".into()));
            }
            product(K, "operand element count", operand.iter().copied())?;
            let lead = out.len() - operand.len();
            let mut stride = 1u64;
            for d in (0..out.len()).rev() {
                let xd = if d >= lead { operand[d - lead] } else { 1 };
                p.dims[d][k + 1] = if xd == out[d] && xd != 1 {
                    stride as u32
                } else if xd == 1 {
                    0
                } else {
                    return Err(shape_err(format!(
                        "operand {k} has {xd} at output dim {d} of size {}",
                        out[d]
                    )));
                };
                stride *= xd as u64;
            }
        }
        Ok((p, per_element(K, n)?))
    }
}

/// Params of `copy.wgsl`: for the element with coordinates c (row-major over `shape`),
/// out[out_base + Σ c·out_strides] = src[src_base + Σ c·src_strides], in wrapping u32
/// arithmetic (negative strides as two's complement).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct CopyParams {
    pub numel: u32,
    pub rank: u32,
    pub src_base: u32,
    pub out_base: u32,
    pub shape: [u32; MAX_RANK],
    pub src_strides: [u32; MAX_RANK],
    pub out_strides: [u32; MAX_RANK],
}

/// One strided copy, in element units: the box `shape`, where it is read and where it goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StridedCopy {
    pub shape: Vec<usize>,
    pub src_strides: Vec<i64>,
    pub src_base: i64,
    /// Elements in the source binding.
    pub src_len: usize,
    pub out_strides: Vec<i64>,
    pub out_base: i64,
    /// Elements in the output binding.
    pub out_len: usize,
}

impl StridedCopy {
    /// A copy of a contiguous tensor of `n` elements.
    pub fn contiguous(n: usize) -> Self {
        StridedCopy {
            shape: vec![n],
            src_strides: vec![1],
            src_base: 0,
            src_len: n,
            out_strides: vec![1],
            out_base: 0,
            out_len: n,
        }
    }

    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// The same copy with size-1 dims dropped and neighbouring dims merged where both the
    /// source and the output step through them as through one dim.
    pub fn merged(&self) -> StridedCopy {
        let mut dims: Vec<(usize, i64, i64)> = Vec::new();
        for ((&n, &s), &o) in self.shape.iter().zip(&self.src_strides).zip(&self.out_strides) {
            if n == 1 {
                continue;
            }
            match dims.last_mut() {
                Some(last) if last.1 == s * n as i64 && last.2 == o * n as i64 => *last = (last.0 * n, s, o),
                _ => dims.push((n, s, o)),
            }
        }
        StridedCopy {
            shape: dims.iter().map(|d| d.0).collect(),
            src_strides: dims.iter().map(|d| d.1).collect(),
            out_strides: dims.iter().map(|d| d.2).collect(),
            ..self.clone()
        }
    }
}

/// Lowest and highest offset `base + Σ c·strides` over the box (i128: no overflow).
fn offset_range(shape: &[usize], strides: &[i64], base: i64) -> (i128, i128) {
    let (mut lo, mut hi) = (base as i128, base as i128);
    for (&n, &s) in shape.iter().zip(strides) {
        let span = (n as i128 - 1) * s as i128;
        if span < 0 {
            lo += span;
        } else {
            hi += span;
        }
    }
    (lo, hi)
}

impl CopyParams {
    /// Params of `copy` (merged first). Fails when the box reads or writes outside its
    /// bindings, or has more than [`MAX_RANK`] dims after merging.
    pub fn new(copy: &StridedCopy) -> Result<(Self, [u32; 3]), GpuError> {
        const K: &str = "data_copy";
        let c = copy.merged();
        let shape_err =
            |reason: String| GpuError::Shape { kernel: K, shapes: format!("{:?}", copy.shape), reason };
        if c.shape.len() > MAX_RANK
            || c.src_strides.len() != c.shape.len()
            || c.out_strides.len() != c.shape.len()
        {
            return Err(shape_err(format!(
                "{} dims after merging (at most {MAX_RANK}, one stride of each kind per dim)",
                c.shape.len()
            )));
        }
        let n = product(K, "element count", c.shape.iter().copied())?;
        count32(K, "source element count", copy.src_len as u64)?;
        count32(K, "output element count", copy.out_len as u64)?;
        if n > 0 {
            for (what, strides, base, len) in [
                ("source", &c.src_strides, c.src_base, c.src_len),
                ("output", &c.out_strides, c.out_base, c.out_len),
            ] {
                let (lo, hi) = offset_range(&c.shape, strides, base);
                if lo < 0 || hi >= len as i128 {
                    return Err(shape_err(format!("{what} offsets {lo}..={hi} leave its {len} elements")));
                }
            }
        }
        let mut p = CopyParams {
            numel: n as u32,
            rank: c.shape.len() as u32,
            // In range by the check above (or unused when n = 0): the casts are exact.
            src_base: c.src_base as u32,
            out_base: c.out_base as u32,
            ..Zeroable::zeroed()
        };
        for d in 0..c.shape.len() {
            p.shape[d] = c.shape[d] as u32;
            // Two's complement: the kernel's wrapping sums then land on the true offsets.
            p.src_strides[d] = c.src_strides[d] as u32;
            p.out_strides[d] = c.out_strides[d] as u32;
        }
        Ok((p, per_element(K, n)?))
    }
}

/// Params of `fill.wgsl`: `out[i] = value` for `i < numel`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct FillParams {
    pub numel: u32,
    pub value: u32,
    pub _pad: [u32; 2],
}

impl FillParams {
    pub fn new(numel: usize, value: u32) -> Result<(Self, [u32; 3]), GpuError> {
        const K: &str = "data_fill";
        let n = count32(K, "element count", numel as u64)?;
        Ok((FillParams { numel: n, value, _pad: [0; 2] }, per_element(K, n as u64)?))
    }
}

/// Params of `gather.wgsl`: data seen as [outer, len, inner], the indices flat (`nidx`),
/// the output [outer, nidx, inner] of `numel` elements.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct GatherParams {
    pub numel: u32,
    pub len: u32,
    pub nidx: u32,
    pub inner: u32,
}

impl GatherParams {
    pub fn new(outer: usize, len: usize, inner: usize, nidx: usize) -> Result<(Self, [u32; 3]), GpuError> {
        const K: &str = "data_gather";
        product(K, "data element count", [outer, len, inner])?;
        let n = product(K, "output element count", [outer, nidx, inner])?;
        let p = GatherParams { numel: n as u32, len: len as u32, nidx: nidx as u32, inner: inner as u32 };
        Ok((p, per_element(K, n)?))
    }
}

/// Params of `write_rows.wgsl`: the state seen as [outer, cap, inner] words, the rows as
/// [outer, n, inner] (`numel` words).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct WriteRowsParams {
    pub numel: u32,
    pub n: u32,
    pub cap: u32,
    pub inner: u32,
}

impl WriteRowsParams {
    pub fn new(outer: usize, cap: usize, inner: usize, n: usize) -> Result<(Self, [u32; 3]), GpuError> {
        const K: &str = "data_write_rows";
        product(K, "state element count", [outer, cap, inner])?;
        let numel = product(K, "rows element count", [outer, n, inner])?;
        let p = WriteRowsParams { numel: numel as u32, n: n as u32, cap: cap as u32, inner: inner as u32 };
        Ok((p, per_element(K, numel)?))
    }
}

/// Params of `reduce.wgsl`. Group g reduces chunk g % chunks of output g / chunks; see the
/// kernel for the addressing.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct ReduceParams {
    /// n_out × chunks: the groups that write a result.
    pub n_groups: u32,
    /// Reduced elements per output.
    pub count: u32,
    /// Reduced elements per group.
    pub chunk: u32,
    pub chunks: u32,
    pub kept_rank: u32,
    pub red_rank: u32,
    /// Mean divides by this (the full reduced count); other ops ignore it.
    pub divisor: f32,
    /// Threads per output (chunk); a power of two ≤ 256 ([`row_threads`]).
    pub row_threads: u32,
    pub kept_shape: [u32; 4],
    pub kept_strides: [u32; 4],
    pub red_shape: [u32; 4],
    pub red_strides: [u32; 4],
}

impl ReduceParams {
    /// One reduction pass over a source of `src_len` elements. `kept` and `red` list
    /// (size, element stride) of the output dims and of the reduced dims, row-major; each group
    /// reduces `chunk` of the reduced elements (the last chunk of an output may be shorter).
    /// The pass writes n_out × chunks elements, n_out = Π kept sizes.
    pub fn new(
        kept: &[(usize, usize)],
        red: &[(usize, usize)],
        chunk: usize,
        divisor: f32,
        src_len: usize,
    ) -> Result<(Self, [u32; 3]), GpuError> {
        const K: &str = "data_reduce";
        let shape_err = |reason: String| GpuError::Shape {
            kernel: K,
            shapes: format!("kept {kept:?}, reduced {red:?}"),
            reason,
        };
        if kept.len() > REDUCE_MAX_RANK || red.len() > REDUCE_MAX_RANK {
            return Err(shape_err(format!(
                "{} kept and {} reduced dims after merging; at most {REDUCE_MAX_RANK} of each (permute first)",
                kept.len(),
                red.len()
            )));
        }
        let n_out = product(K, "output count", kept.iter().map(|d| d.0))?;
        let count = product(K, "reduced count", red.iter().map(|d| d.0))?;
        count32(K, "source element count", src_len as u64)?;
        if count == 0 || chunk == 0 {
            return Err(shape_err(
                "an empty reduced set or chunk has no kernel; fill the output instead".into(),
            ));
        }
        // The highest offset read must lie inside the source.
        let hi: u128 = kept.iter().chain(red).map(|&(n, s)| (n as u128).saturating_sub(1) * s as u128).sum();
        if n_out > 0 && hi >= src_len as u128 {
            return Err(shape_err(format!("offsets up to {hi} leave the source of {src_len} elements")));
        }
        let chunk = (chunk as u64).min(count);
        let chunks = count.div_ceil(chunk);
        let n_groups = product(K, "group count", [n_out as usize, chunks as usize])?;
        // At most 16 elements per thread: 256 threads for a full chunk of 4096.
        let threads = row_threads(chunk as usize, 16);
        let mut p = ReduceParams {
            n_groups: n_groups as u32,
            count: count as u32,
            chunk: chunk as u32,
            chunks: chunks as u32,
            kept_rank: kept.len() as u32,
            red_rank: red.len() as u32,
            divisor,
            row_threads: threads,
            ..Zeroable::zeroed()
        };
        // Sizes and strides are bounded by the source length checked above.
        for (d, &(n, s)) in kept.iter().enumerate() {
            p.kept_shape[d] = n as u32;
            p.kept_strides[d] = s as u32;
        }
        for (d, &(n, s)) in red.iter().enumerate() {
            p.red_shape[d] = n as u32;
            p.red_strides[d] = s as u32;
        }
        Ok((p, per_row(K, n_groups, threads)?))
    }
}

/// Params of `arg_reduce.wgsl` and `cumsum.wgsl`: a tensor seen as
/// [outer, len, inner], `row_threads` threads per (outer, inner) line of `len` elements
/// `inner` apart.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct AxisParams {
    /// outer × inner.
    pub lines: u32,
    pub len: u32,
    pub inner: u32,
    /// A power of two ≤ 256 ([`row_threads`]).
    pub row_threads: u32,
}

impl AxisParams {
    /// `items`: elements one thread takes per pass over the line (the kernel's choice: 1 for
    /// arg-reductions, 4 for cumsum's blocks).
    pub fn new(
        kernel: &'static str,
        outer: usize,
        len: usize,
        inner: usize,
        items: usize,
    ) -> Result<(Self, [u32; 3]), GpuError> {
        product(kernel, "element count", [outer, len, inner])?;
        let lines = product(kernel, "line count", [outer, inner])?;
        let threads = row_threads(len, items);
        let p =
            AxisParams { lines: lines as u32, len: len as u32, inner: inner as u32, row_threads: threads };
        Ok((p, per_row(kernel, lines, threads)?))
    }
}

/// Params of `topk.wgsl`: [`AxisParams`]' lines plus k and the direction.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct TopKParams {
    pub lines: u32,
    pub len: u32,
    pub inner: u32,
    pub k: u32,
    /// 1: the k largest, descending; 0: the k smallest, ascending.
    pub largest: u32,
    /// A power of two ≤ 256 ([`row_threads`]).
    pub row_threads: u32,
    pub _pad: [u32; 2],
}

impl TopKParams {
    pub fn new(
        outer: usize,
        len: usize,
        inner: usize,
        k: usize,
        largest: bool,
    ) -> Result<(Self, [u32; 3]), GpuError> {
        const K: &str = "data_topk";
        let (a, grid) = AxisParams::new(K, outer, len, inner, 1)?;
        if k > len {
            return Err(GpuError::Shape {
                kernel: K,
                shapes: format!("[{outer}, {len}, {inner}]"),
                reason: format!("k = {k} is above the axis length {len}"),
            });
        }
        let p = TopKParams {
            lines: a.lines,
            len: a.len,
            inner: a.inner,
            k: k as u32,
            largest: largest as u32,
            row_threads: a.row_threads,
            _pad: [0; 2],
        };
        Ok((p, grid))
    }
}

#[cfg(test)]
#[path = "data_params_tests.rs"]
mod tests;
