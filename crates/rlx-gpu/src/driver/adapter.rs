//! What rlx-vulkan's probe records about one physical device, as plain data, and the choices
//! made from it without another call to the driver: which device to open, which optional
//! features to enable, which memory type a buffer takes ([`pick_memory_type`]), and the
//! [`GpuLimits`] the lowering checks against.
//!
//! rlx-vulkan fills [`AdapterInfo`] from Vulkan's property and feature structs and re-exports
//! these types; nothing here calls Vulkan.

use crate::GpuLimits;

/// Kind of device, as the driver reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AdapterType {
    Discrete,
    Integrated,
    Virtual,
    /// A software implementation such as lavapipe.
    Cpu,
    Other,
}

impl AdapterType {
    /// Memory shared by host and device: buffers live in host-visible memory and need no
    /// staging copies.
    pub fn is_unified_memory(self) -> bool {
        matches!(self, AdapterType::Integrated | AdapterType::Cpu)
    }

    /// Order of preference when no device is named: discrete first.
    fn rank(self) -> u8 {
        match self {
            AdapterType::Discrete => 0,
            AdapterType::Integrated => 1,
            AdapterType::Virtual => 2,
            AdapterType::Other => 3,
            AdapterType::Cpu => 4,
        }
    }
}

/// Limits that rlx checks against before launching anything.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterLimits {
    /// Largest range of one storage-buffer binding, in bytes.
    pub max_storage_buffer_range: u32,
    pub min_storage_buffer_offset_alignment: u64,
    /// Largest single memory allocation (VkPhysicalDeviceMaintenance3Properties).
    pub max_memory_allocation_size: u64,
    pub max_compute_shared_memory_size: u32,
    pub max_compute_work_group_invocations: u32,
    pub max_compute_work_group_size: [u32; 3],
    pub max_compute_work_group_count: [u32; 3],
    pub max_push_constants_size: u32,
    pub max_bound_descriptor_sets: u32,
    /// maxPerStageDescriptorStorageBuffers.
    pub max_per_stage_storage_buffers: u32,
}

/// Optional abilities, for choosing kernel rungs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterFeatures {
    /// Threads per subgroup (warp / wave); 0 when unknown.
    pub subgroup_size: u32,
    /// Subgroup arithmetic (reductions) is available in compute shaders.
    pub subgroup_arithmetic: bool,
    /// Subgroup shuffles are available in compute shaders.
    pub subgroup_shuffle: bool,
    /// f16 arithmetic in shaders (shaderFloat16).
    pub shader_f16: bool,
    /// f16 values in storage buffers (storageBuffer16BitAccess).
    pub storage_buffer_16bit: bool,
    /// VK_KHR_cooperative_matrix is offered with its feature, and among its configurations is
    /// f16 16×16×16 with f32 accumulation at subgroup scope: what rlx's tensor-core matmul runs.
    pub cooperative_matrix: bool,
}

/// One memory heap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryHeap {
    pub size: u64,
    pub device_local: bool,
}

/// Everything rlx knows about one physical device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterInfo {
    /// Position in the loader's enumeration: the value `RLX_VULKAN_DEVICE` takes.
    pub index: usize,
    pub name: String,
    pub vendor_id: u32,
    pub device_id: u32,
    pub adapter_type: AdapterType,
    /// VkPhysicalDeviceDriverProperties; empty when the device does not report them.
    pub driver_name: String,
    pub driver_info: String,
    /// VkPhysicalDeviceProperties::driverVersion, in the vendor's own encoding.
    pub driver_version: u32,
    /// VkPhysicalDeviceProperties::pipelineCacheUUID: pipeline cache data is only valid for a
    /// device and driver with the same UUID.
    pub pipeline_cache_uuid: [u8; 16],
    /// Vulkan version the device supports, [major, minor, patch].
    pub api_version: [u32; 3],
    pub limits: AdapterLimits,
    pub features: AdapterFeatures,
    pub memory_heaps: Vec<MemoryHeap>,
    /// Whether a queue family with compute exists.
    pub has_compute_queue: bool,
}

impl AdapterInfo {
    /// Devices rlx can drive: Vulkan 1.1 or newer with a compute queue.
    pub fn is_usable(&self) -> bool {
        self.api_version >= [1, 1, 0] && self.has_compute_queue
    }

