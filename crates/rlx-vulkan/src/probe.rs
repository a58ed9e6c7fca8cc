//! Probing: open the loader, create an instance, describe every physical device once.
//!
//! Everything rlx later decides about a device (memory strategy, matmul rung, limits checks)
//! reads the [`AdapterInfo`] filled here; nothing queries the device again.

use crate::error::{VulkanError, LOADER_LIBRARY};
use ash::vk;
use rlx_gpu::driver::PickError;
pub use rlx_gpu::driver::{AdapterFeatures, AdapterInfo, AdapterLimits, AdapterType, MemoryHeap};
use std::ffi::CStr;

/// The Vulkan instance with the library it came from. Dropping it destroys the instance; the
/// library stays loaded until `entry` drops after it.
pub(crate) struct OwnedInstance {
    pub(crate) instance: ash::Instance,
    /// Whether VK_EXT_debug_utils is enabled (object labels for debuggers).
    pub(crate) debug_utils: bool,
    pub(crate) entry: ash::Entry,
}

/// Serialises creating and destroying instances and devices across the process.
///
/// NVIDIA's Linux driver races inside vkCreateInstance / vkCreateDevice / their destroys when
/// threads do them at once (wgpu issue 5930, blade issue 336): on the H100 two contexts opened
/// in parallel test threads crashed (SIGSEGV) or hung. Every lifecycle call holds this lock;
/// everything else (allocation, recording, submission) runs unserialised.
pub(crate) static LIFECYCLE: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl Drop for OwnedInstance {
    fn drop(&mut self) {
        // SAFETY: every object made from this instance holds it through `Shared` (or is local to
        // `probe`), so none is alive when it drops. The caller holds LIFECYCLE: `probe` and
        // `Context::with_options` drop instances inside their locked scopes, `Shared::drop`
        // drops its instance explicitly under the lock.
        unsafe { self.instance.destroy_instance(None) };
    }
}

fn has_extension(list: &[vk::ExtensionProperties], name: &CStr) -> bool {
    list.iter().any(|e| e.extension_name_as_c_str() == Ok(name))
}

/// Opens the loader and creates an instance (Vulkan 1.3 requested; devices report their own).
pub(crate) fn create_instance() -> Result<OwnedInstance, VulkanError> {
    // SAFETY: loading the system Vulkan loader runs its initialisers; this is the documented
    // way to use ash without linking.
    let entry = unsafe { ash::Entry::load() }
        .map_err(|e| VulkanError::LoaderMissing { library: LOADER_LIBRARY, reason: e.to_string() })?;
    // SAFETY: plain queries on a loaded entry.
    let version = unsafe { entry.try_enumerate_instance_version() }
        .map_err(|result| VulkanError::Call { call: "vkEnumerateInstanceVersion", result })?
        .unwrap_or(vk::API_VERSION_1_0);
    if version < vk::API_VERSION_1_1 {
        return Err(VulkanError::LoaderTooOld);
    }
    let available = unsafe { entry.enumerate_instance_extension_properties(None) }
        .map_err(|result| VulkanError::Call { call: "vkEnumerateInstanceExtensionProperties", result })?;
    let mut extensions = Vec::new();
    let mut flags = vk::InstanceCreateFlags::empty();
    // MoltenVK and other non-conformant drivers only show up with portability enumeration.
    if has_extension(&available, vk::KHR_PORTABILITY_ENUMERATION_NAME) {
        extensions.push(vk::KHR_PORTABILITY_ENUMERATION_NAME.as_ptr());
        flags |= vk::InstanceCreateFlags::ENUMERATE_PORTABILITY_KHR;
    }
    let debug_utils = has_extension(&available, vk::EXT_DEBUG_UTILS_NAME);
    if debug_utils {
        extensions.push(vk::EXT_DEBUG_UTILS_NAME.as_ptr());
    }
    let app = vk::ApplicationInfo::default()
        .application_name(c"rlx")
        .engine_name(c"rlx")
        .api_version(vk::API_VERSION_1_3);
    let info = vk::InstanceCreateInfo::default()
        .application_info(&app)
        .enabled_extension_names(&extensions)
        .flags(flags);
    // SAFETY: `info` and everything it points to outlive the call.
    let instance = unsafe { entry.create_instance(&info, None) }.map_err(|result| match result {
        // What the loader answers when it finds no driver (ICD) at all.
        vk::Result::ERROR_INCOMPATIBLE_DRIVER => VulkanError::NoDevice,
        _ => VulkanError::Call { call: "vkCreateInstance", result },
    })?;
    Ok(OwnedInstance { instance, debug_utils, entry })
}

