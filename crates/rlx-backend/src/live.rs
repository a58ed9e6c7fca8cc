//! Live-object accounting (issue 12 §3): how many device objects a backend holds right now, so
//! a soak run can show that nothing leaks ([`crate::Backend::live_objects`]).
//!
//! A driver counts each object when it is created and uncounts it when it is destroyed: it
//! keeps a [`LiveGuard`] from [`LiveCounters::track`] next to the object's handles, and the
//! guard's drop uncounts. Counters belong to one device (a driver context), not to the process:
//! two sessions do not see each other's objects.

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// The kinds of object counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LiveKind {
    Buffer,
    Pipeline,
    /// Descriptor sets (Vulkan) or bind groups (wgpu).
    BindGroup,
    CommandBuffer,
    /// Everything else: fences, pools, query pools, layouts, shader modules, pipeline caches.
    Other,
}

const KINDS: usize = 5;

/// A snapshot of a device's live objects.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LiveObjects {
    pub buffers: i64,
    /// Bytes of device memory bound to those buffers.
    pub buffer_bytes: i64,
    pub pipelines: i64,
    pub bind_groups: i64,
    pub command_buffers: i64,
    pub other: i64,
}

impl LiveObjects {
    /// Every counted object (bytes aside).
    pub fn objects(&self) -> i64 {
        self.buffers + self.pipelines + self.bind_groups + self.command_buffers + self.other
    }
}

impl fmt::Display for LiveObjects {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} buffers ({} B), {} pipelines, {} bind groups, {} command buffers, {} other",
            self.buffers,
            self.buffer_bytes,
            self.pipelines,
            self.bind_groups,
            self.command_buffers,
            self.other
        )
    }
}

/// The counters of one device.
#[derive(Debug, Default)]
pub struct LiveCounters {
    counts: [AtomicI64; KINDS],
    bytes: AtomicI64,
}

impl LiveCounters {
    pub fn new() -> Arc<LiveCounters> {
        Arc::new(LiveCounters::default())
    }

    /// Counts `n` objects of `kind` holding `bytes` until the returned guard drops.
    pub fn track(self: &Arc<Self>, kind: LiveKind, n: i64, bytes: i64) -> LiveGuard {
        self.counts[kind as usize].fetch_add(n, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        LiveGuard { held: Some((self.clone(), kind, n, bytes)) }
    }

    pub fn snapshot(&self) -> LiveObjects {
        let c = |k: LiveKind| self.counts[k as usize].load(Ordering::Relaxed);
        LiveObjects {
            buffers: c(LiveKind::Buffer),
            buffer_bytes: self.bytes.load(Ordering::Relaxed),
            pipelines: c(LiveKind::Pipeline),
            bind_groups: c(LiveKind::BindGroup),
            command_buffers: c(LiveKind::CommandBuffer),
            other: c(LiveKind::Other),
        }
    }
}

/// Uncounts what [`LiveCounters::track`] counted when dropped.
#[derive(Debug, Default)]
pub struct LiveGuard {
    held: Option<(Arc<LiveCounters>, LiveKind, i64, i64)>,
}

impl LiveGuard {
    /// A guard that counts nothing (an object not yet created).
    pub fn none() -> LiveGuard {
        LiveGuard { held: None }
    }
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        if let Some((c, kind, n, bytes)) = self.held.take() {
            c.counts[kind as usize].fetch_sub(n, Ordering::Relaxed);
            c.bytes.fetch_sub(bytes, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_count_until_dropped() {
        let c = LiveCounters::new();
        let a = c.track(LiveKind::Buffer, 1, 4096);
        let b = c.track(LiveKind::BindGroup, 3, 0);
        let s = c.snapshot();
        assert_eq!((s.buffers, s.buffer_bytes, s.bind_groups, s.objects()), (1, 4096, 3, 4));
        drop(a);
        assert_eq!(c.snapshot().buffer_bytes, 0);
        drop(b);
        drop(LiveGuard::none());
        assert_eq!(c.snapshot(), LiveObjects::default());
        assert!(c.snapshot().to_string().starts_with("0 buffers (0 B)"));
    }
}
