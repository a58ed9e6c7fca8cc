//! Buffers by role: storage (bound to kernels, written by the queue, copied out), and readback
//! staging (MAP_READ | COPY_DST). The outputs of a run (and its GPU timestamps) are packed into
//! as few staging buffers as the buffer-size limit allows (rlx-gpu's `IoPlan`), built once at
//! compile time and reused by every run: one copy per output, one map per buffer, one wait.

use rlx_gpu::Place;
use std::sync::mpsc;

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

    /// Requests a map of every buffer; the returned receiver gets (buffer index, result) for
    /// each once the device is polled.
    pub(crate) fn map_all(&self) -> mpsc::Receiver<(usize, Result<(), wgpu::BufferAsyncError>)> {
        let (tx, rx) = mpsc::channel();
        for (i, b) in self.buffers.iter().enumerate() {
            let tx = tx.clone();
            b.map_async(wgpu::MapMode::Read, .., move |r| {
                // The receiver outlives the poll that runs this callback; a send after it is
                // gone has nobody to tell.
                let _ = tx.send((i, r));
            });
        }
        rx
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
