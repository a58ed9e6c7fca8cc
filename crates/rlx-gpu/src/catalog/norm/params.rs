//! Params of the row kernels: softmax and log-softmax (`softmax_row.wgsl`) and the row norms
//! (`norm_row.wgsl`), byte-identical to the WGSL structs of the same name.

use crate::grid::{self, numel};
use crate::GpuError;
use bytemuck::{Pod, Zeroable};

/// Params of `softmax_row.wgsl`: softmax over each of `rows` contiguous rows of `cols`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct SoftmaxParams {
    pub rows: u32,
    pub cols: u32,
    pub _pad: [u32; 2],
}

impl SoftmaxParams {
    pub fn new(rows: usize, cols: usize) -> Result<(Self, [u32; 3]), GpuError> {
        const K: &str = "softmax_row";
        numel(K, "element count", &[rows, cols])?;
        let p = SoftmaxParams { rows: rows as u32, cols: cols as u32, _pad: [0; 2] };
        // One workgroup per row; the 2-D grid never launches more than rows + 65 534 groups.
        Ok((p, grid::linear(K, rows as u64, 1)?))
    }
}

/// Params of `norm_row.wgsl`: a norm over each of `rows` contiguous rows of `cols`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct NormParams {
    pub rows: u32,
    pub cols: u32,
    pub eps: f32,
    pub _pad: u32,
}

impl NormParams {
    pub fn new(rows: usize, cols: usize, eps: f32) -> Result<(Self, [u32; 3]), GpuError> {
        const K: &str = "norm_row";
        numel(K, "element count", &[rows, cols])?;
        let p = NormParams { rows: rows as u32, cols: cols as u32, eps, _pad: 0 };
        // One workgroup per row.
        Ok((p, grid::linear(K, rows as u64, 1)?))
    }
}
