//! What the driver cannot be trusted to report cleanly on its own: running out of a memory heap
//! and losing the device. The bookkeeping is rlx-gpu's ([`rlx_gpu::driver::faults`]); here it
//! meets Vulkan.
//!
//! - Memory: every allocation is counted against its heap. An allocation that would take a heap
//!   past its size (or past [`ContextOptions::memory_budget`](crate::ContextOptions) where that
//!   is smaller) is refused with `OutOfMemory` before vkAllocateMemory is called.
//! - Device loss: the first `ERROR_DEVICE_LOST` is remembered, and every later submission or
//!   allocation on the context returns `DeviceLost` without calling the driver again (a lost
//!   device may hang a wait). [`Context::simulate_device_loss`] makes the next submission fail as
//!   if the driver had returned `ERROR_DEVICE_LOST`, for tests of everything above the driver.

use crate::context::{Context, Shared};
use ash::vk;
use rlx_backend::BackendError;

/// The size of each memory heap of `memory`.
pub(crate) fn heap_sizes(memory: &vk::PhysicalDeviceMemoryProperties) -> impl Iterator<Item = u64> + '_ {
    let count = (memory.memory_heap_count as usize).min(vk::MAX_MEMORY_HEAPS);
    memory.memory_heaps[..count].iter().map(|h| h.size)
}

impl Shared {
    /// `DeviceLost` when an earlier call lost the device: nothing more is sent to the driver.
    pub(crate) fn check_lost(&self, scope: &str) -> Result<(), BackendError> {
        self.loss.check(self.name(), scope, |first| {
            format!("the device was lost earlier ({first}); open a new Session to continue")
        })
    }

    /// Consumes a pending simulated loss: `Err(ERROR_DEVICE_LOST)` once after
    /// [`Context::simulate_device_loss`].
    pub(crate) fn take_simulated_loss(&self) -> Result<(), vk::Result> {
        match self.loss.take_simulated() {
            true => Err(vk::Result::ERROR_DEVICE_LOST),
            false => Ok(()),
        }
    }
}

impl Context {
    /// Makes the next queue submission of this context fail as if the driver had returned
    /// `VK_ERROR_DEVICE_LOST`; from then on the context behaves as on a lost device. For fault
    /// tests (docs/reliability.md); the device itself is untouched.
    #[doc(hidden)]
    pub fn simulate_device_loss(&self) {
        self.shared.loss.simulate();
    }

    /// Whether a call on this context lost the device (every later call returns `DeviceLost`).
    pub fn is_lost(&self) -> bool {
        self.shared.loss.lost().is_some()
    }

    /// Bytes allocated on memory heap `heap` by this context and still alive.
    pub fn heap_bytes_in_use(&self, heap: usize) -> u64 {
        self.shared.budget.used(heap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heap_sizes_stop_at_the_heap_count() {
        let mut p = vk::PhysicalDeviceMemoryProperties { memory_heap_count: 2, ..Default::default() };
        p.memory_heaps[0].size = 1000;
        p.memory_heaps[1].size = 10_000;
        p.memory_heaps[2].size = 5;
        assert_eq!(heap_sizes(&p).collect::<Vec<_>>(), [1000, 10_000]);
        // The first report of a loss is kept, in ash's wording of the result.
        let loss = rlx_gpu::driver::LossState::default();
        for scope in ["a", "b"] {
            let r = vk::Result::ERROR_DEVICE_LOST;
            loss.record(|| format!("{r} during {scope}"));
        }
        assert_eq!(loss.lost(), Some(format!("{} during a", vk::Result::ERROR_DEVICE_LOST)));
    }
}
