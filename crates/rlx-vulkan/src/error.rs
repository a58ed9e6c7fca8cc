//! Errors of probing, and the mapping of Vulkan results to [`BackendError`].

use ash::vk;
use rlx_backend::BackendError;
use rlx_gpu::driver::Failure;

/// The loader's file name on this platform (what `ash::Entry::load` opens).
#[cfg(windows)]
pub const LOADER_LIBRARY: &str = "vulkan-1.dll";
#[cfg(target_vendor = "apple")]
pub const LOADER_LIBRARY: &str = "libvulkan.dylib";
#[cfg(not(any(windows, target_vendor = "apple")))]
pub const LOADER_LIBRARY: &str = "libvulkan.so.1";

/// Why Vulkan cannot be used on this machine, or why a device choice is invalid.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VulkanError {
    #[error(
        "the Vulkan loader {library} could not be opened ({reason}); install a loader and a driver, \
         e.g. `apt install libvulkan1 mesa-vulkan-drivers` on Debian/Ubuntu (Mesa's lavapipe runs \
         Vulkan on the CPU), or your GPU vendor's driver"
    )]
    LoaderMissing { library: &'static str, reason: String },

    #[error("the Vulkan loader supports only Vulkan 1.0; rlx needs 1.1 or newer: update libvulkan1")]
    LoaderTooOld,

    #[error("Vulkan call {call} failed: {result}")]
    Call { call: &'static str, result: vk::Result },

    #[error(
        "the Vulkan loader lists no device; install a driver (e.g. `apt install mesa-vulkan-drivers` \
         for lavapipe) or check VK_ICD_FILENAMES / VK_DRIVER_FILES"
    )]
    NoDevice,

    #[error("no Vulkan device supports Vulkan 1.1 compute; found: {devices}")]
    NoSuitableDevice { devices: String },

    #[error("RLX_VULKAN_DEVICE={value} is not the index of a usable device; devices: {devices}")]
    BadDeviceIndex { value: String, devices: String },
}

impl From<VulkanError> for BackendError {
    fn from(e: VulkanError) -> Self {
        BackendError::DeviceUnavailable { device: "vulkan", reason: e.to_string() }
    }
}

/// Maps a failed Vulkan call to the rlx error it means. `scope` says what was being done
/// ("allocating buffer x", "submitting program y"); `requested` is the byte count of an
/// allocation, 0 otherwise.
pub(crate) fn vk_error(
    device: &str,
    scope: impl Into<String>,
    requested: u64,
    r: vk::Result,
) -> BackendError {
    let failure = match r {
        vk::Result::ERROR_OUT_OF_HOST_MEMORY
        | vk::Result::ERROR_OUT_OF_DEVICE_MEMORY
        | vk::Result::ERROR_OUT_OF_POOL_MEMORY => Failure::OutOfMemory,
        vk::Result::ERROR_DEVICE_LOST => Failure::DeviceLost(r.to_string()),
        _ => Failure::Other(r.to_string()),
    };
    failure.error(device, scope, requested)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_memory_results_map_to_out_of_memory() {
        for r in [
            vk::Result::ERROR_OUT_OF_HOST_MEMORY,
            vk::Result::ERROR_OUT_OF_DEVICE_MEMORY,
            vk::Result::ERROR_OUT_OF_POOL_MEMORY,
        ] {
            let e = vk_error("gpu0", "allocating x", 4096, r);
            assert!(
                matches!(&e, BackendError::OutOfMemory { device, scope, requested: 4096 }
                    if device == "gpu0" && scope == "allocating x"),
                "{e}"
            );
        }
    }

    #[test]
    fn device_lost_and_others() {
        let e = vk_error("gpu0", "submitting p", 0, vk::Result::ERROR_DEVICE_LOST);
        assert!(matches!(e, BackendError::DeviceLost { .. }), "{e}");
        let e = vk_error("gpu0", "creating pipeline k", 0, vk::Result::ERROR_INITIALIZATION_FAILED);
        assert!(matches!(&e, BackendError::Driver { scope, .. } if scope == "creating pipeline k"), "{e}");
        assert!(e.to_string().contains("creating pipeline k failed"), "{e}");
    }

    #[test]
    fn unavailability_says_how_to_fix_it() {
        let e: BackendError =
            VulkanError::LoaderMissing { library: LOADER_LIBRARY, reason: "not found".into() }.into();
        let text = e.to_string();
        assert!(text.contains(LOADER_LIBRARY) && text.contains("apt install"), "{text}");
        assert!(matches!(e, BackendError::DeviceUnavailable { device: "vulkan", .. }));
    }
}
