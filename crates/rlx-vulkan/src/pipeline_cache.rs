//! The pipeline cache of one context: a `VkPipelineCache` filled from a file when the context
//! opens and written back to it, so a process compiles only the kernels that no earlier process
//! compiled on this device and driver.
//!
//! - The file is `vulkan-<vendorID>-<deviceID>-<driverVersion>-<pipelineCacheUUID>.bin` (hex)
//!   in the folder rlx-gpu's [`PipelineCacheDir`](rlx_gpu::PipelineCacheDir) names, sealed in
//!   rlx-gpu's envelope and handled by its [`DiskCache`]. A new driver gets a new file.
//! - Loading checks the envelope, then the Vulkan header (vendor, device and cache UUID must be
//!   this device's: [`VulkanCacheId`]), then lets the driver check it in vkCreatePipelineCache.
//!   A file failing any of them is ignored (the cache starts empty) and replaced by the next save.
//! - Saving happens after each executable build (so a crash loses little) and when the context
//!   drops, each time only if the driver compiled pipelines since the last save. Creation
//!   feedback (Vulkan 1.3) tells pipelines found in the cache apart, so a process whose kernels
//!   all came from the file does not rewrite it; before 1.3 every new pipeline counts.

use crate::context::{Context, Shared};
use crate::probe::AdapterInfo;
use ash::vk;
use rlx_gpu::driver::{DiskCache, VulkanCacheId};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One context's pipeline cache and the file behind it.
pub(crate) struct PipelineCache {
    shared: Arc<Shared>,
    /// Null when the cache is off (or could not be created): pipelines are then built without one.
    handle: vk::PipelineCache,
    file: Option<DiskCache>,
}

impl Drop for PipelineCache {
    fn drop(&mut self) {
        self.save();
        // SAFETY: the handle (or null, a no-op) belongs to this device, which `shared` keeps
        // alive; pipelines built with the cache do not need it afterwards.
        unsafe { self.shared.device.destroy_pipeline_cache(self.handle, None) };
    }
}

/// What names `info`'s device and driver to its cache data.
pub(crate) fn cache_id(info: &AdapterInfo) -> VulkanCacheId {
    VulkanCacheId {
        vendor_id: info.vendor_id,
        device_id: info.device_id,
        driver_version: info.driver_version,
        uuid: info.pipeline_cache_uuid,
    }
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
        let mut cache =
            PipelineCache { shared: shared.clone(), handle: vk::PipelineCache::null(), file: None };
        let Some(dir) = dir else { return cache };
        let id = cache_id(&shared.info);
        let (mut file, data) = DiskCache::open(dir, &id.file_name(), |d| id.header_matches(d));
        if let Some(handle) = data.and_then(|d| create(shared, &d)) {
            cache.handle = handle;
            file.set_loaded();
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
            f.compiled();
        }
    }

    /// Writes the cache to its file if pipelines were built since the last save; failures only
    /// mean the file is not updated.
    pub(crate) fn save(&self) {
        let Some(file) = &self.file else { return };
        // SAFETY: a live cache of a live device; the cache is internally synchronised.
        file.save(|| unsafe { self.shared.device.get_pipeline_cache_data(self.handle) }.ok());
    }
}

impl Context {
    /// Whether this context's pipeline cache was filled from a file on disk (one written by an
    /// earlier context on the same device and driver).
    pub fn pipeline_cache_loaded(&self) -> bool {
        self.pipeline_cache.file.as_ref().is_some_and(DiskCache::loaded)
    }

    /// The cache file of this device and driver; `None` when the cache is off.
    pub fn pipeline_cache_path(&self) -> Option<PathBuf> {
        self.pipeline_cache.file.as_ref().map(DiskCache::path)
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

    #[test]
    fn the_name_says_device_driver_and_uuid() {
        let mut info = crate::probe_tests::adapter(0, crate::AdapterType::Discrete, [1, 3, 0]);
        info.vendor_id = 0x10de;
        info.device_id = 0x2335;
        info.driver_version = 0x8a_4c_40_00;
        info.pipeline_cache_uuid = [0xab; 16];
        let name = cache_id(&info).file_name();
        assert_eq!(name, format!("vulkan-10de-2335-8a4c4000-{}.bin", "ab".repeat(16)));
        // The header check is rlx-gpu's; it must agree with ash's header version constant.
        assert_eq!(vk::PipelineCacheHeaderVersion::ONE.as_raw(), 1);
    }
}
