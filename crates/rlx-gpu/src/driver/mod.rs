//! What the GPU drivers (rlx-vulkan, rlx-wgpu) share that is not a call into their API, so that
//! a driver reads as probe → capabilities → allocate → record → launch:
//!
//! - the probes' plain-data results and their conversion to [`GpuLimits`](crate::GpuLimits):
//!   [`adapter`] (a Vulkan physical device; device choice) and [`wgpu_info`] (a wgpu adapter
//!   and the device opened on it);
//! - fault bookkeeping ([`faults`]): per-heap memory budgets, and a lost device remembered (or
//!   simulated for tests);
//! - the pipelines of a device by kernel key ([`pipelines`]) and the pipeline cache on disk
//!   besides the driver's own cache object ([`pipeline_cache`]);
//! - the host-written leaves of an executable and their checks ([`leaves`]), and the copies of
//!   staged host I/O ([`host_io`](mod@host_io));
//! - run times from timestamps and clocks ([`timing`]).
//!
//! Live-object counting lives in rlx-backend (`LiveCounters`), the cache file's envelope in
//! [`CacheFile`](crate::CacheFile), its folder in [`PipelineCacheDir`](crate::PipelineCacheDir).

pub mod adapter;
pub mod faults;
pub mod host_io;
pub mod leaves;
pub mod pipeline_cache;
pub mod pipelines;
pub mod timing;
pub mod wgpu_info;

pub use adapter::{
    pick_adapter, pick_memory_type, AdapterFeatures, AdapterInfo, AdapterLimits, AdapterType, MemoryHeap,
    PickError,
};
pub use faults::{check_range, Failure, HeapBudget, LossState};
pub use host_io::{host_io, staged_host_io, Copy, HostIo, HostOutput};
pub use leaves::{group_mismatch, initial_contents, LeafTable};
pub use pipeline_cache::{DiskCache, VulkanCacheId};
pub use pipelines::PipelineTable;
pub use timing::{profiling, rest_profile, split_profile, Timestamps};
pub use wgpu_info::{EnabledFeatures, KeyLimits, WgpuInfo};

use std::sync::{Mutex, MutexGuard};

/// Locks a mutex, recovering the data if another thread panicked while holding it: every value
/// the drivers guard stays consistent between statements.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
