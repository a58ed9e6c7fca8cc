//! The pipeline cache of one device: a `wgpu::PipelineCache` filled from a file when the
//! context opens and written back to it, so a process compiles only the kernels that no
//! earlier process compiled on this adapter.
//!
//! - Only where the device has `Features::PIPELINE_CACHE` (wgpu offers it on Vulkan) and
//!   `wgpu::util::pipeline_cache_key` names the adapter; elsewhere pipelines are built without
//!   a cache, as before.
//! - The file is `<pipeline_cache_key>.bin` in the folder rlx-gpu's
//!   [`PipelineCacheDir`](rlx_gpu::PipelineCacheDir) names, sealed in rlx-gpu's envelope and
//!   handled by its [`DiskCache`].
//! - Loading checks the envelope, then hands the data to wgpu with `fallback: true`: wgpu checks
//!   its own header and starts empty when the data is outdated (another wgpu or driver). Data
//!   for another adapter is a wgpu error even with fallback; it is caught in error scopes and
//!   the cache made empty instead. Either way the file is replaced by the next save.
//! - Saving happens after each executable build (so a crash loses little) and when the
//!   context drops, each time only if pipelines were built since the last save.

use crate::context::Context;
use rlx_gpu::driver::DiskCache;
use std::path::{Path, PathBuf};

/// One device's pipeline cache and the file behind it.
pub(crate) struct PipelineCache {
    pub(crate) cache: wgpu::PipelineCache,
    /// `loaded`: the file's data passed rlx's checks and wgpu accepted it without an error. wgpu
    /// does not say when it falls back to an empty cache for outdated data, so it can be true then.
    file: DiskCache,
}

impl Drop for PipelineCache {
    fn drop(&mut self) {
        self.save();
    }
}

/// Creates a pipeline cache from `data` (or empty) inside error scopes: `None` when wgpu
/// reports an error, which would otherwise reach the device's uncaptured-error log and fail
/// the next compile.
async fn create(device: &wgpu::Device, data: Option<&[u8]>) -> Option<wgpu::PipelineCache> {
    let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let internal = device.push_error_scope(wgpu::ErrorFilter::Internal);
    let desc = wgpu::PipelineCacheDescriptor { label: Some("rlx pipeline cache"), data, fallback: true };
    // SAFETY: `data` is what `PipelineCache::get_data` returned on an adapter with the same
    // `pipeline_cache_key` (the file is named by it), unaltered: rlx-gpu's envelope rejects a
    // file that was damaged or written by anything else, and wgpu checks its own header again.
    let cache = unsafe { device.create_pipeline_cache(&desc) };
    // Scopes pop in the reverse order of their pushes.
    let errors = [internal.pop().await, validation.pop().await, oom.pop().await];
    errors.iter().all(Option::is_none).then_some(cache)
}

impl PipelineCache {
    /// The cache of `device`, from the file in `dir` when it holds a usable one; `None` when
    /// `dir` is `None` or the device cannot keep a pipeline cache.
    pub(crate) async fn open(
        device: &wgpu::Device,
        adapter: &wgpu::AdapterInfo,
        dir: Option<&Path>,
    ) -> Option<Self> {
        if !device.features().contains(wgpu::Features::PIPELINE_CACHE) {
            return None;
        }
        let key = wgpu::util::pipeline_cache_key(adapter)?;
        let (mut file, data) = DiskCache::open(dir?, &format!("{key}.bin"), |_| true);
        if let Some(data) = data {
            if let Some(cache) = create(device, Some(&data)).await {
                file.set_loaded();
                return Some(PipelineCache { cache, file });
            }
        }
        let cache = create(device, None).await?;
        Some(PipelineCache { cache, file })
    }

    /// Records that a pipeline was built through the cache (call it after it exists). wgpu
    /// does not say whether the driver found it there, so every new pipeline counts.
    pub(crate) fn compiled(&self) {
        self.file.compiled();
    }

    /// Writes the cache to its file if pipelines were built since the last save; failures only
    /// mean the file is not updated.
    pub(crate) fn save(&self) {
        self.file.save(|| self.cache.get_data());
    }
}

impl Context {
    /// The cache to build pipelines with, where there is one.
    pub(crate) fn wgpu_pipeline_cache(&self) -> Option<&wgpu::PipelineCache> {
        self.pipeline_cache.as_ref().map(|c| &c.cache)
    }

    /// Whether the pipeline cache was filled from a file on disk.
    pub(crate) fn pipeline_cache_loaded(&self) -> bool {
        self.pipeline_cache.as_ref().is_some_and(|c| c.file.loaded())
    }

    /// The cache file of this adapter; `None` when there is no cache.
    pub(crate) fn pipeline_cache_path(&self) -> Option<PathBuf> {
        self.pipeline_cache.as_ref().map(|c| c.file.path())
    }

    /// Writes the cache file if pipelines were built since the last save.
    pub(crate) fn save_pipeline_cache(&self) {
        if let Some(c) = &self.pipeline_cache {
            c.save();
        }
    }
}
