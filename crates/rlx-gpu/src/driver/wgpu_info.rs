//! What rlx-wgpu's probe records about one adapter and the device opened on it, as plain data:
//! the features enabled, the key limits granted, the rows `rlx devices` prints and the
//! [`GpuLimits`] the lowering checks against. rlx-wgpu fills [`WgpuInfo`] from wgpu's adapter
//! info, features and limits and re-exports these types; nothing here calls wgpu.

use crate::GpuLimits;

/// Optional features enabled on the device (each only where the adapter has it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EnabledFeatures {
    pub shader_f16: bool,
    pub subgroup: bool,
    pub cooperative_matrix: bool,
    /// Among the adapter's cooperative-matrix configurations is f16 16×16×16 with f32
    /// accumulation: what rlx's tensor-core matmul uses.
    pub coop_f16_16: bool,
    /// Kernel params travel as immediates (push constants); uniforms otherwise.
    pub immediates: bool,
    /// GPU timestamps time the compute pass of every run ([`rlx_backend::RunProfile`]).
    pub timestamp_query: bool,
    /// Compiled pipelines are kept on disk between processes.
    pub pipeline_cache: bool,
}

impl EnabledFeatures {
    /// "f16, subgroup, immediates" (or "none").
    pub fn list(&self) -> String {
        let names: Vec<&str> = [
            (self.shader_f16, "f16"),
            (self.subgroup, "subgroup"),
            (self.cooperative_matrix, "cooperative-matrix"),
            (self.immediates, "immediates"),
            (self.timestamp_query, "timestamps"),
            (self.pipeline_cache, "pipeline-cache"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        if names.is_empty() {
            "none".into()
        } else {
            names.join(", ")
        }
    }
}

/// The device limits rlx cares about, as granted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyLimits {
    pub max_storage_buffer_binding_size: u64,
    pub max_buffer_size: u64,
    pub max_storage_buffers_per_shader_stage: u32,
    pub max_immediate_size: u32,
    pub min_storage_buffer_offset_alignment: u32,
    pub max_compute_workgroups_per_dimension: u32,
    pub max_compute_workgroup_storage_size: u32,
    pub max_compute_invocations_per_workgroup: u32,
    pub subgroup_min_size: u32,
    pub subgroup_max_size: u32,
}

/// One adapter and the device opened on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WgpuInfo {
    pub name: String,
    /// "Vulkan", "Metal", "Dx12", "Gl".
    pub backend: String,
    /// "DiscreteGpu", "IntegratedGpu", "Cpu", ...
    pub device_type: String,
    pub vendor: u32,
    pub device: u32,
    pub driver: String,
    pub driver_info: String,
    pub features: EnabledFeatures,
    pub limits: KeyLimits,
}

impl WgpuInfo {
    /// A software rasterizer such as lavapipe or llvmpipe (runs on the CPU).
    pub fn is_software(&self) -> bool {
        self.device_type == "Cpu"
    }

    /// "NVIDIA H100 80GB HBM3 (Vulkan)".
    pub fn summary(&self) -> String {
        format!("{} ({})", self.name, self.backend)
    }

