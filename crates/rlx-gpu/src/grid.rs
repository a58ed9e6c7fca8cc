//! Workgroup counts.
//!
//! Vulkan guarantees only 65 535 workgroups per dimension, so a 1-D launch of more groups is laid
//! out as a 2-D grid and kernels rebuild the linear group id as `wid.y * nwg.x + wid.x`,
//! skipping ids past the real count. Kernels index with u32, so the number of threads a grid
//! launches must fit in u32 as well.

use crate::GpuError;

/// Per-dimension workgroup count every Vulkan device supports (and wgpu's default limit).
pub const MAX_GROUPS_PER_DIM: u32 = 65_535;

/// Workgroup counts for `groups` groups of `group_threads` threads each, as [x, y, 1] with
/// x·y ≥ groups and x·y − groups < x. Zero groups gives [0, 1, 1], a dispatch that does nothing.
pub fn linear(kernel: &'static str, groups: u64, group_threads: u32) -> Result<[u32; 3], GpuError> {
    let max = MAX_GROUPS_PER_DIM as u64;
    if groups == 0 {
        return Ok([0, 1, 1]);
    }
    let x = groups.min(max);
    let y = groups.div_ceil(x);
    if y > max {
        return Err(GpuError::TooLarge { kernel, what: "workgroup count", value: groups, limit: max * max });
    }
    let threads = x * y * group_threads as u64;
    if threads > u32::MAX as u64 + 1 {
        return Err(GpuError::TooLarge {
            kernel,
            what: "thread count",
            value: threads,
            limit: u32::MAX as u64 + 1,
        });
    }
    // x, y ≤ 65 535 here, so the casts are exact.
    Ok([x as u32, y as u32, 1])
}

/// The shapes of a params constructor's error message: "[2, 3] and [3]".
pub(crate) fn shapes_text(shapes: &[&[usize]]) -> String {
    shapes.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>().join(" and ")
}

/// The element count of `dims`, checked to fit u32 index arithmetic.
pub(crate) fn numel(kernel: &'static str, what: &'static str, dims: &[usize]) -> Result<u32, GpuError> {
    let n = dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d as u64));
    fits_u32(kernel, what, n.unwrap_or(u64::MAX))
}

/// Checks that a count used in u32 index arithmetic fits.
pub(crate) fn fits_u32(kernel: &'static str, what: &'static str, value: u64) -> Result<u32, GpuError> {
    u32::try_from(value).map_err(|_| GpuError::TooLarge { kernel, what, value, limit: u32::MAX as u64 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_counts_stay_one_dimensional() {
        assert_eq!(linear("k", 1, 256).unwrap(), [1, 1, 1]);
        assert_eq!(linear("k", 65_535, 256).unwrap(), [65_535, 1, 1]);
        assert_eq!(linear("k", 0, 256).unwrap(), [0, 1, 1]);
    }

    #[test]
    fn large_counts_wrap_into_y() {
        let [x, y, z] = linear("k", 65_536, 64).unwrap();
        assert_eq!((x, y, z), (65_535, 2, 1));
        let [x, y, _] = linear("k", 1_000_000, 1).unwrap();
        assert!(x as u64 * y as u64 >= 1_000_000 && (x as u64 * y as u64) - 1_000_000 < x as u64);
    }

    #[test]
    fn too_many_threads_is_an_error() {
        // 16e6 groups → 65535 × 245 groups of 256 = 4 110 355 200 threads: fits.
        assert_eq!(linear("k", 16_000_000, 256).unwrap(), [65_535, 245, 1]);
        // 2^24 groups → 65535 × 257 groups of 256 = 4 311 685 120 threads: past 2^32.
        let e = linear("k", 1 << 24, 256).unwrap_err();
        assert!(matches!(e, GpuError::TooLarge { what: "thread count", .. }), "{e}");
        let e = linear("k", 65_535 * 65_535 + 1, 1).unwrap_err();
        assert!(matches!(e, GpuError::TooLarge { what: "workgroup count", .. }), "{e}");
    }

    #[test]
    fn fits_u32_checks() {
        assert_eq!(fits_u32("k", "n", 7).unwrap(), 7);
        assert!(fits_u32("k", "n", 1 << 32).is_err());
    }
}
