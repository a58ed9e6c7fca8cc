//! rlx-vulkan: the native Vulkan driver of rlx.
//!
//! Contract:
//! - The loader is opened at run time (`ash::Entry::load`): the crate builds and links on a
//!   machine without any Vulkan SDK, and a machine without a loader or a device gets a
//!   [`VulkanError`] that says what to install, never a crash.
//! - [`probe`] describes every device once ([`AdapterInfo`]: type, driver, API version, limits,
//!   memory heaps, subgroup / f16 / cooperative-matrix support); [`pick`] takes a discrete GPU
//!   first, or the device `RLX_VULKAN_DEVICE=index` names.
//! - Kernels are rlx-gpu's WGSL, compiled to SPIR-V by `build.rs` with naga (WGSL in → validate
//!   → SPIR-V out) and embedded ([`spirv`]); nothing is compiled at run time. A WGSL error
//!   fails the build with file, line, column and message.
//! - A [`Context`] is one logical device with one compute queue. Buffers ([`GpuBuffer`]) live
//!   in DEVICE_LOCAL memory on discrete GPUs (host I/O through a reused staging buffer) and in
//!   host-visible memory on unified-memory devices such as lavapipe ([`MemoryStrategy`]).
//!   Pipelines are cached per context by [`KernelKey`]. Every Vulkan object is destroyed in
//!   its own `Drop`, and the device only after the last of them.
//! - A [`Program`] is a list of [`Step`]s (kernel, buffer slices, params, workgroup counts)
//!   validated against the kernel and the device limits, recorded once into a command buffer
//!   with barriers only between dependent steps, and replayed by [`Program::run`]: one submit,
//!   one wait.
//! - Threads: contexts, buffers and pipelines are Send + Sync, programs Send. Creating and
//!   destroying instances and devices is serialised process-wide, because NVIDIA's driver
//!   crashes when threads do it at once (seen on the H100 with parallel tests).
//! - Vulkan failures come back as [`rlx_backend::BackendError`]: `OutOfMemory` for
//!   ERROR_OUT_OF_*_MEMORY, `DeviceLost`, `LimitExceeded` for a binding, allocation or
//!   dispatch past a device limit, `Driver` (naming the scope) for anything else. No path
//!   panics.
//! - [`VulkanBackend`] implements `rlx_backend::Backend`: capabilities from the probe (every
//!   op but those rlx-opt decomposes for GPUs; f32, i32, u32 and bool stored as 32-bit words),
//!   `compile` = rlx-gpu's lowering → [`VulkanExecutable`] (arena, leaf and scratch buffers,
//!   constants uploaded, one recorded program). A tensor past one binding is a `LimitExceeded`
//!   naming the node at compile time. `run` uploads inputs, replays the program and reads the
//!   outputs back, reporting the time of each part (`last_profile`).
//!
//! Left to other crates: kernel sources, variants, params and workgroup counts come from
//! rlx-gpu; what to run (decomposition, fusion, memory planning) from rlx-opt.
//!
//! Not done yet: the subgroup and cooperative-matrix matmul rungs; the uniform-buffer params path for
//! devices with less than 128 bytes of push constants (Vulkan guarantees 128).

mod backend;
mod buffer;
mod context;
mod convert;
mod dispatch;
mod error;
mod executable;
mod pipeline;
mod probe;
mod spirv;

pub use backend::{gpu_capabilities, gpu_limits, VulkanBackend};
pub use buffer::{BufferRole, GpuBuffer};
pub use context::{Context, ContextOptions, MemoryStrategy};
pub use convert::{tensor_from_words, tensor_to_words};
pub use dispatch::{BufferSlice, Program, Step};
pub use error::{VulkanError, LOADER_LIBRARY};
pub use executable::VulkanExecutable;
pub use pipeline::Pipeline;
pub use probe::{
    pick, pick_with, probe, AdapterFeatures, AdapterInfo, AdapterLimits, AdapterType, MemoryHeap,
};
pub use rlx_gpu::KernelKey;
pub use spirv::spirv;

#[cfg(test)]
mod tests {
    use super::*;

    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}

    #[test]
    fn handles_cross_threads() {
        // Executables (rlx-backend) must be Send; contexts and buffers are shared between them.
        send_sync::<Context>();
        send_sync::<GpuBuffer>();
        send_sync::<Pipeline>();
        send::<Program>();
        send::<Step>();
        send_sync::<VulkanBackend>();
        send::<VulkanExecutable>();
    }
}