fn c_string(s: Result<&CStr, std::ffi::FromBytesUntilNulError>) -> String {
    s.map(|c| c.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Describes one physical device.
pub(crate) fn describe(
    owned: &OwnedInstance,
    index: usize,
    pd: vk::PhysicalDevice,
) -> Result<AdapterInfo, VulkanError> {
    let instance = &owned.instance;
    // SAFETY (whole function): queries on a valid physical device of a live instance; every
    // chained struct is one the device's API version or extension list says it supports.
    let props = unsafe { instance.get_physical_device_properties(pd) };
    let extensions = unsafe { instance.enumerate_device_extension_properties(pd) }
        .map_err(|result| VulkanError::Call { call: "vkEnumerateDeviceExtensionProperties", result })?;
    let api = props.api_version;
    let v11 = api >= vk::API_VERSION_1_1;
    let v12 = api >= vk::API_VERSION_1_2;

    let mut subgroup = vk::PhysicalDeviceSubgroupProperties::default();
    let mut maint3 = vk::PhysicalDeviceMaintenance3Properties::default();
    if v11 {
        let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut subgroup).push_next(&mut maint3);
        unsafe { instance.get_physical_device_properties2(pd, &mut p2) };
    }
    let mut driver = vk::PhysicalDeviceDriverProperties::default();
    if v11 && (v12 || has_extension(&extensions, vk::KHR_DRIVER_PROPERTIES_NAME)) {
        let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut driver);
        unsafe { instance.get_physical_device_properties2(pd, &mut p2) };
    }
    let mut f16 = vk::PhysicalDeviceShaderFloat16Int8Features::default();
    let mut storage16 = vk::PhysicalDevice16BitStorageFeatures::default();
    if v11 {
        let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut storage16);
        unsafe { instance.get_physical_device_features2(pd, &mut f2) };
    }
    if v11 && (v12 || has_extension(&extensions, vk::KHR_SHADER_FLOAT16_INT8_NAME)) {
        let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut f16);
        unsafe { instance.get_physical_device_features2(pd, &mut f2) };
    }
    let cooperative_matrix =
        has_extension(&extensions, vk::KHR_COOPERATIVE_MATRIX_NAME) && coop_f16_16x16(owned, pd);
    let memory = unsafe { instance.get_physical_device_memory_properties(pd) };
    let families = unsafe { instance.get_physical_device_queue_family_properties(pd) };

    let l = &props.limits;
    let compute_ops = |op| {
        subgroup.supported_stages.contains(vk::ShaderStageFlags::COMPUTE)
            && subgroup.supported_operations.contains(op)
    };
    let heaps = memory.memory_heaps.get(..memory.memory_heap_count as usize).unwrap_or(&[]);
    Ok(AdapterInfo {
        index,
        name: c_string(props.device_name_as_c_str()),
        vendor_id: props.vendor_id,
        device_id: props.device_id,
        adapter_type: match props.device_type {
            vk::PhysicalDeviceType::DISCRETE_GPU => AdapterType::Discrete,
            vk::PhysicalDeviceType::INTEGRATED_GPU => AdapterType::Integrated,
            vk::PhysicalDeviceType::VIRTUAL_GPU => AdapterType::Virtual,
            vk::PhysicalDeviceType::CPU => AdapterType::Cpu,
            _ => AdapterType::Other,
        },
        driver_name: c_string(driver.driver_name_as_c_str()),
        driver_info: c_string(driver.driver_info_as_c_str()),
        driver_version: props.driver_version,
        pipeline_cache_uuid: props.pipeline_cache_uuid,
        api_version: [vk::api_version_major(api), vk::api_version_minor(api), vk::api_version_patch(api)],
        limits: AdapterLimits {
            max_storage_buffer_range: l.max_storage_buffer_range,
            min_storage_buffer_offset_alignment: l.min_storage_buffer_offset_alignment,
            max_memory_allocation_size: if v11 { maint3.max_memory_allocation_size } else { 0 },
            max_compute_shared_memory_size: l.max_compute_shared_memory_size,
            max_compute_work_group_invocations: l.max_compute_work_group_invocations,
            max_compute_work_group_size: l.max_compute_work_group_size,
            max_compute_work_group_count: l.max_compute_work_group_count,
            max_push_constants_size: l.max_push_constants_size,
            max_bound_descriptor_sets: l.max_bound_descriptor_sets,
            max_per_stage_storage_buffers: l.max_per_stage_descriptor_storage_buffers,
        },
        features: AdapterFeatures {
            subgroup_size: subgroup.subgroup_size,
            subgroup_arithmetic: compute_ops(vk::SubgroupFeatureFlags::ARITHMETIC),
            subgroup_shuffle: compute_ops(vk::SubgroupFeatureFlags::SHUFFLE),
            shader_f16: f16.shader_float16 == vk::TRUE,
            storage_buffer_16bit: storage16.storage_buffer16_bit_access == vk::TRUE,
            cooperative_matrix,
        },
        memory_heaps: heaps
            .iter()
            .map(|h| MemoryHeap {
                size: h.size,
                device_local: h.flags.contains(vk::MemoryHeapFlags::DEVICE_LOCAL),
            })
            .collect(),
        has_compute_queue: families.iter().any(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE)),
    })
}