    /// One line: "0: llvmpipe (LLVM 15.0.6, 256 bits) [Cpu, llvmpipe, Vulkan 1.3.238]".
    pub fn summary(&self) -> String {
        let [ma, mi, pa] = self.api_version;
        let driver = if self.driver_name.is_empty() { "unknown driver" } else { &self.driver_name };
        format!("{}: {} [{:?}, {driver}, Vulkan {ma}.{mi}.{pa}]", self.index, self.name, self.adapter_type)
    }

    /// Whether the device gets shaderFloat16 and storageBuffer16BitAccess enabled: where it has
    /// both (the probe read them from the same structs the device is created with).
    pub fn enables_f16(&self) -> bool {
        self.features.shader_f16 && self.features.storage_buffer_16bit
    }

    /// Whether the device gets VK_KHR_cooperative_matrix enabled: where the probe found the f16
    /// 16×16×16 → f32 configuration and f16 arithmetic (the tensor-core kernels need both).
    pub fn enables_cooperative_matrix(&self) -> bool {
        self.features.cooperative_matrix && self.features.shader_f16
    }

    /// rlx-gpu's view of the device's limits.
    pub fn gpu_limits(&self) -> GpuLimits {
        let l = &self.limits;
        GpuLimits {
            max_binding_bytes: u64::from(l.max_storage_buffer_range),
            min_offset_alignment: l.min_storage_buffer_offset_alignment,
            max_workgroups: l.max_compute_work_group_count,
            shared_memory_bytes: l.max_compute_shared_memory_size,
            subgroup_size: self.features.subgroup_size,
            // The context enables each feature exactly where these hold.
            cooperative_matrix: self.enables_cooperative_matrix(),
            shader_f16: self.enables_f16(),
            max_storage_bindings: l.max_per_stage_storage_buffers,
        }
    }
}

/// Why no device could be chosen (rlx-vulkan words each as its own error).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PickError {
    /// The list is empty.
    NoDevice,
    /// No device is usable; `devices` lists them all.
    NoSuitableDevice { devices: String },
    /// `value` is not the index of a usable device; `devices` lists them all.
    BadDeviceIndex { value: String, devices: String },
}

/// The device to use: the one `choice` names (an index into `adapters`; blank means none), else
/// the first usable device in the order discrete, integrated, virtual, other, CPU.
pub fn pick_adapter<'a>(
    adapters: &'a [AdapterInfo],
    choice: Option<&str>,
) -> Result<&'a AdapterInfo, PickError> {
    if adapters.is_empty() {
        return Err(PickError::NoDevice);
    }
    let list = || adapters.iter().map(AdapterInfo::summary).collect::<Vec<_>>().join("; ");
    if let Some(value) = choice.map(str::trim).filter(|v| !v.is_empty()) {
        return value
            .parse::<usize>()
            .ok()
            .and_then(|i| adapters.iter().find(|a| a.index == i))
            .filter(|a| a.is_usable())
            .ok_or_else(|| PickError::BadDeviceIndex { value: value.to_string(), devices: list() });
    }
    adapters
        .iter()
        .filter(|a| a.is_usable())
        .min_by_key(|a| (a.adapter_type.rank(), a.index))
        .ok_or_else(|| PickError::NoSuitableDevice { devices: list() })
}

/// The first memory type (of `types`, each type's property flags as bits) that `allowed` (a
/// bit per type) permits and that has every `required` flag, preferring one that also has
/// every `preferred` flag.
pub fn pick_memory_type(types: &[u32], allowed: u32, required: u32, preferred: u32) -> Option<u32> {
    let find = |flags: u32| (0..types.len()).find(|&i| allowed & (1 << i) != 0 && types[i] & flags == flags);
    find(required | preferred).or_else(|| find(required)).map(|i| i as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_types_prefer_the_preferred_flags_among_the_allowed() {
        let (host, local, cached) = (0b0110, 0b0001, 0b1000);
        let types = [local, host, host | cached, host | local];
        assert_eq!(pick_memory_type(&types, 0b1111, host, cached), Some(2));
        assert_eq!(pick_memory_type(&types, 0b1011, host, cached), Some(1));
        assert_eq!(pick_memory_type(&types, 0b0010, host, local), Some(1));
        assert_eq!(pick_memory_type(&types, 0b0001, host, 0), None);
        assert_eq!(pick_memory_type(&types, u32::MAX, local, 0), Some(0));
    }
}
