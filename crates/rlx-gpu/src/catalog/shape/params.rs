//! Params of the shape kernels (`copy.wgsl`, `fill.wgsl`, `gather.wgsl`, `scatter_add.wgsl`),
//! byte-identical to the
//! WGSL structs of the same name. Constructors check what the kernels' u32 index arithmetic
//! needs ([`crate::catalog::words`]) and return the workgroup counts.

use crate::catalog::elementwise::params::MAX_RANK;
use crate::catalog::words::{count32, per_element, product, DATA_WG};
use crate::GpuError;
use bytemuck::{Pod, Zeroable};

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

/// Params of `scatter_add.wgsl`: src seen as [outer, nidx, inner], the ids flat (`nidx`), the
/// output [outer, len, inner]. An output row v has `lanes` = outer·inner elements, taken in
/// `blocks` blocks of [`SCATTER_ADD_BLOCK`]; one workgroup per (v, block), `groups` = len·blocks.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct ScatterAddParams {
    pub groups: u32,
    pub len: u32,
    pub nidx: u32,
    pub inner: u32,
    pub lanes: u32,
    pub blocks: u32,
    pub _pad: [u32; 2],
}

/// Lanes (output elements of one row v) a `scatter_add.wgsl` workgroup owns: its 256 threads
/// times the 4 accumulators each keeps (`WG · LANES` in the kernel).
pub const SCATTER_ADD_BLOCK: usize = 1024;

impl ScatterAddParams {
    /// Fails when src or the output has more elements than the kernel's u32 offsets reach.
    pub fn new(outer: usize, len: usize, inner: usize, nidx: usize) -> Result<(Self, [u32; 3]), GpuError> {
        const K: &str = "data_scatter_add";
        product(K, "src element count", [outer, nidx, inner])?;
        let n = product(K, "output element count", [outer, len, inner])?;
        // lanes ≤ n < 2^31 unless len = 0, where n = 0 and no group runs.
        let lanes = if n == 0 { 0 } else { outer * inner };
        let blocks = lanes.div_ceil(SCATTER_ADD_BLOCK).max(1);
        let groups = product(K, "workgroup count", [len, blocks])?;
        let groups = if n == 0 { 0 } else { groups };
        let p = ScatterAddParams {
            groups: groups as u32,
            len: len as u32,
            nidx: nidx as u32,
            inner: inner as u32,
            lanes: lanes as u32,
            blocks: blocks as u32,
            _pad: [0; 2],
        };
        Ok((p, crate::grid::linear(K, groups, DATA_WG)?))
    }
}
