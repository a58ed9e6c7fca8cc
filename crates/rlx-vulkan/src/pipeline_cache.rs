//! The pipeline cache of one context: a `VkPipelineCache` filled from a file when the context
//! opens and written back to it, so a process compiles only the kernels that no earlier process
//! compiled on this device and driver.
//!
//! - The file is `vulkan-<vendorID>-<deviceID>-<driverVersion>-<pipelineCacheUUID>.bin` (hex)
//!   in the folder rlx-gpu's [`PipelineCacheDir`](rlx_gpu::PipelineCacheDir) names, sealed in
//!   rlx-gpu's envelope ([`CacheFile`]). A new driver gets a new file.
//! - Loading checks the envelope, then the Vulkan header (vendor, device and cache UUID must be
//!   this device's), then lets the driver check it in vkCreatePipelineCache. A file failing any
//!   of them is ignored (the cache starts empty) and replaced by the next save.
//! - Saving happens after each executable build (so a crash loses little) and when the context
//!   drops, each time only if the driver compiled pipelines since the last save. Creation
//!   feedback (Vulkan 1.3) tells pipelines found in the cache apart, so a process whose kernels
//!   all came from the file does not rewrite it; before 1.3 every new pipeline counts.
//! - Nothing here fails a compile or prints: every I/O error and unusable file only means no
//!   cache (rlx-vulkan has no logging to report it through).

use crate::context::{Context, Shared};
use crate::probe::AdapterInfo;
use ash::vk;
use rlx_gpu::CacheFile;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Bytes of VkPipelineCacheHeaderVersionOne.
const VK_HEADER_BYTES: usize = 32;

/// One context's pipeline cache and the file behind it.
pub(crate) struct PipelineCache {
    shared: Arc<Shared>,
    /// Null when the cache is off (or could not be created): pipelines are then built without one.
    handle: vk::PipelineCache,
    file: Option<CacheFile>,
    /// The file's data was accepted and the cache created from it.
    loaded: bool,
}

impl Drop for PipelineCache {
    fn drop(&mut self) {
        self.save();
        // SAFETY: the handle (or null, a no-op) belongs to this device, which `shared` keeps
        // alive; pipelines built with the cache do not need it afterwards.
        unsafe { self.shared.device.destroy_pipeline_cache(self.handle, None) };
    }
}

/// The file name for `info`'s device and driver.
pub(crate) fn file_name(info: &AdapterInfo) -> String {
    let uuid: String = info.pipeline_cache_uuid.iter().map(|b| format!("{b:02x}")).collect();
    format!("vulkan-{:04x}-{:04x}-{:08x}-{uuid}.bin", info.vendor_id, info.device_id, info.driver_version)
}

/// Whether `data` starts with a VkPipelineCacheHeaderVersionOne of `info`'s device (the
/// header is little-endian whatever the host, per the spec).
fn header_matches(data: &[u8], info: &AdapterInfo) -> bool {
    let Some(header) = data.first_chunk::<VK_HEADER_BYTES>() else { return false };
    let u32_at = |i: usize| u32::from_le_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]);
    let header_size = u32_at(0) as usize;
    header_size >= VK_HEADER_BYTES
        && header_size <= data.len()
        && u32_at(4) == vk::PipelineCacheHeaderVersion::ONE.as_raw() as u32
        && u32_at(8) == info.vendor_id
        && u32_at(12) == info.device_id
        && header[16..] == info.pipeline_cache_uuid
}

fn create(shared: &Shared, data: &[u8]) -> Option<vk::PipelineCache> {
    let info = vk::PipelineCacheCreateInfo::default().initial_data(data);
    // SAFETY: a live device; `data` outlives the call and the driver checks it again.
    unsafe { shared.device.create_pipeline_cache(&info, None) }.ok()
}

