//! One wgpu instance, adapter, device and queue, owned by one backend value (no process-wide
//! state), with the error handlers installed and the kernel pipelines cached.

use crate::error::{self, ErrorLog};
use crate::pipeline::Pipeline;
use crate::pipeline_cache::PipelineCache;
use crate::probe::{self, unavailable, ShaderChecks, WgpuInfo, WgpuOptions};
use rlx_backend::BackendError;
use rlx_gpu::driver::PipelineTable;
use rlx_gpu::{GpuLimits, KernelKey};
use std::sync::Arc;
#[cfg(not(target_arch = "wasm32"))]
use std::sync::Mutex;

pub(crate) struct Context {
    /// Kept on disk between processes; first, so it is saved while the device is still open.
    pub(crate) pipeline_cache: Option<PipelineCache>,
    // The instance and adapter live as long as the device made from them.
    _instance: wgpu::Instance,
    _adapter: wgpu::Adapter,
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub info: WgpuInfo,
    pub limits: GpuLimits,
    /// Limits granted to the device (all of them, for checks the lowering does not make).
    pub granted: wgpu::Limits,
    pub shader_checks: ShaderChecks,
    pub(crate) log: Arc<ErrorLog>,
    pipelines: PipelineTable<Pipeline>,
}

/// Held while a context opens. On the H200's NVIDIA driver, 8 threads each opening a wgpu
/// session at once deadlocked about one time in two (`rlx bench soak --threads 8`, 2026-11-27;
/// every thread parked on a futex inside the driver); the native Vulkan backend and lavapipe
/// never did. Opening is rare and costs milliseconds, so contexts open one at a time: the sync
/// entry ([`WgpuBackend::with_options`](crate::WgpuBackend::with_options)) holds this while it
/// waits for [`Context::open`] (a lock held across an await would be one the web cannot use).
#[cfg(not(target_arch = "wasm32"))]
pub(crate) static OPENING: Mutex<()> = Mutex::new(());

