//! What both drivers' pipeline caches do besides the API calls that create a cache and read its
//! data back: find the file, load and check it, remember whether it was used and whether
//! pipelines were built since, and save it ([`DiskCache`] over rlx-gpu's [`CacheFile`]); and
//! Vulkan's own header check and file name, which are plain bytes.
//!
//! Nothing here fails a compile: every I/O error and unusable file only means no cache (a
//! warning line on stderr for a file that cannot be used, see [`CacheFile::load_or_warn`]).

use crate::CacheFile;
use std::path::{Path, PathBuf};

/// Bytes of VkPipelineCacheHeaderVersionOne.
const VK_HEADER_BYTES: usize = 32;
/// VK_PIPELINE_CACHE_HEADER_VERSION_ONE.
const VK_HEADER_VERSION_ONE: u32 = 1;

/// What identifies a Vulkan device and driver to its pipeline cache data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VulkanCacheId {
    pub vendor_id: u32,
    pub device_id: u32,
    pub driver_version: u32,
    pub uuid: [u8; 16],
}

impl VulkanCacheId {
    /// `vulkan-<vendorID>-<deviceID>-<driverVersion>-<pipelineCacheUUID>.bin` (hex): a new
    /// driver gets a new file.
    pub fn file_name(&self) -> String {
        let uuid: String = self.uuid.iter().map(|b| format!("{b:02x}")).collect();
        format!("vulkan-{:04x}-{:04x}-{:08x}-{uuid}.bin", self.vendor_id, self.device_id, self.driver_version)
    }

    /// Whether `data` starts with a VkPipelineCacheHeaderVersionOne of this device (the header
    /// is little-endian whatever the host, per the spec).
    pub fn header_matches(&self, data: &[u8]) -> bool {
        let Some(header) = data.first_chunk::<VK_HEADER_BYTES>() else { return false };
        let u32_at = |i: usize| u32::from_le_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]);
        let header_size = u32_at(0) as usize;
        header_size >= VK_HEADER_BYTES
            && header_size <= data.len()
            && u32_at(4) == VK_HEADER_VERSION_ONE
            && u32_at(8) == self.vendor_id
            && u32_at(12) == self.device_id
            && header[16..] == self.uuid
    }
}

/// One device's cache file, whether the driver's cache was filled from it, and whether
/// pipelines were built since it was last written.
#[derive(Debug)]
pub struct DiskCache {
    file: CacheFile,
    loaded: bool,
}

impl DiskCache {
    /// The file `name` in `dir`, and its payload when it passes the envelope's checks and
    /// `accept` (a driver's own header check; a refused file is reported as another device's and
    /// rewritten at the next save). Call [`Self::set_loaded`] once the driver took the payload.
    pub fn open(dir: &Path, name: &str, accept: impl FnOnce(&[u8]) -> bool) -> (Self, Option<Vec<u8>>) {
        let file = CacheFile::new(dir, name);
        let data = file.load_or_warn().filter(|d| {
            let ours = accept(d);
            if !ours {
                file.foreign();
            }
            ours
        });
        (DiskCache { file, loaded: false }, data)
    }

    /// Records that the driver's cache was created from the file's payload.
    pub fn set_loaded(&mut self) {
        self.loaded = true;
    }

    /// Whether the driver's cache was created from the file's payload.
    pub fn loaded(&self) -> bool {
        self.loaded
    }

    /// Records that the driver compiled a pipeline into the cache rather than finding it there
    /// (call it after the pipeline exists).
    pub fn compiled(&self) {
        self.file.mark_changed();
    }

    /// Writes `data()` to the file if pipelines were built since the last save; failures only
    /// mean the file is not updated.
    pub fn save(&self, data: impl FnOnce() -> Option<Vec<u8>>) {
        let _ = self.file.save_if_changed(data);
    }

    pub fn path(&self) -> PathBuf {
        self.file.path().to_path_buf()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> VulkanCacheId {
        VulkanCacheId {
            vendor_id: 0x10de,
            device_id: 0x2335,
            driver_version: 0x8a_4c_40_00,
            uuid: [0xab; 16],
        }
    }

    fn header(vendor: u32, device: u32, uuid: [u8; 16]) -> Vec<u8> {
        let mut h = Vec::new();
        for word in [32u32, 1, vendor, device] {
            h.extend_from_slice(&word.to_le_bytes());
        }
        h.extend_from_slice(&uuid);
        h
    }

    #[test]
    fn the_name_says_device_driver_and_uuid() {
        assert_eq!(id().file_name(), format!("vulkan-10de-2335-8a4c4000-{}.bin", "ab".repeat(16)));
    }

    #[test]
    fn only_this_devices_header_is_accepted() {
        let id = id();
        let good = header(0x10de, 0x2335, [0xab; 16]);
        assert!(id.header_matches(&good));
        assert!(id.header_matches(&[&good[..], &[1, 2, 3]].concat()));
        assert!(!id.header_matches(&good[..31]));
        assert!(!id.header_matches(&header(0x1002, 0x2335, [0xab; 16])));
        assert!(!id.header_matches(&header(0x10de, 0x2330, [0xab; 16])));
        assert!(!id.header_matches(&header(0x10de, 0x2335, [0xac; 16])));
        let mut bad_version = good.clone();
        bad_version[4] = 2;
        assert!(!id.header_matches(&bad_version));
        // A header size beyond the data, or below the header's own size.
        let mut bad_size = good.clone();
        bad_size[0] = 64;
        assert!(!id.header_matches(&bad_size));
        bad_size[0] = 16;
        assert!(!id.header_matches(&bad_size));
        assert!(!id.header_matches(b"garbage"));
    }

    #[test]
    fn a_refused_payload_is_not_handed_out_and_the_file_is_rewritten() {
        let dir = std::env::temp_dir().join(format!("rlx-gpu-disk-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (cache, data) = DiskCache::open(&dir, "dev.bin", |_| unreachable!());
        assert!(data.is_none() && !cache.loaded());
        cache.compiled();
        cache.save(|| Some(b"driver bytes".to_vec()));
        let (mut cache, data) = DiskCache::open(&dir, "dev.bin", |d| d == b"driver bytes");
        assert_eq!(data.as_deref(), Some(&b"driver bytes"[..]));
        cache.set_loaded();
        assert!(cache.loaded());
        let (cache, data) = DiskCache::open(&dir, "dev.bin", |_| false);
        assert!(data.is_none());
        // Refused: rewritten at the next save even though nothing was compiled.
        cache.save(|| Some(b"new".to_vec()));
        let (_, data) = DiskCache::open(&dir, "dev.bin", |_| true);
        assert_eq!(data.as_deref(), Some(&b"new"[..]));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
