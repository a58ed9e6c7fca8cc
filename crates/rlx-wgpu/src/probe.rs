//! Probing: adapter selection, what to ask of it, and what was granted ([`WgpuInfo`]). Probe
//! once, enable exactly what was probed: the features rlx can use are requested only where the
//! adapter has them, and the limits are the adapter's own, so a device request never fails for
//! asking too much.

use rlx_backend::BackendError;
pub use rlx_gpu::driver::{EnabledFeatures, KeyLimits, WgpuInfo};
use rlx_gpu::PipelineCacheDir;
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

/// The optional features of `f` that rlx tracks (cooperative-matrix f16 16×16×16 aside).
fn enabled_features(f: Features) -> EnabledFeatures {
    EnabledFeatures {
        shader_f16: f.contains(Features::SHADER_F16),
        subgroup: f.contains(Features::SUBGROUP),
        cooperative_matrix: f.contains(Features::EXPERIMENTAL_COOPERATIVE_MATRIX),
        coop_f16_16: false,
        immediates: f.contains(Features::IMMEDIATES),
        timestamp_query: f.contains(Features::TIMESTAMP_QUERY),
        pipeline_cache: f.contains(Features::PIPELINE_CACHE),
    }
}

/// f16 16×16×16 with f32 accumulation: the configuration of rlx's tensor-core matmul.
fn is_f16_16x16(p: &wgpu::CooperativeMatrixProperties) -> bool {
    use wgpu::CooperativeScalarType as T;
    (p.m_size, p.n_size, p.k_size) == (16, 16, 16) && p.ab_type == T::F16 && p.cr_type == T::F32
}

/// What was granted: `coop` is the adapter's list of cooperative-matrix configurations.
pub(crate) fn info(
    info: &wgpu::AdapterInfo,
    features: Features,
    limits: &Limits,
    coop: &[wgpu::CooperativeMatrixProperties],
) -> WgpuInfo {
    let mut enabled = enabled_features(features);
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