impl Context {
    /// Opens the adapter `opts` selects. Async because the web can only wait for an adapter
    /// and a device on its event loop; native callers block on it with pollster.
    pub(crate) async fn open(opts: &WgpuOptions) -> Result<Self, BackendError> {
        let backends = opts.backends.unwrap_or(wgpu::Backends::all());
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
        desc.backends = backends;
        // Debug flags (WGPU_DEBUG, WGPU_VALIDATION) still follow the environment.
        desc.flags = desc.flags.with_env();
        if wgpu::Instance::enabled_backend_features().intersection(backends).is_empty() {
            return Err(unavailable(format!(
                "this build of rlx-wgpu has none of the requested wgpu backends ({backends:?})"
            )));
        }
        let instance = wgpu::Instance::new(desc);
        let adapter = match &opts.adapter {
            Some(choice) => {
                let adapters = instance.enumerate_adapters(backends).await;
                probe::pick(adapters, choice).map_err(unavailable)?
            }
            None => {
                let request = wgpu::RequestAdapterOptions {
                    power_preference: wgpu::PowerPreference::HighPerformance,
                    force_fallback_adapter: false,
                    compatible_surface: None,
                    // The real limits: rlx sizes its work by them.
                    apply_limit_buckets: false,
                };
                instance.request_adapter(&request).await.map_err(|e| {
                    unavailable(format!(
                        "no wgpu adapter ({e}); backends tried: {backends:?}. Install a GPU driver, or \
                         Mesa's lavapipe (Debian: mesa-vulkan-drivers) for a CPU Vulkan device"
                    ))
                })?
            }
        };
        let mut features = probe::requested_features(adapter.features());
        if !opts.immediates {
            features.remove(wgpu::Features::IMMEDIATES);
        }
        let required_limits = probe::requested_limits(&adapter.limits(), features);
        let experimental_features = if features.intersects(wgpu::Features::all_experimental_mask()) {
            // SAFETY: the only experimental feature requested is cooperative matrices, used by
            // kernels rlx-gpu validates with naga; wgpu asks for this acknowledgement because
            // its implementation of them is still young.
            unsafe { wgpu::ExperimentalFeatures::enabled() }
        } else {
            wgpu::ExperimentalFeatures::disabled()
        };
        let adapter_info = adapter.get_info();
        let device_desc = wgpu::DeviceDescriptor {
            label: Some("rlx"),
            required_features: features,
            required_limits,
            experimental_features,
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        };
        let (device, queue) = adapter.request_device(&device_desc).await.map_err(|e| {
            unavailable(format!(
                "opening a device on {} ({:?}) failed: {e}",
                adapter_info.name, adapter_info.backend
            ))
        })?;

        let log = Arc::new(ErrorLog::default());
        let sink = log.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| sink.record(&e)));
        let sink = log.clone();
        device.set_device_lost_callback(move |reason, message| sink.lose(format!("{reason:?}: {message}")));

        let granted = device.limits();
        let info =
            probe::info(&adapter_info, device.features(), &granted, &adapter.cooperative_matrix_properties());
        let limits = info.gpu_limits();
        let pipeline_cache =
            PipelineCache::open(&device, &adapter_info, opts.pipeline_cache.resolve().as_deref()).await;
        Ok(Context {
            pipeline_cache,
            _instance: instance,
            _adapter: adapter,
            device,
            queue,
            info,
            limits,
            granted,
            shader_checks: opts.shader_checks,
            log,
            pipelines: PipelineTable::default(),
        })
    }

    /// The device name used in errors.
    pub(crate) fn name(&self) -> &str {
        &self.info.name
    }

    /// Runs `f` inside out-of-memory, validation and internal error scopes and returns its
    /// result, unless the device was lost, a scope caught an error, or the uncaptured-error
    /// handler recorded one meanwhile: then that error, naming `scope`. `requested` is the
    /// number of bytes `f` allocates (for out-of-memory reports).
    pub(crate) async fn guarded<T>(
        &self,
        scope: &str,
        requested: u64,
        f: impl FnOnce() -> Result<T, BackendError>,
    ) -> Result<T, BackendError> {
        self.check_lost(scope)?;
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let internal = self.device.push_error_scope(wgpu::ErrorFilter::Internal);
        let result = f();
        // Scopes pop in the reverse order of their pushes.
        let caught = [internal.pop().await, validation.pop().await, oom.pop().await];
        self.check_lost(scope)?;
        // Out of memory first: a failed allocation causes validation errors downstream.
        let mut caught: Vec<_> = caught.iter().flatten().map(error::describe).collect();
        caught.sort_by_key(|(kind, _)| *kind as u8);
        if let Some((kind, message)) = caught.into_iter().next() {
            return Err(error::to_backend(self.name(), scope, requested, kind, message));
        }
        self.settle(scope, requested, result)
    }

    /// `result`, unless the device was lost or the uncaptured-error handler recorded an error
    /// meanwhile: then that error, naming `scope` (`requested` bytes for out-of-memory reports).
    pub(crate) fn settle<T>(
        &self,
        scope: &str,
        requested: u64,
        result: Result<T, BackendError>,
    ) -> Result<T, BackendError> {
        self.check_lost(scope)?;
        if let Some((kind, message)) = self.log.take() {
            return Err(error::to_backend(self.name(), scope, requested, kind, message));
        }
        result
    }

    /// Builds the pipeline of `key` unless it exists (in its own error scope, so a kernel the
    /// driver refuses is reported and never cached). Compile builds every pipeline of a
    /// schedule this way first, then takes them with [`Context::built_pipeline`].
    pub(crate) async fn build_pipeline(&self, key: KernelKey) -> Result<(), BackendError> {
        if self.pipelines.get(key).is_some() {
            return Ok(());
        }
        let variant = rlx_gpu::variant(key);
        let scope = format!("building kernel {} ({})", variant.name, variant.file);
        // The lock is not held across the wait: the future may be polled from another task.
        let pipeline = self.guarded(&scope, 0, || Pipeline::new(self, variant)).await?;
        if let Some(c) = &self.pipeline_cache {
            c.compiled();
        }
        self.pipelines.insert(key, pipeline);
        Ok(())
    }

    /// The pipeline of `key`, built by [`Context::build_pipeline`] before.
    pub(crate) fn built_pipeline(&self, key: KernelKey) -> Result<Arc<Pipeline>, BackendError> {
        self.pipelines.get(key).ok_or_else(|| BackendError::Driver {
            device: self.name().to_string(),
            scope: format!("binding kernel {}", rlx_gpu::variant(key).name),
            reason: "its pipeline was not built before the bind groups".into(),
        })
    }

    /// Number of pipelines built so far.
    pub(crate) fn cached_pipelines(&self) -> usize {
        self.pipelines.len()
    }
}
