//! Readback through staging buffers (MAP_READ | COPY_DST). The outputs of a run (and its GPU
//! timestamps) are packed into as few staging buffers as the buffer-size limit allows, built
//! once at compile time and reused by every run: one copy per output, one map per buffer, one
//! wait for all of them.

use std::sync::mpsc;

/// Where one item lives in the staging buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Place {
    pub buffer: usize,
    pub offset: u64,
    pub size: u64,
}

/// Packs items of `sizes` bytes (multiples of 4) in order into buffers of at most `max_buffer`
/// bytes, each item at an offset aligned to `wgpu::MAP_ALIGNMENT` (so its range can be viewed
/// on its own). Returns the buffer sizes and each item's place. An item larger than
/// `max_buffer` gets a buffer of its own (whose creation the device then refuses).
pub(crate) fn plan(sizes: &[u64], max_buffer: u64) -> (Vec<u64>, Vec<Place>) {
    let align = wgpu::MAP_ALIGNMENT;
    let mut buffers: Vec<u64> = Vec::new();
    let mut places = Vec::with_capacity(sizes.len());
    for &size in sizes {
        let index = buffers.len().saturating_sub(1);
        match buffers.last_mut() {
            Some(end) if end.div_ceil(align) * align + size <= max_buffer => {
                let offset = end.div_ceil(align) * align;
                *end = offset + size;
                places.push(Place { buffer: index, offset, size });
            }
            _ => {
                places.push(Place { buffer: buffers.len(), offset: 0, size });
                buffers.push(size);
            }
        }
    }
    (buffers, places)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_pack_aligned_until_a_buffer_is_full() {
        let (buffers, places) = plan(&[12, 4, 16], 1 << 20);
        assert_eq!(buffers, vec![40]);
        assert_eq!(
            places,
            vec![
                Place { buffer: 0, offset: 0, size: 12 },
                Place { buffer: 0, offset: 16, size: 4 },
                Place { buffer: 0, offset: 24, size: 16 },
            ]
        );
        // A 32-byte limit: the third item starts a new buffer.
        let (buffers, places) = plan(&[12, 4, 16], 32);
        assert_eq!(buffers, vec![20, 16]);
        assert_eq!(places[2], Place { buffer: 1, offset: 0, size: 16 });
        // An item over the limit stands alone; nothing for no items.
        let (buffers, _) = plan(&[8, 100, 8], 64);
        assert_eq!(buffers, vec![8, 100, 8]);
        assert_eq!(plan(&[], 64), (vec![], vec![]));
    }
}
