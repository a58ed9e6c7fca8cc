//! The logical device: one compute queue, memory-type selection, labels, teardown.
//!
//! Ownership: [`Shared`] owns the instance and the device. Every object made from the device
//! (buffers, pipelines, programs, the transfer state) holds an `Arc<Shared>` and destroys
//! itself in its own `Drop`, so the device is destroyed only after the last of them, whatever
//! order the user drops things in.

use crate::buffer::Transfer;
use crate::error::vk_error;
use crate::faults::heap_sizes;
use crate::pipeline::Pipeline;
use crate::pipeline_cache::PipelineCache;
use crate::probe::{self, AdapterInfo, OwnedInstance, LIFECYCLE};
use crate::VulkanError;
use ash::vk;
use rlx_backend::BackendError;
pub(crate) use rlx_gpu::driver::lock;
use rlx_gpu::driver::{HeapBudget, LossState, PipelineTable};
use rlx_gpu::PipelineCacheDir;
use std::ffi::CString;
use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex};

/// Where a buffer's memory lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryStrategy {
    /// Unified memory (integrated GPUs, lavapipe): every buffer host-visible and coherent,
    /// written and read in place.
    Unified,
    /// Discrete GPU: tensors in DEVICE_LOCAL memory, host I/O through staging buffers.
    Discrete,
}

pub(crate) struct Shared {
    pub(crate) device: ash::Device,
    /// vkQueueSubmit needs the queue externally synchronised.
    pub(crate) queue: Mutex<vk::Queue>,
    pub(crate) queue_family: u32,
    pub(crate) memory: vk::PhysicalDeviceMemoryProperties,
    pub(crate) info: AdapterInfo,
    pub(crate) strategy: MemoryStrategy,
    /// Nanoseconds per timestamp tick, when the compute queue has timestamps.
    pub(crate) timestamp_period: Option<f64>,
    debug: Option<ash::ext::debug_utils::Device>,
    /// Bytes allocated per memory heap, against each heap's size (see [`crate::faults`]).
    pub(crate) budget: HeapBudget,
    /// Whether the device was lost (see [`crate::faults`]).
    pub(crate) loss: LossState,
    /// Destroyed in `Drop::drop`, after the device and under LIFECYCLE.
    instance: ManuallyDrop<OwnedInstance>,
    /// This device's live objects (`Backend::live_objects`).
    pub(crate) live: Arc<rlx_backend::LiveCounters>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        let _lifecycle = lock(&LIFECYCLE);
        // SAFETY: the last reference is gone, so no object made from the device is left; the
        // wait makes sure no submitted work still uses the queue. The instance is dropped once,
        // here, after its device.
        unsafe {
            let _ = self.device.device_wait_idle();
            self.device.destroy_device(None);
            ManuallyDrop::drop(&mut self.instance);
        }
    }
}

impl Shared {
    /// Device name, for error messages.
    pub(crate) fn name(&self) -> &str {
        &self.info.name
    }

    /// Maps a failed call to the rlx error (see [`vk_error`]).
    /// A lost device is remembered: later calls return `DeviceLost` without reaching the driver.
    pub(crate) fn err(&self, scope: impl Into<String>, requested: u64, r: vk::Result) -> BackendError {
        let scope = scope.into();
        if r == vk::Result::ERROR_DEVICE_LOST {
            self.loss.record(|| format!("{r} during {scope}"));
        }
        vk_error(self.name(), scope, requested, r)
    }

    /// Names a Vulkan object for debuggers and validation messages, when debug utils are on.
    ///
    /// Only for an object no other thread can reach yet: name it where it is created, before
    /// it is shared, and never again. vkSetDebugUtilsObjectNameEXT requires host access to
    /// `pNameInfo->objectHandle` to be externally synchronised (vk.xml: `externsync`), and
    /// drivers replace the old name without a lock (Mesa frees it, then stores a copy of the new
    /// one). Recordings once renamed the context's shared pipelines on every compile; two
    /// threads compiling on one session then freed a pipeline's old name twice, and glibc
    /// aborted ("double free or corruption (fasttop)", "unaligned tcache chunk detected").
    pub(crate) fn label<H: vk::Handle>(&self, handle: H, label: &str) {
        let Some(debug) = &self.debug else { return };
        let Ok(name) = CString::new(label.replace('\0', " ")) else { return };
        let info = vk::DebugUtilsObjectNameInfoEXT::default().object_handle(handle).object_name(&name);
        // SAFETY: `handle` is a live object of this device. A failure only loses the label.
        let _ = unsafe { debug.set_debug_utils_object_name(&info) };
    }

