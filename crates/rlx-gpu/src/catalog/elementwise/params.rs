//! Params of the elementwise family ([`super`]), byte-identical to the WGSL structs of the
//! same name. Drivers upload them as push constants (or a uniform buffer) with
//! `bytemuck::bytes_of`.
//!
//! Constructors check everything a kernel's u32 index arithmetic and the dispatch limits need,
//! and return the workgroup counts with the params, so a driver never computes either.

use crate::catalog::words::{per_element, product};
use crate::grid::{self, fits_u32, numel, shapes_text};
use crate::GpuError;
use bytemuck::{Pod, Zeroable};

/// Highest rank the broadcasting elementwise kernels index.
pub const MAX_RANK: usize = 8;

/// Threads per workgroup of the 1-D kernels (binary, unary).
const WG_1D: u32 = 256;

/// Params of `binary.wgsl`: `out[i] = a[Σ c·a_strides] op b[Σ c·b_strides]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct BinaryParams {
    pub numel: u32,
    pub rank: u32,
    pub _pad: [u32; 2],
    /// Output dims, row-major; entries past `rank` are unused.
    pub shape: [u32; MAX_RANK],
    /// Element stride of `a` per output dim (0 where `a` is broadcast).
    pub a_strides: [u32; MAX_RANK],
    pub b_strides: [u32; MAX_RANK],
}

impl BinaryParams {
    /// Params for contiguous `a` and `b` broadcast numpy-style to `out` (shapes right-aligned,
    /// each dim equal to the output's or 1). Returns the params and the workgroup counts.
    pub fn broadcast(out: &[usize], a: &[usize], b: &[usize]) -> Result<(Self, [u32; 3]), GpuError> {
        const K: &str = "binary";
        let shape_err =
            |reason: String| GpuError::Shape { kernel: K, shapes: shapes_text(&[out, a, b]), reason };
        if out.len() > MAX_RANK {
            return Err(shape_err(format!("rank {} is above {MAX_RANK}; merge dims first", out.len())));
        }
        if a.len() > out.len() || b.len() > out.len() {
            return Err(shape_err("an operand has a higher rank than the output".into()));
        }
        let n = numel(K, "output element count", out)?;
        numel(K, "operand a element count", a)?;
        numel(K, "operand b element count", b)?;
        let mut p = BinaryParams { numel: n, rank: out.len() as u32, ..Zeroable::zeroed() };
        for (which, operand, strides) in [("a", a, &mut p.a_strides), ("b", b, &mut p.b_strides)] {
            let lead = out.len() - operand.len();
            let mut stride = 1u64;
            for d in (0..out.len()).rev() {
                let od = out[d];
                let xd = if d >= lead { operand[d - lead] } else { 1 };
                strides[d] = if xd == od && xd != 1 {
                    stride as u32
                } else if xd == 1 {
                    0
                } else {
                    return Err(shape_err(format!("{which} has {xd} at output dim {d} of size {od}")));
                };
                stride *= xd as u64;
            }
        }
        for (slot, &d) in p.shape.iter_mut().zip(out) {
            *slot = d as u32;
        }
        let groups = (n as u64).div_ceil(WG_1D as u64);
        Ok((p, grid::linear(K, groups, WG_1D)?))
    }
}

/// Params of `unary.wgsl`: `out[i] = op(x[i])` for `i < numel`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct UnaryParams {
    pub numel: u32,
    pub _pad: [u32; 3],
}

impl UnaryParams {
    pub fn new(numel: usize) -> Result<(Self, [u32; 3]), GpuError> {
        let n = fits_u32("unary", "element count", numel as u64)?;
        let groups = (n as u64).div_ceil(WG_1D as u64);
        Ok((UnaryParams { numel: n, _pad: [0; 3] }, grid::linear("unary", groups, WG_1D)?))
    }
}

/// Highest rank of a where (after merging dims): four words per dim fill the 128 bytes.
pub const WHERE_MAX_RANK: usize = 7;

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
