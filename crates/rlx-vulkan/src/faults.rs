//! What the driver cannot be trusted to report cleanly on its own: running out of a memory heap
//! and losing the device.
//!
//! - Memory: every allocation is counted against its heap. An allocation that would take a heap
//!   past its size (or past [`ContextOptions::memory_budget`](crate::ContextOptions) where that
//!   is smaller) is refused with `OutOfMemory` before vkAllocateMemory is called: on unified
//!   memory (lavapipe, integrated GPUs) the heap is the host's RAM, and a driver that
//!   oversubscribes it gets the process killed rather than returning an error.
//! - Device loss: the first `ERROR_DEVICE_LOST` is remembered, and every later submission or
//!   allocation on the context returns `DeviceLost` without calling the driver again (a lost
//!   device may hang a wait). [`Context::simulate_device_loss`] makes the next submission fail as
//!   if the driver had returned `ERROR_DEVICE_LOST`, for tests of everything above the driver.

use crate::context::{lock, Context, Shared};
use ash::vk;
use rlx_backend::BackendError;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// Bytes allocated per heap and what each heap may hold.
#[derive(Debug)]
pub(crate) struct HeapBudget {
    used: Vec<AtomicU64>,
    limits: Vec<u64>,
}

impl HeapBudget {
    /// One counter per heap of `memory`; a heap's limit is its size, or `budget` if smaller.
    pub(crate) fn new(memory: &vk::PhysicalDeviceMemoryProperties, budget: Option<u64>) -> Self {
        let count = (memory.memory_heap_count as usize).min(vk::MAX_MEMORY_HEAPS);
        let limits: Vec<u64> = memory.memory_heaps[..count]
            .iter()
            .map(|h| match budget {
                Some(b) => b.min(h.size),
                None => h.size,
            })
            .collect();
        HeapBudget { used: limits.iter().map(|_| AtomicU64::new(0)).collect(), limits }
    }

    /// Reserves `bytes` on `heap`, or says why not (the message for `OutOfMemory`'s scope).
    pub(crate) fn reserve(&self, heap: usize, bytes: u64) -> Result<(), String> {
        let (Some(used), Some(&limit)) = (self.used.get(heap), self.limits.get(heap)) else {
            return Ok(());
        };
        let mut now = used.load(Ordering::Relaxed);
        loop {
            let after = now.saturating_add(bytes);
            if after > limit {
                return Err(format!(
                    "memory heap {heap} holds {limit} bytes and {now} are in use; free executables \
                     or use a smaller batch"
                ));
            }
            match used.compare_exchange_weak(now, after, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return Ok(()),
                Err(actual) => now = actual,
            }
        }
    }

    /// Returns `bytes` reserved on `heap`.
    pub(crate) fn release(&self, heap: usize, bytes: u64) {
        if let Some(used) = self.used.get(heap) {
            let _ = used.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |u| Some(u.saturating_sub(bytes)));
        }
    }

    /// Bytes in use on `heap`.
    pub(crate) fn used(&self, heap: usize) -> u64 {
        self.used.get(heap).map_or(0, |u| u.load(Ordering::Relaxed))
    }
}

/// Whether the device was lost, and a pending simulated loss.
#[derive(Debug, Default)]
pub(crate) struct LossState {
    /// The scope and result of the first call that reported the loss.
    lost: Mutex<Option<String>>,
    simulate: AtomicBool,
}

impl LossState {
    /// Remembers a loss reported during `scope`.
    pub(crate) fn record(&self, scope: &str, r: vk::Result) {
        let mut lost = lock(&self.lost);
        if lost.is_none() {
            *lost = Some(format!("{r} during {scope}"));
        }
    }

    /// Consumes a pending simulated loss: `Err(ERROR_DEVICE_LOST)` once after
    /// [`Context::simulate_device_loss`].
    pub(crate) fn take_simulated(&self) -> Result<(), vk::Result> {
        match self.simulate.swap(false, Ordering::AcqRel) {
            true => Err(vk::Result::ERROR_DEVICE_LOST),
            false => Ok(()),
        }
    }
}

impl Shared {
    /// `DeviceLost` when an earlier call lost the device: nothing more is sent to the driver.
    pub(crate) fn check_lost(&self, scope: &str) -> Result<(), BackendError> {
        match lock(&self.loss.lost).as_ref() {
            Some(first) => Err(BackendError::DeviceLost {
                device: self.name().to_string(),
                scope: scope.to_string(),
                reason: format!("the device was lost earlier ({first}); open a new Session to continue"),
            }),
            None => Ok(()),
        }
    }
}

impl Context {
    /// Makes the next queue submission of this context fail as if the driver had returned
    /// `VK_ERROR_DEVICE_LOST`; from then on the context behaves as on a lost device. For fault
    /// tests (docs/reliability.md); the device itself is untouched.
    #[doc(hidden)]
    pub fn simulate_device_loss(&self) {
        self.shared.loss.simulate.store(true, Ordering::Release);
    }

    /// Whether a call on this context lost the device (every later call returns `DeviceLost`).
    pub fn is_lost(&self) -> bool {
        lock(&self.shared.loss.lost).is_some()
    }

    /// Bytes allocated on memory heap `heap` by this context and still alive.
    pub fn heap_bytes_in_use(&self, heap: usize) -> u64 {
        self.shared.budget.used(heap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(sizes: &[u64]) -> vk::PhysicalDeviceMemoryProperties {
        let mut p = vk::PhysicalDeviceMemoryProperties {
            memory_heap_count: sizes.len() as u32,
            ..Default::default()
        };
        for (h, &s) in p.memory_heaps.iter_mut().zip(sizes) {
            h.size = s;
        }
        p
    }

    #[test]
    fn a_heap_refuses_what_passes_its_size_or_the_budget() {
        let b = HeapBudget::new(&props(&[1000, 10_000]), None);
        b.reserve(0, 600).unwrap();
        let err = b.reserve(0, 600).unwrap_err();
        assert!(err.contains("heap 0 holds 1000 bytes and 600 are in use"), "{err}");
        b.release(0, 600);
        b.reserve(0, 1000).unwrap();
        assert_eq!(b.used(0), 1000);
        // A budget below the heap size is the limit; an unknown heap is not counted.
        let b = HeapBudget::new(&props(&[1000, 10_000]), Some(5000));
        b.reserve(1, 5000).unwrap();
        assert!(b.reserve(1, 1).is_err());
        assert!(b.reserve(0, u64::MAX).is_err());
        b.reserve(7, u64::MAX).unwrap();
    }

    #[test]
    fn a_simulated_loss_fires_once() {
        let s = LossState::default();
        assert_eq!(s.take_simulated(), Ok(()));
        s.simulate.store(true, Ordering::Release);
        assert_eq!(s.take_simulated(), Err(vk::Result::ERROR_DEVICE_LOST));
        assert_eq!(s.take_simulated(), Ok(()));
        s.record("a", vk::Result::ERROR_DEVICE_LOST);
        s.record("b", vk::Result::ERROR_DEVICE_LOST);
        // The first report is kept; ash's Display for the result is its spec description.
        let first = format!("{} during a", vk::Result::ERROR_DEVICE_LOST);
        assert_eq!(lock(&s.lost).as_deref(), Some(first.as_str()));
    }
}
