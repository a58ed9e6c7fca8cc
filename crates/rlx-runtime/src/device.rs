//! Device names, their parsing (including `RLX_DEVICE`), and the order in which `Auto` prefers
//! them.

use crate::Error;
use std::fmt;
use std::str::FromStr;

/// Environment variable that overrides `Device::Auto`.
pub const DEVICE_ENV: &str = "RLX_DEVICE";

/// Where a graph runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Device {
    /// The CPU backend, also the numerical reference for every other backend.
    Cpu,
    /// wgpu's best adapter (Vulkan, Metal, DX12 or WebGPU underneath).
    Gpu,
    /// The native Vulkan backend.
    Vulkan,
    /// `RLX_DEVICE` when set, otherwise the best available device.
    Auto,
}

impl Device {
    /// Every concrete device (all but `Auto`), in the order `Auto` prefers them.
    pub const PREFERENCE: [Device; 3] = [Device::Vulkan, Device::Gpu, Device::Cpu];

    /// Valid spellings, for messages.
    pub const NAMES: [&'static str; 4] = ["cpu", "gpu", "vulkan", "auto"];

    /// The device's name as `RLX_DEVICE` and `--device` spell it: "cpu", "gpu", "vulkan" or
    /// "auto".
    pub fn name(self) -> &'static str {
        match self {
            Device::Cpu => "cpu",
            Device::Gpu => "gpu",
            Device::Vulkan => "vulkan",
            Device::Auto => "auto",
        }
    }

    /// `RLX_DEVICE` if it is set and not empty, else `default`. An unparsable value is an error
    /// (silently falling back would run on a device the user did not ask for).
    pub fn from_env_or(default: Device) -> Result<Device, Error> {
        let value = std::env::var(DEVICE_ENV).ok();
        Device::from_env_value(value.as_deref(), default)
    }

    /// The parsing behind [`Device::from_env_or`], taking the variable's value (`None` when
    /// unset). Separate so it can be tested without touching the process environment.
    pub fn from_env_value(value: Option<&str>, default: Device) -> Result<Device, Error> {
        match value.map(str::trim) {
            None | Some("") => Ok(default),
            Some(v) => v.parse().map_err(|source| Error::InvalidEnv {
                var: DEVICE_ENV,
                value: v.to_string(),
                source,
            }),
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A device name that is not one of [`Device::NAMES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown device '{given}'; valid devices are: cpu, gpu, vulkan, auto")]
pub struct ParseDeviceError {
    /// The text that does not parse.
    pub given: String,
}

impl FromStr for Device {
    type Err = ParseDeviceError;

    /// Case-insensitive; surrounding whitespace is ignored.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        Device::PREFERENCE
            .into_iter()
            .chain([Device::Auto])
            .find(|d| d.name().eq_ignore_ascii_case(t))
            .ok_or_else(|| ParseDeviceError { given: s.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_name_any_case() {
        assert_eq!("cpu".parse::<Device>().unwrap(), Device::Cpu);
        assert_eq!("GPU".parse::<Device>().unwrap(), Device::Gpu);
        assert_eq!(" Vulkan ".parse::<Device>().unwrap(), Device::Vulkan);
        assert_eq!("aUtO".parse::<Device>().unwrap(), Device::Auto);
        for name in Device::NAMES {
            let d: Device = name.parse().unwrap();
            assert_eq!(d.to_string(), name);
        }
    }

    #[test]
    fn unknown_name_lists_valid_ones() {
        let e = "tpu".parse::<Device>().unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("'tpu'"), "{msg}");
        for name in Device::NAMES {
            assert!(msg.contains(name), "{msg}");
        }
    }
}
