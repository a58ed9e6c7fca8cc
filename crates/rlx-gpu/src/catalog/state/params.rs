//! Params of `write_rows.wgsl`, byte-identical to the WGSL struct of the same name.

use crate::catalog::words::{per_element, product};
use crate::GpuError;
use bytemuck::{Pod, Zeroable};

/// Params of `write_rows.wgsl`: the state seen as [outer, cap, inner] words, the rows as
/// [outer, n, inner] (`numel` words); block `o` starts at `offset[o · offset_stride]` (0: one
/// offset for all, 1: one per block).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct WriteRowsParams {
    pub numel: u32,
    pub n: u32,
    pub cap: u32,
    pub inner: u32,
    pub offset_stride: u32,
    pub _pad: [u32; 3],
}

impl WriteRowsParams {
    /// `per_block`: the offset has one entry per outer index (else one for all).
    pub fn new(
        outer: usize,
        cap: usize,
        inner: usize,
        n: usize,
        per_block: bool,
    ) -> Result<(Self, [u32; 3]), GpuError> {
        const K: &str = "data_write_rows";
        product(K, "state element count", [outer, cap, inner])?;
        let numel = product(K, "rows element count", [outer, n, inner])?;
        let p = WriteRowsParams {
            numel: numel as u32,
            n: n as u32,
            cap: cap as u32,
            inner: inner as u32,
            offset_stride: u32::from(per_block),
            _pad: [0; 3],
        };
        Ok((p, per_element(K, numel)?))
    }
}