/// Whether `pd` (which offers VK_KHR_cooperative_matrix) has its feature and the f16
/// 16×16×16 → f32 subgroup configuration.
fn coop_f16_16x16(owned: &OwnedInstance, pd: vk::PhysicalDevice) -> bool {
    let mut feature = vk::PhysicalDeviceCooperativeMatrixFeaturesKHR::default();
    let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut feature);
    // SAFETY: queries on a valid physical device that offers the extension.
    unsafe { owned.instance.get_physical_device_features2(pd, &mut f2) };
    if feature.cooperative_matrix != vk::TRUE {
        return false;
    }
    let ext = ash::khr::cooperative_matrix::Instance::new(&owned.entry, &owned.instance);
    let props = unsafe { ext.get_physical_device_cooperative_matrix_properties(pd) }.unwrap_or_default();
    let (f16, f32) = (vk::ComponentTypeKHR::FLOAT16, vk::ComponentTypeKHR::FLOAT32);
    props.iter().any(|p| {
        (p.m_size, p.n_size, p.k_size) == (16, 16, 16)
            && (p.a_type, p.b_type, p.c_type, p.result_type) == (f16, f16, f32, f32)
            && p.scope == vk::ScopeKHR::SUBGROUP
    })
}

/// Every physical device of `instance` with its description, in the loader's order.
pub(crate) fn enumerate(
    owned: &OwnedInstance,
) -> Result<Vec<(vk::PhysicalDevice, AdapterInfo)>, VulkanError> {
    let instance = &owned.instance;
    // SAFETY: a query on a live instance.
    let devices = unsafe { instance.enumerate_physical_devices() }
        .map_err(|result| VulkanError::Call { call: "vkEnumeratePhysicalDevices", result })?;
    devices.into_iter().enumerate().map(|(i, pd)| Ok((pd, describe(owned, i, pd)?))).collect()
}

/// Describes every Vulkan device on this machine. An empty list means a working loader with
/// no driver.
pub fn probe() -> Result<Vec<AdapterInfo>, VulkanError> {
    // Declared first, so it is released after `instance` is destroyed.
    let _lifecycle = crate::context::lock(&LIFECYCLE);
    let instance = create_instance()?;
    Ok(enumerate(&instance)?.into_iter().map(|(_, info)| info).collect())
}

/// The device rlx uses: the one `RLX_VULKAN_DEVICE` names (an index into `adapters`), else the
/// first usable device in the order discrete, integrated, virtual, other, CPU.
pub fn pick(adapters: &[AdapterInfo]) -> Result<&AdapterInfo, VulkanError> {
    pick_with(adapters, std::env::var("RLX_VULKAN_DEVICE").ok().as_deref())
}

/// [`pick`] with the override given explicitly (None: not set).
pub fn pick_with<'a>(
    adapters: &'a [AdapterInfo],
    choice: Option<&str>,
) -> Result<&'a AdapterInfo, VulkanError> {
    rlx_gpu::driver::pick_adapter(adapters, choice).map_err(|e| match e {
        PickError::NoDevice => VulkanError::NoDevice,
        PickError::NoSuitableDevice { devices } => VulkanError::NoSuitableDevice { devices },
        PickError::BadDeviceIndex { value, devices } => VulkanError::BadDeviceIndex { value, devices },
    })
}
