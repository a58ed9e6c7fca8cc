//! The devices a test runs on: the CPU always, each GPU device where it opens. A GPU device
//! that cannot be opened fails the test under `RLX_REQUIRE_GPU=1` (CI on lavapipe sets it) and
//! is skipped loudly otherwise.

use crate::require::{gpu_required, skip};
use rlx_runtime::{Device, Error, Session};
use std::fmt::Display;

/// The GPU devices every device-parametrised test tries, after the CPU.
pub const GPU_DEVICES: [Device; 2] = [Device::Vulkan, Device::Gpu];

/// `device` could not be used for `what` because of `why`: a panic (test failure) for the CPU
/// or under `RLX_REQUIRE_GPU=1`, else a loud skip.
pub fn unavailable(device: Device, what: &str, why: &dyn Display) {
    if device == Device::Cpu {
        panic!("{what}: the CPU device is unavailable: {why}");
    }
    if gpu_required() {
        panic!("{what}: RLX_REQUIRE_GPU=1 but device {device} is unavailable: {why}");
    }
    skip(&format!(
        "{what} on {device}: the device is unavailable ({why}); set RLX_REQUIRE_GPU=1 to make this a failure"
    ));
}

/// A session on `device`, or `None` after [`unavailable`] when the device cannot be opened.
/// Any other error opening it panics.
pub fn open(device: Device, what: &str) -> Option<Session> {
    match Session::new(device) {
        Ok(s) => Some(s),
        Err(e @ Error::DeviceUnavailable { .. }) => {
            unavailable(device, what, &e);
            None
        }
        Err(e) => panic!("{what}: opening {device}: {e}"),
    }
}

/// A session on each of `devices` that opens (see [`open`]).
pub fn sessions(devices: &[Device], what: &str) -> Vec<(Device, Session)> {
    devices.iter().filter_map(|&d| open(d, what).map(|s| (d, s))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_always_opens_and_is_first_where_asked_first() {
        let s = sessions(&[Device::Cpu], "test-support");
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].0, Device::Cpu);
    }

    #[test]
    #[should_panic(expected = "the CPU device is unavailable")]
    fn an_unavailable_cpu_is_always_a_failure() {
        unavailable(Device::Cpu, "test-support", &"no reason");
    }
}
