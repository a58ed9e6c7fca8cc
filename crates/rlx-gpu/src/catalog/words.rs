//! What the kernels that move 32-bit words share (the shape, reduce and state families and
//! where): their workgroup size, their element-count limit and their grid helpers.
//!
//! These kernels index with u32 and loop with `i += 256`, so every element count they see stays
//! below 2^31 ([`MAX_ELEMENTS`]): no loop counter can wrap. Bindings are far smaller than that
//! (2^29 words at 2 GiB), so the limit never bites a real graph.

use crate::grid;
use crate::GpuError;

/// Threads per workgroup of every word-moving kernel.
pub const DATA_WG: u32 = 256;

/// Largest element count a word-moving kernel indexes (exclusive).
pub const MAX_ELEMENTS: u64 = 1 << 31;

/// Checks an element count against [`MAX_ELEMENTS`] and returns it as u32.
pub(crate) fn count32(kernel: &'static str, what: &'static str, n: u64) -> Result<u32, GpuError> {
    if n >= MAX_ELEMENTS {
        return Err(GpuError::TooLarge { kernel, what, value: n, limit: MAX_ELEMENTS - 1 });
    }
    Ok(n as u32)
}

/// Π dims, checked against [`MAX_ELEMENTS`].
pub(crate) fn product(
    kernel: &'static str,
    what: &'static str,
    dims: impl IntoIterator<Item = usize>,
) -> Result<u64, GpuError> {
    let n = dims.into_iter().try_fold(1u64, |acc, d| acc.checked_mul(d as u64)).unwrap_or(u64::MAX);
    count32(kernel, what, n)?;
    Ok(n)
}

/// Workgroup counts of a kernel with one thread per element.
pub(crate) fn per_element(kernel: &'static str, n: u64) -> Result<[u32; 3], GpuError> {
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
pub(crate) fn per_row(kernel: &'static str, rows: u64, row_threads: u32) -> Result<[u32; 3], GpuError> {
    let per_group = (DATA_WG / row_threads.clamp(1, DATA_WG)) as u64;
    grid::linear(kernel, rows.div_ceil(per_group), 1)
}
