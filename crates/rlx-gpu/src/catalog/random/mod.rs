//! Kernel family "random": counter-based random numbers (`kernels/random/random_philox.wgsl`), one
//! variant per distribution, and its params struct.

use super::{name, params_of, upper, Spec, IN_OUT};
use crate::grid;
use crate::GpuError;
use bytemuck::{Pod, Zeroable};
use rlx_ir::RandomDist;

const SRC: &str = flat_kernel!("random/random_philox.wgsl");

/// Threads per workgroup; each thread writes one Philox block of 4 elements.
pub const RANDOM_WG: u32 = 256;

/// Largest element count the kernel takes (exclusive): its u32 block index and `4t + l`
/// arithmetic must not wrap.
pub const MAX_RANDOM_ELEMENTS: u64 = 1 << 31;

/// Params of `random_philox.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct RandomParams {
    pub numel: u32,
    /// Philox blocks = ⌈numel / 4⌉: one thread each.
    pub blocks: u32,
    pub _pad: [u32; 2],
}

impl RandomParams {
    /// Params and workgroup counts for `numel` (≥ 1) elements.
    pub fn new(numel: usize) -> Result<(Self, [u32; 3]), GpuError> {
        const K: &str = "random_philox";
        let n = numel as u64;
        if n >= MAX_RANDOM_ELEMENTS {
            return Err(GpuError::TooLarge {
                kernel: K,
                what: "element count",
                value: n,
                limit: MAX_RANDOM_ELEMENTS - 1,
            });
        }
        let blocks = n.div_ceil(4);
        let grid = grid::linear(K, blocks.div_ceil(RANDOM_WG as u64), RANDOM_WG)?;
        Ok((RandomParams { numel: n as u32, blocks: blocks as u32, _pad: [0; 2] }, grid))
    }
}

pub(crate) fn spec(dist: RandomDist) -> Spec {
    let parts = (name(&["random", dist.name(), "f32"]), vec![("DIST", upper("DIST_", dist.name()))]);
    Spec::wg256(parts, "kernels/random/random_philox.wgsl", SRC, IN_OUT, params_of::<RandomParams>())
}

/// Every key of this family, in a fixed order.
pub(crate) fn keys() -> Vec<RandomDist> {
    RandomDist::ALL.to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_cover_every_element_in_blocks_of_four() {
        let (p, grid) = RandomParams::new(9).unwrap();
        assert_eq!((p.numel, p.blocks), (9, 3));
        assert_eq!(grid, [1, 1, 1]);
        let (p, grid) = RandomParams::new(4 * 256 + 1).unwrap();
        assert_eq!(p.blocks, 257);
        assert_eq!(grid, [2, 1, 1]);
        assert!(RandomParams::new(1 << 31).is_err());
        assert_eq!(std::mem::size_of::<RandomParams>(), 16);
        assert_eq!(spec(RandomDist::Normal).name, "random_normal_f32");
    }
}
