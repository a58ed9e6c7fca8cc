//! Fault bookkeeping both drivers keep for what the GPU driver cannot be trusted to report
//! cleanly on its own: running out of a memory heap and losing the device.
//!
//! - [`HeapBudget`]: every allocation is counted against its heap. An allocation that would take
//!   a heap past its size (or past a smaller budget) is refused before the driver is asked: on
//!   unified memory (lavapipe, integrated GPUs) the heap is the host's RAM, and a driver that
//!   oversubscribes it gets the process killed rather than returning an error.
//! - [`LossState`]: the first report of a lost device is remembered (every later call then
//!   returns `DeviceLost` without reaching the driver, since a lost device may hang a wait), and
//!   a simulated loss can be armed for tests of everything above the driver.
//! - [`Failure`]: what a failed driver call means, as the [`BackendError`] both drivers return;
//!   [`check_range`] refuses a host access past the end of a buffer.

use super::lock;
use rlx_backend::BackendError;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// Bytes allocated per heap and what each heap may hold.
#[derive(Debug)]
pub struct HeapBudget {
    used: Vec<AtomicU64>,
    limits: Vec<u64>,
}

impl HeapBudget {
    /// One counter per heap of `sizes`; a heap's limit is its size, or `budget` if smaller.
    pub fn new(sizes: impl IntoIterator<Item = u64>, budget: Option<u64>) -> Self {
        let limits: Vec<u64> = sizes
            .into_iter()
            .map(|size| match budget {
                Some(b) => b.min(size),
                None => size,
            })
            .collect();
        HeapBudget { used: limits.iter().map(|_| AtomicU64::new(0)).collect(), limits }
    }

    /// Reserves `bytes` on `heap`, or says why not (the message for `OutOfMemory`'s scope). An
    /// unknown heap is not counted.
    pub fn reserve(&self, heap: usize, bytes: u64) -> Result<(), String> {
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
    pub fn release(&self, heap: usize, bytes: u64) {
        if let Some(used) = self.used.get(heap) {
            let _ = used.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |u| Some(u.saturating_sub(bytes)));
        }
    }

    /// Bytes in use on `heap`.
    pub fn used(&self, heap: usize) -> u64 {
        self.used.get(heap).map_or(0, |u| u.load(Ordering::Relaxed))
    }
}

/// Whether the device was lost (and why, as first reported), and a pending simulated loss.
#[derive(Debug, Default)]
pub struct LossState {
    lost: Mutex<Option<String>>,
    simulate: AtomicBool,
}

impl LossState {
    /// Remembers a loss; only the first reason is kept.
    pub fn record(&self, reason: impl FnOnce() -> String) {
        lock(&self.lost).get_or_insert_with(reason);
    }

    /// The first reported reason, once the device was lost.
    pub fn lost(&self) -> Option<String> {
        lock(&self.lost).clone()
    }

    /// `DeviceLost` on `device` during `scope` once the device was lost, with the reason
    /// `explain` makes of the first one reported.
    pub fn check(
        &self,
        device: &str,
        scope: &str,
        explain: impl FnOnce(String) -> String,
    ) -> Result<(), BackendError> {
        match self.lost() {
            Some(first) => Err(BackendError::DeviceLost {
                device: device.to_string(),
                scope: scope.to_string(),
                reason: explain(first),
            }),
            None => Ok(()),
        }
    }

    /// Arms a simulated loss: the next [`Self::take_simulated`] answers true.
    pub fn simulate(&self) {
        self.simulate.store(true, Ordering::Release);
    }

    /// Consumes a pending simulated loss: true once after [`Self::simulate`].
    pub fn take_simulated(&self) -> bool {
        self.simulate.swap(false, Ordering::AcqRel)
    }
}

/// What a failed driver call means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    OutOfMemory,
    /// The device was lost, with the driver's reason.
    DeviceLost(String),
    /// Anything else, with the driver's reason.
    Other(String),
}

impl Failure {
    /// The error of `device` failing this way during `scope`; `requested` is the byte count of
    /// an allocation (for `OutOfMemory`), 0 otherwise.
    pub fn error(self, device: &str, scope: impl Into<String>, requested: u64) -> BackendError {
        let (device, scope) = (device.to_string(), scope.into());
        match self {
            Failure::OutOfMemory => BackendError::OutOfMemory { device, scope, requested },
            Failure::DeviceLost(reason) => BackendError::DeviceLost { device, scope, reason },
            Failure::Other(reason) => BackendError::Driver { device, scope, reason },
        }
    }
}

/// `LimitExceeded` unless [offset, offset + len) lies inside the `size` bytes of buffer `label`.
pub fn check_range(device: &str, label: &str, size: u64, offset: u64, len: u64) -> Result<(), BackendError> {
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(()),
        _ => Err(BackendError::LimitExceeded {
            device: device.to_string(),
            what: "buffer range end",
            node: label.to_string(),
            requested: offset.saturating_add(len),
            limit: size,
            hint: format!("offset {offset} + length {len} passes the end of the buffer"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_heap_refuses_what_passes_its_size_or_the_budget() {
        let b = HeapBudget::new([1000, 10_000], None);
        b.reserve(0, 600).unwrap();
        let err = b.reserve(0, 600).unwrap_err();
        assert!(err.contains("heap 0 holds 1000 bytes and 600 are in use"), "{err}");
        b.release(0, 600);
        b.reserve(0, 1000).unwrap();
        assert_eq!(b.used(0), 1000);
        // A budget below the heap size is the limit; an unknown heap is not counted.
        let b = HeapBudget::new([1000, 10_000], Some(5000));
        b.reserve(1, 5000).unwrap();
        assert!(b.reserve(1, 1).is_err());
        assert!(b.reserve(0, u64::MAX).is_err());
        b.reserve(7, u64::MAX).unwrap();
    }

    #[test]
    fn a_simulated_loss_fires_once_and_the_first_reason_is_kept() {
        let s = LossState::default();
        assert!(!s.take_simulated());
        s.simulate();
        assert!(s.take_simulated());
        assert!(!s.take_simulated());
        assert_eq!(s.lost(), None);
        s.record(|| "a".into());
        s.record(|| "b".into());
        assert_eq!(s.lost().as_deref(), Some("a"));
        let e = s.check("gpu0", "run", |first| format!("lost ({first})")).unwrap_err();
        assert!(matches!(&e, BackendError::DeviceLost { reason, .. } if reason == "lost (a)"), "{e}");
    }

    #[test]
    fn failures_and_ranges_become_backend_errors() {
        let e = Failure::OutOfMemory.error("gpu0", "allocating x", 64);
        assert!(matches!(e, BackendError::OutOfMemory { requested: 64, .. }));
        let e = Failure::Other("bad bind group".into()).error("gpu0", "running", 0);
        assert_eq!(e.to_string(), "gpu0: running failed: bad bind group");
        assert!(check_range("gpu0", "b", 16, 8, 8).is_ok());
        let e = check_range("gpu0", "b", 16, 8, 9).unwrap_err();
        assert!(matches!(e, BackendError::LimitExceeded { requested: 17, limit: 16, .. }), "{e}");
        assert!(check_range("gpu0", "b", 16, u64::MAX, 2).is_err());
    }
}