    /// First memory type allowed by `type_bits` with all `required` flags, preferring one that
    /// also has `preferred`.
    pub(crate) fn memory_type(
        &self,
        type_bits: u32,
        required: vk::MemoryPropertyFlags,
        preferred: vk::MemoryPropertyFlags,
    ) -> Option<u32> {
        let count = (self.memory.memory_type_count as usize).min(vk::MAX_MEMORY_TYPES);
        let types: Vec<u32> =
            self.memory.memory_types[..count].iter().map(|t| t.property_flags.as_raw()).collect();
        rlx_gpu::driver::pick_memory_type(&types, type_bits, required.as_raw(), preferred.as_raw())
    }
}

/// One Vulkan device ready to run kernels.
pub struct Context {
    pub(crate) shared: Arc<Shared>,
    /// Compute pipelines, built on first use and kept for the context's life.
    pub(crate) pipelines: PipelineTable<Pipeline>,
    /// Command buffer, fence and staging buffer for host I/O on discrete devices.
    pub(crate) transfer: Mutex<Transfer>,
    /// The VkPipelineCache every pipeline is built through, kept on disk between processes.
    pub(crate) pipeline_cache: PipelineCache,
}

/// Choices made when opening a context; the defaults suit everyone but tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContextOptions {
    /// Enumeration index of the device; `None` lets [`probe::pick`] choose.
    pub adapter: Option<usize>,
    /// Overrides the memory strategy the device type implies. `Some(Discrete)` on lavapipe
    /// runs the staging paths of discrete GPUs on the CPU (for tests).
    pub memory: Option<MemoryStrategy>,
    /// Where compiled pipelines are kept between processes (`RLX_PIPELINE_CACHE` by default).
    pub pipeline_cache: PipelineCacheDir,
    /// The most bytes this context may allocate on any one memory heap; `None` (the default)
    /// means each heap's size. Past it an allocation is `OutOfMemory`, before the driver is asked.
    pub memory_budget: Option<u64>,
}

impl Context {
    /// Opens the device [`probe::pick`] chooses (discrete first; `RLX_VULKAN_DEVICE=index`
    /// overrides).
    pub fn new() -> Result<Self, BackendError> {
        Self::with_options(ContextOptions::default())
    }

    /// Opens the device with this enumeration index.
    pub fn with_adapter(index: usize) -> Result<Self, BackendError> {
        Self::with_options(ContextOptions { adapter: Some(index), ..ContextOptions::default() })
    }

    pub fn with_options(options: ContextOptions) -> Result<Self, BackendError> {
        let shared = {
            // Held until the device exists; an instance dropped on an error path in this block
            // is destroyed under it too (see LIFECYCLE).
            let _lifecycle = lock(&LIFECYCLE);
            let instance = probe::create_instance()?;
            let devices = probe::enumerate(&instance)?;
            let infos: Vec<AdapterInfo> = devices.iter().map(|(_, info)| info.clone()).collect();
            let chosen = match options.adapter {
                Some(i) => probe::pick_with(&infos, Some(&i.to_string()))?,
                None => probe::pick(&infos)?,
            };
            let Some((pd, info)) = devices.into_iter().nth(chosen.index) else {
                return Err(VulkanError::NoDevice.into());
            };
            create_device(instance, pd, info, &options)?
        };
        // Outside the lock: if this fails, dropping `shared` takes the lock itself.
        let transfer = Transfer::new(&shared)?;
        let pipeline_cache = PipelineCache::open(&shared, options.pipeline_cache.resolve().as_deref());
        Ok(Context {
            shared,
            pipelines: PipelineTable::default(),
            transfer: Mutex::new(transfer),
            pipeline_cache,
        })
    }

    /// What was probed about this device.
    pub fn info(&self) -> &AdapterInfo {
        &self.shared.info
    }

    /// How buffers are placed on this device.
    pub fn memory_strategy(&self) -> MemoryStrategy {
        self.shared.strategy
    }
}

