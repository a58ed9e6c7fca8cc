//! Params of `rope.wgsl`, byte-identical to the WGSL struct of the same name.

use crate::catalog::shape_err;
use crate::grid::{self, numel};
use crate::GpuError;
use bytemuck::{Pod, Zeroable};
use rlx_ir::{AttnLayout, RopeStyle};

/// Threads per workgroup.
const WG_1D: u32 = 256;

/// Params of `rope.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct RopeParams {
    pub numel: u32,
    pub d: u32,
    pub rot: u32,
    pub s: u32,
    pub h: u32,
    /// 1 for [B, H, S, D], 0 for [B, S, H, D].
    pub bhsd: u32,
    /// 1 for GPT-J, 0 for NeoX.
    pub gptj: u32,
    pub _pad: u32,
}

impl RopeParams {
    /// Params for x of shape `x` (rank 4 per `layout`) rotating its first `rotary_dims` dims.
    pub fn new(
        style: RopeStyle,
        layout: AttnLayout,
        rotary_dims: usize,
        x: &[usize],
    ) -> Result<(Self, [u32; 3]), GpuError> {
        const K: &str = "rope";
        let &[_, d1, d2, d] = x else {
            return Err(shape_err(K, &[x], "x must be rank 4"));
        };
        let (s, h) = match layout {
            AttnLayout::Bshd => (d1, d2),
            AttnLayout::Bhsd => (d2, d1),
        };
        if !rotary_dims.is_multiple_of(2) || rotary_dims > d {
            return Err(shape_err(K, &[x], format!("rotary dims {rotary_dims} must be even and ≤ {d}")));
        }
        let n = numel(K, "element count", x)?;
        numel(K, "cos/sin element count", &[s, rotary_dims / 2])?;
        let p = RopeParams {
            numel: n,
            d: d as u32,
            rot: rotary_dims as u32,
            s: s as u32,
            h: h as u32,
            bhsd: matches!(layout, AttnLayout::Bhsd) as u32,
            gptj: matches!(style, RopeStyle::GptJ) as u32,
            _pad: 0,
        };
        let groups = (n as u64).div_ceil(WG_1D as u64);
        Ok((p, grid::linear(K, groups, WG_1D)?))
    }
}
