//! Probing: adapter selection, what to ask of it, and what was granted ([`WgpuInfo`]). Probe
//! once, enable exactly what was probed: the features rlx can use are requested only where the
//! adapter has them, and the limits are the adapter's own, so a device request never fails for
//! asking too much.

use rlx_backend::BackendError;
use rlx_gpu::{GpuLimits, PipelineCacheDir};
use wgpu::{Backends, Features, Limits};

/// The environment variable that restricts the wgpu backends ("vulkan", "metal", "dx12", "gl",
/// comma-separated). The same name wgpu itself reads.
pub const BACKEND_ENV: &str = "WGPU_BACKEND";
/// The environment variable that picks an adapter by index (in enumeration order) or by a
/// case-insensitive substring of its name.
pub const ADAPTER_ENV: &str = "RLX_WGPU_ADAPTER";

/// How a backend chooses its adapter and builds its kernels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WgpuOptions {
    /// Which wgpu backends to consider; `None` means all that this build has.
    pub backends: Option<Backends>,
    /// Which adapter; `None` means wgpu's high-performance choice.
    pub adapter: Option<AdapterChoice>,
    /// Whether wgpu adds its shader runtime checks (bounds checks on every buffer access, loop
    /// bounding). Off by default: schedules are validated by rlx-gpu and its params
    /// constructors check every index limit. On is for debugging a kernel.
    pub shader_checks: ShaderChecks,
    /// Pass kernel params as immediates (push constants) where the device has them. Off, every
    /// step gets a uniform buffer, as on devices without immediates (tests use this to run
    /// that path anywhere).
    pub immediates: bool,
    /// Where compiled pipelines are kept between processes (`RLX_PIPELINE_CACHE` by default;
    /// only on devices with `Features::PIPELINE_CACHE`).
    pub pipeline_cache: PipelineCacheDir,
}

impl Default for WgpuOptions {
    fn default() -> Self {
        WgpuOptions {
            backends: None,
            adapter: None,
            shader_checks: ShaderChecks::Trusted,
            immediates: true,
            pipeline_cache: PipelineCacheDir::FromEnv,
        }
    }
}

/// wgpu's shader runtime checks, per backend.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ShaderChecks {
    /// Kernels run as written (wgpu's trusted shader modules): rlx-gpu validated every binding
    /// range and index limit of the schedule.
    #[default]
    Trusted,
    /// wgpu bounds-checks every access and bounds every loop: slower, for debugging a kernel.
    Checked,
}

/// An adapter named by the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdapterChoice {
    /// Position in the list `wgpu::Instance::enumerate_adapters` returns.
    Index(usize),
    /// Case-insensitive substring of the adapter name; the first match wins.
    Name(String),
}

impl WgpuOptions {
    /// Defaults, with [`BACKEND_ENV`] and [`ADAPTER_ENV`] applied. An unknown backend name is an
    /// error that lists the valid ones.
    pub fn from_env() -> Result<Self, BackendError> {
        let mut opts = WgpuOptions::default();
        if let Some(v) = env_value(BACKEND_ENV) {
            let backends = parse_backends(&v).map_err(unavailable)?;
            opts.backends = Some(backends);
        }
        opts.adapter = env_value(ADAPTER_ENV).map(|v| parse_adapter_choice(&v));
        Ok(opts)
    }
}