fn create_device(
    instance: OwnedInstance,
    pd: vk::PhysicalDevice,
    info: AdapterInfo,
    options: &ContextOptions,
) -> Result<Arc<Shared>, BackendError> {
    let inst = &instance.instance;
    // SAFETY (whole function): calls on a live instance and physical device; every create-info
    // outlives the call that reads it.
    let families = unsafe { inst.get_physical_device_queue_family_properties(pd) };
    let has = |f: &vk::QueueFamilyProperties, flag| f.queue_flags.contains(flag) && f.queue_count > 0;
    // A compute-only family (if any) does not share its queue with graphics work.
    let family = families
        .iter()
        .position(|f| has(f, vk::QueueFlags::COMPUTE) && !has(f, vk::QueueFlags::GRAPHICS))
        .or_else(|| families.iter().position(|f| has(f, vk::QueueFlags::COMPUTE)));
    let Some(family) = family else {
        return Err(VulkanError::NoSuitableDevice { devices: info.summary() }.into());
    };
    let timestamps = families.get(family).is_some_and(|f| f.timestamp_valid_bits > 0);
    let period = unsafe { inst.get_physical_device_properties(pd) }.limits.timestamp_period;
    let timestamp_period = (timestamps && period > 0.0).then_some(f64::from(period));
    let family = family as u32;

    let extensions = unsafe { inst.enumerate_device_extension_properties(pd) }
        .map_err(|r| vk_error(&info.name, "listing device extensions", 0, r))?;
    let mut enabled = Vec::new();
    // The spec requires enabling it wherever it is offered (MoltenVK).
    if extensions.iter().any(|e| e.extension_name_as_c_str() == Ok(vk::KHR_PORTABILITY_SUBSET_NAME)) {
        enabled.push(vk::KHR_PORTABILITY_SUBSET_NAME.as_ptr());
    }
    // Optional features the kernels use, each enabled only where the probe found it: f16
    // arithmetic (the tensor-core matmul rounds operands to f16 in shared memory), f16 in
    // storage buffers (what `gpu_limits` reports as `shader_f16`, and so what lets f16 tensors
    // exist on this device), and cooperative matrices. shaderFloat16 is core from Vulkan 1.2
    // and an extension before (the probe reads it only where one of the two holds); 16-bit
    // storage is core in 1.1, the least rlx opens.
    let f = &info.features;
    let f16_arith = f.shader_f16;
    if f16_arith && info.api_version < [1, 2, 0] {
        enabled.push(vk::KHR_SHADER_FLOAT16_INT8_NAME.as_ptr());
    }
    let f16_storage = info.enables_f16();
    let coop_ok = info.enables_cooperative_matrix();
    if coop_ok {
        enabled.push(vk::KHR_COOPERATIVE_MATRIX_NAME.as_ptr());
    }
    let mut float16 = vk::PhysicalDeviceShaderFloat16Int8Features::default().shader_float16(true);
    let mut storage16 = vk::PhysicalDevice16BitStorageFeatures::default().storage_buffer16_bit_access(true);
    let mut coop = vk::PhysicalDeviceCooperativeMatrixFeaturesKHR::default().cooperative_matrix(true);
    // RLX_VULKAN_ROBUST=1: robustBufferAccess on, as wgpu always enables it, so that the cost of
    // the driver's bounds checks can be measured on the native backend (a diagnostic; rlx's own
    // schedules are bounds-checked before they run). Every Vulkan device supports the feature.
    let robust = std::env::var_os("RLX_VULKAN_ROBUST").is_some_and(|v| v == "1");
    let core = vk::PhysicalDeviceFeatures::default().robust_buffer_access(robust);
    let priorities = [1.0f32];
    let queues =
        [vk::DeviceQueueCreateInfo::default().queue_family_index(family).queue_priorities(&priorities)];
    let mut create =
        vk::DeviceCreateInfo::default().queue_create_infos(&queues).enabled_extension_names(&enabled);
    create = create.enabled_features(&core);
    if f16_arith {
        create = create.push_next(&mut float16);
    }
    if f16_storage {
        create = create.push_next(&mut storage16);
    }
    if coop_ok {
        create = create.push_next(&mut coop);
    }
    let device = unsafe { inst.create_device(pd, &create, None) }
        .map_err(|r| vk_error(&info.name, "creating the logical device", 0, r))?;
    let queue = unsafe { device.get_device_queue(family, 0) };
    let memory = unsafe { inst.get_physical_device_memory_properties(pd) };
    let debug = instance.debug_utils.then(|| ash::ext::debug_utils::Device::new(inst, &device));
    let implied = if info.adapter_type.is_unified_memory() {
        MemoryStrategy::Unified
    } else {
        MemoryStrategy::Discrete
    };
    let strategy = options.memory.unwrap_or(implied);
    Ok(Arc::new(Shared {
        device,
        queue: Mutex::new(queue),
        queue_family: family,
        memory,
        info,
        strategy,
        timestamp_period,
        debug,
        budget: HeapBudget::new(heap_sizes(&memory), options.memory_budget),
        loss: LossState::default(),
        instance: ManuallyDrop::new(instance),
        live: rlx_backend::LiveCounters::new(),
    }))
}
