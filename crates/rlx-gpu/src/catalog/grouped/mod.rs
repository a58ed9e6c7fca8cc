//! Kernel family "grouped": the experts of a mixture-of-experts layer (`GroupedMatMul`), each
//! slot's expert read from the ids on the device.
//!
//! - [`GroupedKernel::Vec`]: `matmul_grouped_vec.wgsl`, one workgroup per (slot, block of
//!   [`GROUPED_COLS`] output rows): the decode path.
//! - [`GroupedKernel::Tiled`]: `matmul_grouped_tiled.wgsl`, expert-major: one workgroup per
//!   (expert, block of [`GROUPED_TILE`] output rows) gathers the slots that chose its expert
//!   and computes them as 64 × 64 tiles, so each weight tile is read once per 64 slots: the
//!   prefill path, from [`GROUPED_TILED_MIN_SLOTS`] slots on.
//!
//! Both read f32 weights or f16 weights as stored (`f16_w`).
//!
//! All take [`GroupedParams`]; bindings x, w, ids (read), out (read_write).

use super::matmul::{B_F16, B_F32};
use super::{defines, name, params_of, Access, Defines, Spec};
use crate::grid;
use crate::GpuError;
use bytemuck::{Pod, Zeroable};

/// A kernel of the grouped family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GroupedKernel {
    /// The matrix-vector kernel; `f16_w`: the weights are f16 as stored.
    Vec { f16_w: bool },
    /// The expert-major tiled kernel.
    Tiled { f16_w: bool },
}

impl GroupedKernel {
    /// Every key of this family, in a fixed order.
    pub fn all() -> Vec<GroupedKernel> {
        [false, true]
            .into_iter()
            .flat_map(|f16_w| [GroupedKernel::Vec { f16_w }, GroupedKernel::Tiled { f16_w }])
            .collect()
    }

    /// The kernel for `slots` (tokens × choices): matrix-vector for few, expert-major tiles for
    /// many.
    pub fn choose(slots: usize, f16_w: bool) -> GroupedKernel {
        if slots >= GROUPED_TILED_MIN_SLOTS {
            GroupedKernel::Tiled { f16_w }
        } else {
            GroupedKernel::Vec { f16_w }
        }
    }
}

/// Slots (tokens × choices) from which the expert-major kernel runs.
pub const GROUPED_TILED_MIN_SLOTS: usize = 32;
/// Output rows (and slots) of one expert-major tile.
pub const GROUPED_TILE: u32 = 64;

/// Output rows one matrix-vector workgroup computes (COLS in the kernel).
pub const GROUPED_COLS: u32 = 4;

/// Params of the grouped kernels, byte-identical to `GroupedParams` in their WGSL.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct GroupedParams {
    /// Tokens T.
    pub t: u32,
    /// Rows of x per token: 1 (shared by the token's choices) or `top`.
    pub s: u32,
    /// Choices per token k.
    pub top: u32,
    /// Output rows per expert N.
    pub n: u32,
    /// Contraction length K.
    pub k: u32,
    /// Experts E.
    pub e: u32,
    pub pad: [u32; 2],
}

impl GroupedParams {
    /// Params for x [t, s, k], w [e, n, k], ids [t, top]. Errors when an index the kernels
    /// compute would pass u32.
    pub fn new(
        kernel: &'static str,
        x: [usize; 3],
        w: [usize; 3],
        top: usize,
    ) -> Result<GroupedParams, GpuError> {
        let [t, s, k] = x;
        let [e, n, wk] = w;
        if wk != k || (s != 1 && s != top) {
            return Err(GpuError::Shape {
                kernel,
                shapes: grid::shapes_text(&[&x, &w, &[t, top]]),
                reason: "x [T, S, K] and w [E, N, K] must share K, and S must be 1 or k".into(),
            });
        }
        let u = |what: &'static str, v: u64| grid::fits_u32(kernel, what, v);
        let (t64, k64, n64) = (t as u64, k as u64, n as u64);
        u("weight elements", (e as u64).saturating_mul(n64).saturating_mul(k64))?;
        u("x elements", t64.saturating_mul(s as u64).saturating_mul(k64))?;
        u("output elements", t64.saturating_mul(top as u64).saturating_mul(n64))?;
        Ok(GroupedParams {
            t: u("tokens", t64)?,
            s: u("slots", s as u64)?,
            top: u("choices per token", top as u64)?,
            n: u("output rows", n64)?,
            k: u("K", k64)?,
            e: u("experts", e as u64)?,
            pad: [0; 2],
        })
    }

    /// Workgroups of the expert-major kernel: x over the experts, y over ⌈N / 64⌉ row blocks.
    pub fn tiled_grid(&self) -> Result<[u32; 3], GpuError> {
        let max = grid::MAX_GROUPS_PER_DIM;
        for (what, v) in [("experts", self.e), ("output row blocks", self.n.div_ceil(GROUPED_TILE))] {
            if v > max {
                return Err(GpuError::TooLarge {
                    kernel: "matmul_grouped_tiled",
                    what,
                    value: u64::from(v),
                    limit: u64::from(max),
                });
            }
        }
        Ok([self.e, self.n.div_ceil(GROUPED_TILE), 1])
    }

