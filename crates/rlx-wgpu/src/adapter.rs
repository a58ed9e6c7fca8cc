//! Adapter selection and what to ask of it. Probe once, enable exactly what was probed: the
//! features rlx can use are requested only where the adapter has them, and the limits are the
//! adapter's own, so a device request never fails for asking too much.

use rlx_backend::BackendError;
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
    /// Keep wgpu's shader runtime checks (bounds checks on every buffer access, loop bounding).
    /// They cost time on large kernels; turning them off trusts rlx-gpu's kernels and the
    /// index limits its params constructors check.
    pub runtime_checks: bool,
    /// Pass kernel params as immediates (push constants) where the device has them. Off, every
    /// step gets a uniform buffer, as on devices without immediates (tests use this to run
    /// that path anywhere).
    pub immediates: bool,
}

impl Default for WgpuOptions {
    fn default() -> Self {
        WgpuOptions { backends: None, adapter: None, runtime_checks: true, immediates: true }
    }
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
/// (tensor cores), immediates (push constants) for kernel params, and GPU timestamps for
/// profiling.
pub fn wanted_features() -> Features {
    Features::SHADER_F16
        | Features::SUBGROUP
        | Features::EXPERIMENTAL_COOPERATIVE_MATRIX
        | Features::IMMEDIATES
        | Features::TIMESTAMP_QUERY
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
        for f in [Features::SUBGROUP, Features::EXPERIMENTAL_COOPERATIVE_MATRIX, Features::TIMESTAMP_QUERY] {
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