impl PipelineCache {
    /// The cache of `shared`'s device, from the file in `dir` when it holds a usable one; no
    /// cache at all when `dir` is `None`.
    pub(crate) fn open(shared: &Arc<Shared>, dir: Option<&Path>) -> Self {
        let mut cache = PipelineCache {
            shared: shared.clone(),
            handle: vk::PipelineCache::null(),
            file: None,
            loaded: false,
        };
        let Some(dir) = dir else { return cache };
        let file = CacheFile::new(dir, &file_name(&shared.info));
        let data = file.load_or_warn().filter(|d| {
            let ours = header_matches(d, &shared.info);
            if !ours {
                file.foreign();
            }
            ours
        });
        if let Some(handle) = data.and_then(|d| create(shared, &d)) {
            cache.handle = handle;
            cache.loaded = true;
        } else if let Some(handle) = create(shared, &[]) {
            cache.handle = handle;
        } else {
            return cache;
        }
        cache.file = Some(file);
        cache
    }

    /// What to pass to vkCreateComputePipelines.
    pub(crate) fn handle(&self) -> vk::PipelineCache {
        self.handle
    }

    /// Records that the driver compiled a pipeline into the cache rather than finding it there
    /// (call it after the pipeline exists).
    pub(crate) fn compiled(&self) {
        if let Some(f) = &self.file {
            f.mark_changed();
        }
    }

    /// Writes the cache to its file if pipelines were built since the last save; failures only
    /// mean the file is not updated.
    pub(crate) fn save(&self) {
        let Some(file) = &self.file else { return };
        // SAFETY: a live cache of a live device; the cache is internally synchronised.
        let data = || unsafe { self.shared.device.get_pipeline_cache_data(self.handle) }.ok();
        let _ = file.save_if_changed(data);
    }

    pub(crate) fn loaded(&self) -> bool {
        self.loaded
    }

    pub(crate) fn path(&self) -> Option<PathBuf> {
        self.file.as_ref().map(|f| f.path().to_path_buf())
    }
}

impl Context {
    /// Whether this context's pipeline cache was filled from a file on disk (one written by an
    /// earlier context on the same device and driver).
    pub fn pipeline_cache_loaded(&self) -> bool {
        self.pipeline_cache.loaded()
    }

    /// The cache file of this device and driver; `None` when the cache is off.
    pub fn pipeline_cache_path(&self) -> Option<PathBuf> {
        self.pipeline_cache.path()
    }

    /// Writes the cache file now if pipelines were built since the last save. Done after each
    /// executable build and when the context drops; a failure only leaves the file as it was.
    pub fn save_pipeline_cache(&self) {
        self.pipeline_cache.save();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> AdapterInfo {
        let mut info = crate::probe::tests::adapter(0, crate::AdapterType::Discrete, [1, 3, 0]);
        info.vendor_id = 0x10de;
        info.device_id = 0x2335;
        info.driver_version = 0x8a_4c_40_00;
        info.pipeline_cache_uuid = [0xab; 16];
        info
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
        let name = file_name(&info());
        assert_eq!(name, format!("vulkan-10de-2335-8a4c4000-{}.bin", "ab".repeat(16)));
    }

    #[test]
    fn only_this_devices_header_is_accepted() {
        let info = info();
        let good = header(0x10de, 0x2335, [0xab; 16]);
        assert!(header_matches(&good, &info));
        assert!(header_matches(&[&good[..], &[1, 2, 3]].concat(), &info));
        assert!(!header_matches(&good[..31], &info));
        assert!(!header_matches(&header(0x1002, 0x2335, [0xab; 16]), &info));
        assert!(!header_matches(&header(0x10de, 0x2330, [0xab; 16]), &info));
        assert!(!header_matches(&header(0x10de, 0x2335, [0xac; 16]), &info));
        let mut bad_version = good.clone();
        bad_version[4] = 2;
        assert!(!header_matches(&bad_version, &info));
        // A header size beyond the data, or below the header's own size.
        let mut bad_size = good.clone();
        bad_size[0] = 64;
        assert!(!header_matches(&bad_size, &info));
        bad_size[0] = 16;
        assert!(!header_matches(&bad_size, &info));
        assert!(!header_matches(b"garbage", &info));
    }
}