    /// Key facts as (label, value) rows for `rlx devices`.
    pub fn details(&self) -> Vec<(String, String)> {
        let l = &self.limits;
        let driver = match (self.driver.is_empty(), self.driver_info.is_empty()) {
            (_, true) => self.driver.clone(),
            (true, false) => self.driver_info.clone(),
            (false, false) => format!("{} ({})", self.driver, self.driver_info),
        };
        let subgroup = if l.subgroup_min_size == l.subgroup_max_size {
            l.subgroup_min_size.to_string()
        } else {
            format!("{}..{}", l.subgroup_min_size, l.subgroup_max_size)
        };
        [
            ("adapter", self.name.clone()),
            ("backend", self.backend.clone()),
            ("type", self.device_type.clone()),
            ("driver", driver),
            ("features", self.features.list()),
            ("max binding", format!("{} MiB", l.max_storage_buffer_binding_size >> 20)),
            ("max buffer", format!("{} MiB", l.max_buffer_size >> 20)),
            ("storage buffers per stage", l.max_storage_buffers_per_shader_stage.to_string()),
            ("immediates", format!("{} bytes", l.max_immediate_size)),
            ("shared memory", format!("{} KiB", l.max_compute_workgroup_storage_size >> 10)),
            ("subgroup size", subgroup),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// What rlx-gpu's lowering needs to know of the device.
    pub fn gpu_limits(&self) -> GpuLimits {
        let l = &self.limits;
        GpuLimits {
            // A binding never exceeds the buffer it views.
            max_binding_bytes: l.max_storage_buffer_binding_size.min(l.max_buffer_size),
            min_offset_alignment: u64::from(l.min_storage_buffer_offset_alignment.max(1)),
            max_workgroups: [l.max_compute_workgroups_per_dimension; 3],
            shared_memory_bytes: l.max_compute_workgroup_storage_size,
            // One size only when the device has one; 0 (unknown) when it varies.
            subgroup_size: if l.subgroup_min_size == l.subgroup_max_size { l.subgroup_min_size } else { 0 },
            cooperative_matrix: self.features.coop_f16_16 && self.features.shader_f16,
            // Requested wherever the adapter offers it (`requested_features`); wgpu's SHADER_F16
            // covers f16 in storage buffers too.
            shader_f16: self.features.shader_f16,
            max_storage_bindings: l.max_storage_buffers_per_shader_stage,
        }
    }
}

#[cfg(test)]
mod info_tests {
    use super::*;

    fn sample() -> WgpuInfo {
        WgpuInfo {
            name: "llvmpipe (LLVM 19.1.7, 256 bits)".into(),
            backend: "Vulkan".into(),
            device_type: "Cpu".into(),
            vendor: 0x10005,
            device: 0,
            driver: "llvmpipe".into(),
            driver_info: "Mesa 25.0.7".into(),
            features: EnabledFeatures { immediates: true, subgroup: true, ..Default::default() },
            limits: KeyLimits {
                max_storage_buffer_binding_size: 128 << 20,
                max_buffer_size: 1 << 30,
                max_storage_buffers_per_shader_stage: 8,
                max_immediate_size: 128,
                min_storage_buffer_offset_alignment: 16,
                max_compute_workgroups_per_dimension: 65535,
                max_compute_workgroup_storage_size: 32 << 10,
                max_compute_invocations_per_workgroup: 1024,
                subgroup_min_size: 8,
                subgroup_max_size: 8,
            },
        }
    }

    #[test]
    fn gpu_limits_follow_the_device() {
        let mut info = sample();
        let l = info.gpu_limits();
        assert_eq!(l.max_binding_bytes, 128 << 20);
        assert_eq!(l.min_offset_alignment, 16);
        assert_eq!(l.max_workgroups, [65535; 3]);
        assert_eq!(l.shared_memory_bytes, 32 << 10);
        assert_eq!(l.subgroup_size, 8);
        // A binding limit above the buffer limit is capped; a subgroup size range is unknown.
        info.limits.max_storage_buffer_binding_size = 4 << 30;
        info.limits.subgroup_max_size = 32;
        let l = info.gpu_limits();
        assert_eq!(l.max_binding_bytes, 1 << 30);
        assert_eq!(l.subgroup_size, 0);
    }

    #[test]
    fn details_name_adapter_features_and_limits() {
        let info = sample();
        assert!(info.is_software());
        let rows = info.details();
        let get = |k: &str| rows.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone()).unwrap();
        assert_eq!(get("features"), "subgroup, immediates");
        assert_eq!(get("max binding"), "128 MiB");
        assert_eq!(get("driver"), "llvmpipe (Mesa 25.0.7)");
        assert_eq!(get("subgroup size"), "8");
        assert_eq!(info.summary(), "llvmpipe (LLVM 19.1.7, 256 bits) (Vulkan)");
        assert_eq!(EnabledFeatures::default().list(), "none");
    }
}