/// A set, non-blank environment variable.
fn env_value(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

pub(crate) fn unavailable(reason: String) -> BackendError {
    BackendError::DeviceUnavailable { device: "wgpu", reason }
}

/// Parses a comma-separated list of backend names.
pub fn parse_backends(list: &str) -> Result<Backends, String> {
    let mut out = Backends::empty();
    for name in list.split(',').map(|s| s.trim().to_ascii_lowercase()) {
        out |= match name.as_str() {
            "vulkan" | "vk" => Backends::VULKAN,
            "metal" | "mtl" => Backends::METAL,
            "dx12" | "d3d12" => Backends::DX12,
            "gl" | "gles" | "opengl" => Backends::GL,
            other => {
                return Err(format!(
                    "{BACKEND_ENV}={list:?}: unknown backend {other:?}; use vulkan, metal, dx12 or gl \
                     (comma-separated), or unset it"
                ))
            }
        };
    }
    Ok(out)
}

/// Digits name an index, anything else a name substring.
pub fn parse_adapter_choice(value: &str) -> AdapterChoice {
    let v = value.trim();
    match v.parse::<usize>() {
        Ok(i) => AdapterChoice::Index(i),
        Err(_) => AdapterChoice::Name(v.to_string()),
    }
}

/// The optional features rlx uses: f16 arithmetic, subgroup operations, cooperative matrices
/// (tensor cores), immediates (push constants) for kernel params, GPU timestamps for
/// profiling, and pipeline caches (compiled kernels kept on disk between processes).
pub fn wanted_features() -> Features {
    Features::SHADER_F16
        | Features::SUBGROUP
        | Features::EXPERIMENTAL_COOPERATIVE_MATRIX
        | Features::IMMEDIATES
        | Features::TIMESTAMP_QUERY
        | Features::PIPELINE_CACHE
}

/// What to request of an adapter that offers `available`: the wanted features it has, and
/// nothing else (requesting a missing feature fails the device request).
pub fn requested_features(available: Features) -> Features {
    available & wanted_features()
}

/// The limits to request: the adapter's own (the largest storage bindings, storage buffers per
/// stage and dispatch sizes it allows), except immediates, which need their feature.
pub fn requested_limits(available: &Limits, features: Features) -> Limits {
    let mut limits = available.clone();
    if !features.contains(Features::IMMEDIATES) {
        limits.max_immediate_size = 0;
    }
    limits
}

/// One line per adapter, for error messages.
pub(crate) fn describe(adapters: &[wgpu::Adapter]) -> String {
    if adapters.is_empty() {
        return "none".into();
    }
    adapters
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let info = a.get_info();
            format!("{i}: {} ({:?}, {:?})", info.name, info.backend, info.device_type)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Finds the adapter `choice` names among `adapters`.
pub(crate) fn pick(adapters: Vec<wgpu::Adapter>, choice: &AdapterChoice) -> Result<wgpu::Adapter, String> {
    let listing = describe(&adapters);
    let found = match choice {
        AdapterChoice::Index(i) => adapters.into_iter().nth(*i),
        AdapterChoice::Name(name) => {
            let needle = name.to_lowercase();
            adapters.into_iter().find(|a| a.get_info().name.to_lowercase().contains(&needle))
        }
    };
    found.ok_or_else(|| {
        format!("{ADAPTER_ENV} names {choice:?}, which matches no adapter; adapters: {listing}")
    })
}

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
    pub(crate) fn from_wgpu(f: wgpu::Features) -> Self {
        EnabledFeatures {
            shader_f16: f.contains(wgpu::Features::SHADER_F16),
            subgroup: f.contains(wgpu::Features::SUBGROUP),
            cooperative_matrix: f.contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX),
            coop_f16_16: false,
            immediates: f.contains(wgpu::Features::IMMEDIATES),
            timestamp_query: f.contains(wgpu::Features::TIMESTAMP_QUERY),
            pipeline_cache: f.contains(wgpu::Features::PIPELINE_CACHE),
        }
    }

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

/// f16 16×16×16 with f32 accumulation: the configuration of rlx's tensor-core matmul.
fn is_f16_16x16(p: &wgpu::CooperativeMatrixProperties) -> bool {
    use wgpu::CooperativeScalarType as T;
    (p.m_size, p.n_size, p.k_size) == (16, 16, 16) && p.ab_type == T::F16 && p.cr_type == T::F32
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
    /// `coop` is the adapter's list of cooperative-matrix configurations.
    pub(crate) fn new(
        info: &wgpu::AdapterInfo,
        features: wgpu::Features,
        limits: &wgpu::Limits,
        coop: &[wgpu::CooperativeMatrixProperties],
    ) -> Self {
        let mut enabled = EnabledFeatures::from_wgpu(features);
        enabled.coop_f16_16 = enabled.cooperative_matrix && coop.iter().any(is_f16_16x16);
        WgpuInfo {
            name: info.name.clone(),
            backend: format!("{:?}", info.backend),
            device_type: format!("{:?}", info.device_type),
            vendor: info.vendor,
            device: info.device,
            driver: info.driver.clone(),
            driver_info: info.driver_info.clone(),
            features: enabled,
            limits: KeyLimits {
                max_storage_buffer_binding_size: limits.max_storage_buffer_binding_size,
                max_buffer_size: limits.max_buffer_size,
                max_storage_buffers_per_shader_stage: limits.max_storage_buffers_per_shader_stage,
                max_immediate_size: limits.max_immediate_size,
                min_storage_buffer_offset_alignment: limits.min_storage_buffer_offset_alignment,
                max_compute_workgroups_per_dimension: limits.max_compute_workgroups_per_dimension,
                max_compute_workgroup_storage_size: limits.max_compute_workgroup_storage_size,
                max_compute_invocations_per_workgroup: limits.max_compute_invocations_per_workgroup,
                subgroup_min_size: info.subgroup_min_size,
                subgroup_max_size: info.subgroup_max_size,
            },
        }
    }

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
mod tests {
    use super::*;

    #[test]
    fn features_are_requested_only_where_the_adapter_has_them() {
        // An adapter with nothing optional: nothing requested.
        assert_eq!(requested_features(Features::empty()), Features::empty());
        // Some wanted features plus unrelated ones: only the wanted ones that are present.
        let offered = Features::SHADER_F16 | Features::IMMEDIATES | Features::TEXTURE_COMPRESSION_BC;
        assert_eq!(requested_features(offered), Features::SHADER_F16 | Features::IMMEDIATES);
        // Everything offered: exactly the wanted set, never more than offered.
        let all = Features::all();
        assert_eq!(requested_features(all), wanted_features());
        for f in [
            Features::SUBGROUP,
            Features::EXPERIMENTAL_COOPERATIVE_MATRIX,
            Features::TIMESTAMP_QUERY,
            Features::PIPELINE_CACHE,
        ] {
            assert_eq!(requested_features(f), f);
            assert!(offered.contains(requested_features(offered)));
        }
    }

    #[test]
    fn immediates_limit_needs_its_feature() {
        let adapter = Limits {
            max_immediate_size: 256,
            max_storage_buffer_binding_size: 1 << 31,
            max_storage_buffers_per_shader_stage: 64,
            ..Limits::default()
        };
        let without = requested_limits(&adapter, Features::SHADER_F16);
        assert_eq!(without.max_immediate_size, 0);
        assert_eq!(without.max_storage_buffer_binding_size, 1 << 31);
        assert_eq!(without.max_storage_buffers_per_shader_stage, 64);
        let with = requested_limits(&adapter, Features::IMMEDIATES);
        assert_eq!(with, adapter);
    }

    #[test]
    fn backend_names_parse_and_unknown_ones_are_refused() {
        assert_eq!(parse_backends("vulkan").unwrap(), Backends::VULKAN);
        assert_eq!(parse_backends(" VK , gl").unwrap(), Backends::VULKAN | Backends::GL);
        assert_eq!(parse_backends("metal,dx12").unwrap(), Backends::METAL | Backends::DX12);
        let e = parse_backends("vulkan,cuda").unwrap_err();
        assert!(e.contains("\"cuda\"") && e.contains(BACKEND_ENV), "{e}");
    }

    #[test]
    fn adapter_choice_is_an_index_or_a_name() {
        assert_eq!(parse_adapter_choice(" 1 "), AdapterChoice::Index(1));
        assert_eq!(parse_adapter_choice("H100"), AdapterChoice::Name("H100".into()));
        assert_eq!(parse_adapter_choice("-1"), AdapterChoice::Name("-1".into()));
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
