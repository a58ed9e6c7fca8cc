//! Injected faults (issue 12 §4, docs/reliability.md): each comes back as a typed error naming
//! the device and what was being done, later calls on the faulty session fail cleanly instead of
//! hanging, and the process opens a new `Session` that runs.

// Tests unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rlx_backend::BackendError;
use rlx_ir::{DType, Graph};
use rlx_runtime::{Device, Error, Session};
use rlx_vulkan::{Context, ContextOptions, PipelineCacheDir, VulkanBackend};
use rlx_wgpu::{WgpuBackend, WgpuOptions};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// y = x · 2 + 1 on f32[4].
fn small() -> Graph {
    let mut g = Graph::new("small");
    let x = g.input("x", &[4], DType::F32).unwrap();
    let two = g.scalar(2.0).unwrap();
    let one = g.scalar(1.0).unwrap();
    let y = g.mul(x, two).unwrap();
    let y = g.add(y, one).unwrap();
    g.set_outputs(&[y]).unwrap();
    g
}

/// Runs [`small`] on `session` and checks the numbers.
fn runs(session: &Session) {
    let mut exe = session.compile(&small()).unwrap();
    let out = exe.run(&[("x", &[1.0f32, 2.0, 3.0, 4.0])]).unwrap();
    assert_eq!(out[0].as_f32().unwrap(), &[3.0, 5.0, 7.0, 9.0]);
}

/// A Vulkan context without the pipeline cache on disk, or `None` after a loud skip.
fn vulkan(memory_budget: Option<u64>) -> Option<Context> {
    let options =
        ContextOptions { pipeline_cache: PipelineCacheDir::Off, memory_budget, ..Default::default() };
    match Context::with_options(options) {
        Ok(c) => Some(c),
        Err(e) => {
            rlx_test_support::no_gpu("Vulkan device", &e.to_string());
            None
        }
    }
}

/// Two params of 24 MiB each (each under lavapipe's 128 MiB binding limit) and their sum.
fn two_big_params() -> Graph {
    let n = 6 << 20;
    let mut g = Graph::new("big");
    let a = g.param("a", &[n], DType::F32).unwrap();
    let b = g.param("b", &[n], DType::F32).unwrap();
    let y = g.add(a, b).unwrap();
    g.set_outputs(&[y]).unwrap();
    g
}

/// Allocation past the device's memory: with the context's heaps capped at 32 MiB the graph's
/// 72 MiB of buffers are refused with `OutOfMemory` before the driver is asked (the same check
/// holds every heap to its real size); nothing stays allocated, and the session, as well as a
/// new one, still runs what fits.
#[test]
fn vulkan_allocation_past_the_memory_is_out_of_memory() {
    let Some(ctx) = vulkan(Some(32 << 20)) else { return };
    let backend = VulkanBackend::with_context(ctx);
    let ctx = backend.context().clone();
    let session = Session::with_backend(Device::Vulkan, Box::new(backend));
    let err = session.compile(&two_big_params()).unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(&err, Error::Backend(BackendError::OutOfMemory { requested, .. }) if *requested >= 24 << 20),
        "{err:?}"
    );
    assert!(text.contains("out of memory") && text.contains("heap"), "{text}");
    // The failed compile returned everything it had allocated.
    let heaps = ctx.info().memory_heaps.len();
    assert!((0..heaps).all(|h| ctx.heap_bytes_in_use(h) < 1 << 20), "buffers leaked");
    runs(&session);
    runs(&Session::new(Device::Vulkan).unwrap());
}

/// The same graph on a device-sized budget compiles: the cap is what refused it above.
#[test]
fn vulkan_the_same_graph_fits_the_real_heaps() {
    let Some(ctx) = vulkan(None) else { return };
    let session = Session::with_backend(Device::Vulkan, Box::new(VulkanBackend::with_context(ctx)));
    session.compile(&two_big_params()).unwrap();
}

/// Device loss, simulated at the driver boundary (the next vkQueueSubmit returns
/// VK_ERROR_DEVICE_LOST): the run is `DeviceLost`, every later run and compile on the session is
/// `DeviceLost` at once without reaching the driver, and a new session runs.
#[test]
fn vulkan_device_loss_is_device_lost_then_a_new_session_runs() {
    let Some(ctx) = vulkan(None) else { return };
    let backend = VulkanBackend::with_context(ctx);
    let ctx: Arc<Context> = backend.context().clone();
    let session = Session::with_backend(Device::Vulkan, Box::new(backend));
    let mut exe = session.compile(&small()).unwrap();
    let x = [1.0f32, 2.0, 3.0, 4.0];
    exe.run(&[("x", &x)]).unwrap();
    ctx.simulate_device_loss();
    let err = exe.run(&[("x", &x)]).unwrap_err();
    assert!(matches!(&err, Error::Backend(BackendError::DeviceLost { .. })), "{err:?}");
    assert!(err.to_string().contains("device lost during running"), "{err}");
    assert!(ctx.is_lost());
    let start = Instant::now();
    for _ in 0..3 {
        let err = exe.run(&[("x", &x)]).unwrap_err();
        assert!(err.to_string().contains("open a new Session"), "{err}");
    }
    let err = session.compile(&small()).unwrap_err();
    assert!(matches!(&err, Error::Backend(BackendError::DeviceLost { .. })), "{err:?}");
    assert!(start.elapsed() < Duration::from_secs(5), "calls on a lost device must not wait");
    drop((exe, session));
    runs(&Session::new(Device::Vulkan).unwrap());
}

/// Device loss through wgpu: the device is destroyed (`wgpu::Device::destroy`, which fires the
/// device-lost callback); runs and compiles on the session are `DeviceLost`, and a new session
/// runs.
#[test]
fn wgpu_device_loss_is_device_lost_then_a_new_session_runs() {
    let options = WgpuOptions { pipeline_cache: PipelineCacheDir::Off, ..WgpuOptions::from_env().unwrap() };
    let backend = match WgpuBackend::with_options(options) {
        Ok(b) => b,
        Err(e) => return rlx_test_support::no_gpu("wgpu adapter", &e.to_string()),
    };
    let trigger = backend.device_loss_trigger();
    let session = Session::with_backend(Device::Gpu, Box::new(backend));
    let mut exe = session.compile(&small()).unwrap();
    let x = [1.0f32, 2.0, 3.0, 4.0];
    exe.run(&[("x", &x)]).unwrap();
    trigger.destroy_device();
    let start = Instant::now();
    for _ in 0..3 {
        let err = exe.run(&[("x", &x)]).unwrap_err();
        assert!(matches!(&err, Error::Backend(BackendError::DeviceLost { .. })), "{err:?}");
        assert!(err.to_string().contains("Destroyed"), "{err}");
    }
    let err = session.compile(&small()).unwrap_err();
    assert!(matches!(&err, Error::Backend(BackendError::DeviceLost { .. })), "{err:?}");
    assert!(start.elapsed() < Duration::from_secs(5), "calls on a lost device must not wait");
    drop((exe, session));
    runs(&Session::new(Device::Gpu).unwrap());
}