    /// The grid of `kernel`.
    pub fn grid(&self, kernel: GroupedKernel) -> Result<[u32; 3], GpuError> {
        match kernel {
            GroupedKernel::Vec { .. } => self.vec_grid(),
            GroupedKernel::Tiled { .. } => self.tiled_grid(),
        }
    }

    /// Workgroups of the matrix-vector kernel: x over ⌈N / 4⌉ row blocks, y · z over the slots.
    pub fn vec_grid(&self) -> Result<[u32; 3], GpuError> {
        const KERNEL: &str = "matmul_grouped_vec";
        let max = grid::MAX_GROUPS_PER_DIM;
        let blocks = self.n.div_ceil(GROUPED_COLS);
        if blocks > max {
            return Err(GpuError::TooLarge {
                kernel: KERNEL,
                what: "output row blocks",
                value: u64::from(blocks),
                limit: u64::from(max),
            });
        }
        let slots = u64::from(self.t) * u64::from(self.top);
        let y = slots.min(u64::from(max));
        let z = slots.div_ceil(y.max(1));
        if z > u64::from(max) {
            return Err(GpuError::TooLarge {
                kernel: KERNEL,
                what: "token slots",
                value: slots,
                limit: u64::from(max) * u64::from(max),
            });
        }
        // y, z ≤ 65 535 here.
        Ok([blocks, y as u32, z as u32])
    }
}

/// The weight loads are the matrix-vector kernels' (`matmul::B_F32`, `matmul::B_F16`).
fn weight_defines(f16_w: bool) -> Defines {
    if f16_w {
        defines(&[("W_ELEM", "vec4<f16>"), ("B_LOAD", B_F16), ("ENABLE_F16", "enable f16;")])
    } else {
        defines(&[("W_ELEM", "vec4<f32>"), ("B_LOAD", B_F32), ("ENABLE_F16", "")])
    }
}

/// x, w, ids (read), out (read_write).
const BINDINGS: &[Access] = &[Access::Read, Access::Read, Access::Read, Access::ReadWrite];

pub(crate) fn spec(k: GroupedKernel) -> Spec {
    let (kernel, file, source, f16_w) = match k {
        GroupedKernel::Vec { f16_w } => (
            "matmul_grouped_vec",
            "kernels/grouped/matmul_grouped_vec.wgsl",
            kernel_src!("grouped/matmul_grouped_vec.wgsl", "include/grouped_common.wgsl"),
            f16_w,
        ),
        GroupedKernel::Tiled { f16_w } => (
            "matmul_grouped_tiled",
            "kernels/grouped/matmul_grouped_tiled.wgsl",
            kernel_src!("grouped/matmul_grouped_tiled.wgsl", "include/grouped_common.wgsl"),
            f16_w,
        ),
    };
    let name = name(&[kernel, if f16_w { "f16w" } else { "" }, "f32"]);
    Spec::wg256((name, weight_defines(f16_w)), file, source, BINDINGS, params_of::<GroupedParams>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_and_grids() {
        let p = GroupedParams::new("k", [7, 1, 33], [5, 9, 33], 2).unwrap();
        assert_eq!((p.t, p.s, p.top, p.n, p.k, p.e), (7, 1, 2, 9, 33, 5));
        assert_eq!(p.vec_grid().unwrap(), [3, 14, 1]);
        let p = GroupedParams::new("k", [40_000, 2, 8], [4, 1, 8], 2).unwrap();
        assert_eq!(p.vec_grid().unwrap(), [1, 65_535, 2]);
        let e = GroupedParams::new("k", [2, 3, 8], [4, 1, 8], 2).unwrap_err();
        assert!(matches!(e, GpuError::Shape { .. }), "{e}");
        let e = GroupedParams::new("k", [1, 1, 1 << 16], [1 << 10, 1 << 10, 1 << 16], 1).unwrap_err();
        assert!(matches!(e, GpuError::TooLarge { what: "weight elements", .. }), "{e}");
        assert_eq!(std::mem::size_of::<GroupedParams>(), 32);
    }

    #[test]
    fn variants_by_weight_dtype() {
        assert_eq!(spec(GroupedKernel::Vec { f16_w: true }).name, "matmul_grouped_vec_f16w_f32");
        assert!(spec(GroupedKernel::Vec { f16_w: false }).define("W_ELEM") == Some("vec4<f32>"));
        assert_eq!(spec(GroupedKernel::Tiled { f16_w: false }).name, "matmul_grouped_tiled_f32");
        assert_eq!(GroupedKernel::all().len(), 4);
        assert_eq!(GroupedKernel::choose(2, true), GroupedKernel::Vec { f16_w: true });
        assert_eq!(GroupedKernel::choose(66, false), GroupedKernel::Tiled { f16_w: false });
        let p = GroupedParams::new("k", [33, 1, 24], [5, 130, 24], 2).unwrap();
        assert_eq!(p.tiled_grid().unwrap(), [5, 3, 1]);
    }
}
