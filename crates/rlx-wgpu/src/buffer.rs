//! Buffers by role: storage (bound to kernels, written by the queue, copied out), and readback
//! staging (MAP_READ | COPY_DST). The outputs of a run (and its GPU timestamps) are packed into
//! as few staging buffers as the buffer-size limit allows (rlx-gpu's `IoPlan`), built once at
//! compile time and reused by every run: one copy per output, one map per buffer, one wait.

use rlx_gpu::driver::lock;
use rlx_gpu::Place;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

/// Usage of every device-side storage buffer: bound to kernels, written by the queue, copied
/// out for readback.
const STORAGE: wgpu::BufferUsages =
    wgpu::BufferUsages::STORAGE.union(wgpu::BufferUsages::COPY_DST).union(wgpu::BufferUsages::COPY_SRC);

/// A storage buffer of at least `size` bytes (at least one word; copies and bindings need
/// multiples of 4).
pub(crate) fn storage(device: &wgpu::Device, label: &str, size: u64) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: size.max(4).div_ceil(4) * 4,
        usage: STORAGE,
        mapped_at_creation: false,
    })
}

/// The staging buffers of one executable.
pub(crate) struct Staging {
    pub buffers: Vec<wgpu::Buffer>,
}

impl Staging {
    pub(crate) fn new(device: &wgpu::Device, sizes: &[u64]) -> Self {
        let buffers = sizes
            .iter()
            .enumerate()
            .map(|(i, &size)| {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(&format!("staging {i}")),
                    size: size.max(wgpu::COPY_BUFFER_ALIGNMENT),
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            })
            .collect();
        Staging { buffers }
    }

    /// Requests a map of every buffer. The returned future is ready with (buffer index,
    /// result) for each once every callback ran: after a blocking `device.poll` on native, on
    /// the browser's event loop on the web.
    pub(crate) fn map_all(&self) -> MapAll {
        let state = Arc::new(Mutex::new(MapState {
            pending: self.buffers.len(),
            results: Vec::with_capacity(self.buffers.len()),
            waker: None,
        }));
        for (i, b) in self.buffers.iter().enumerate() {
            let state = state.clone();
            b.map_async(wgpu::MapMode::Read, .., move |r| {
                let mut s = lock(&state);
                s.results.push((i, r));
                s.pending = s.pending.saturating_sub(1);
                if s.pending == 0 {
                    if let Some(w) = s.waker.take() {
                        w.wake();
                    }
                }
            });
        }
        MapAll { state }
    }

    /// Calls `f` on the bytes of `place` while mapped (no copy).
    pub(crate) fn read<T>(&self, place: Place, f: impl FnOnce(&[u8]) -> T) -> Result<T, String> {
        let buffer = self.buffers.get(place.buffer).ok_or("no such staging buffer")?;
        let view = buffer
            .get_mapped_range(place.offset..place.offset + place.size)
            .map_err(|e| format!("viewing staging buffer {}: {e}", place.buffer))?;
        Ok(f(&view))
    }

    /// Unmaps the buffers of `mapped` (indices), ready for the next run.
    pub(crate) fn unmap(&self, mapped: &[usize]) {
        for b in mapped.iter().filter_map(|&i| self.buffers.get(i)) {
            b.unmap();
        }
    }
}

struct MapState {
    pending: usize,
    results: Vec<(usize, Result<(), wgpu::BufferAsyncError>)>,
    waker: Option<Waker>,
}

/// The maps of [`Staging::map_all`], ready when every buffer's callback has run.
pub(crate) struct MapAll {
    state: Arc<Mutex<MapState>>,
}

impl Future for MapAll {
    type Output = Vec<(usize, Result<(), wgpu::BufferAsyncError>)>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut s = lock(&self.state);
        if s.pending == 0 {
            return Poll::Ready(std::mem::take(&mut s.results));
        }
        s.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}
