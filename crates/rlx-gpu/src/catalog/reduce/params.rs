//! Params of the reduce kernels (`reduce.wgsl`, `arg_reduce.wgsl`, `cumsum.wgsl`, `topk.wgsl`),
//! byte-identical to the WGSL structs of the same name. Constructors check what the kernels'
//! u32 index arithmetic needs ([`crate::catalog::words`]) and return the workgroup counts.

use crate::catalog::words::{count32, per_row, product, row_threads};
use crate::GpuError;
use bytemuck::{Pod, Zeroable};

/// Highest rank of each of the kept and the reduced dims of a reduction (after merging).
pub const REDUCE_MAX_RANK: usize = 4;

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
