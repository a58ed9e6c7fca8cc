//! Helpers shared by the integration tests: [`device_tests!`], one `#[test]` per device.

/// Three tests, on the CPU, native Vulkan and wgpu, each calling `$check(device)`:
/// `device_tests!(check => on_cpu, on_vulkan, on_wgpu);`.
macro_rules! device_tests {
    ($check:path => $cpu:ident, $vulkan:ident, $wgpu:ident) => {
        #[test]
        fn $cpu() {
            $check(rlx_models::Device::Cpu);
        }

        #[test]
        fn $vulkan() {
            $check(rlx_models::Device::Vulkan);
        }

        #[test]
        fn $wgpu() {
            $check(rlx_models::Device::Gpu);
        }
    };
}
pub(crate) use device_tests;
