//! Executables on every available Vulkan device: one recorded command buffer replayed per run,
//! barriers only between dependent steps, host I/O, the pipeline cache, lifetimes.

// Tests and their helpers may unwrap, expect and panic: a failure is the test's verdict.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use rlx_backend::{Backend, BackendError};
use rlx_gpu::KernelKey;
use rlx_ir::{DType, Graph, NodeId, Tensor};
use rlx_opt::PassOptions;
use rlx_vulkan::{MemoryStrategy, VulkanBackend, VulkanExecutable};
use std::sync::Arc;
use support::*;

/// exp(x) − x and x², unfused: exp and neg are independent, sub reads both, square reads x.
fn graph(n: usize) -> Graph {
    let mut g = Graph::new("independent");
    let x = g.input("x", &[n], DType::F32).unwrap();
    let e = g.exp(x).unwrap();
    let m = g.neg(x).unwrap();
    let w = g.add(e, m).unwrap();
    let u = g.square(x).unwrap();
    g.set_outputs(&[w, u]).unwrap();
    g
}

#[test]
fn one_recording_replays_and_only_dependent_steps_get_barriers() {
    let n = 1037;
    for ctx in contexts() {
        let what = tag(&ctx);
        let backend = VulkanBackend::with_context(ctx);
        let g = rlx_opt::optimize(&graph(n), backend.capabilities(), &PassOptions::none(), None).unwrap();
        let schedule = rlx_gpu::lower(&g, backend.limits(), &rlx_backend::KernelOptions::default()).unwrap();
        let mut exe = VulkanExecutable::build(Arc::clone(backend.context()), &schedule).unwrap();
        assert_eq!(exe.dispatches(), 4, "{what}");
        // exp and neg run together; add waits for both. square reads only x but reuses a
        // pool add read, so it may wait for add: at most two barriers, never three.
        assert!((1..=2).contains(&exe.barriers()), "{what}: {} barriers", exe.barriers());
        assert_eq!(schedule.barriers().iter().filter(|&&b| b).count(), exe.barriers());

        for round in 0..3u64 {
            let xv = data(n, 10 + round, -2.0, 2.0);
            let x = Tensor::from_f32([n], xv.clone()).unwrap();
            let out = rlx_backend::Executable::run(&mut exe, &[(NodeId(0), &x)]).unwrap();
            let w_ref: Vec<f64> = xv.iter().map(|&v| (v as f64).exp() - v as f64).collect();
            let u_ref: Vec<f64> = xv.iter().map(|&v| (v as f64) * (v as f64)).collect();
            assert_close(&format!("exp(x) - x, round {round}, {what}"), out[0].as_f32().unwrap(), &w_ref);
            assert_close(&format!("x², round {round}, {what}"), out[1].as_f32().unwrap(), &u_ref);
        }
    }
}

#[test]
fn host_io_at_offsets_and_bounds() {
    for ctx in contexts() {
        let buf = ctx.create_buffer("io", 64).unwrap();
        let staged = ctx.memory_strategy() == MemoryStrategy::Discrete;
        assert_eq!(buf.is_host_visible(), !staged, "{}", tag(&ctx));
        let bytes: Vec<u8> = (0..64).collect();
        ctx.write(&buf, 0, &bytes).unwrap();
        ctx.write(&buf, 16, &[200, 201, 202]).unwrap();
        let back = ctx.read(&buf, 14, 6).unwrap();
        assert_eq!(back, [14, 15, 200, 201, 202, 19]);
        assert!(ctx.read(&buf, 0, 0).unwrap().is_empty());
        let e = ctx.write(&buf, 60, &[0; 8]).unwrap_err();
        assert!(matches!(e, BackendError::LimitExceeded { requested: 68, limit: 64, .. }), "{e}");
        let e = ctx.read(&buf, u64::MAX, 2).unwrap_err();
        assert!(matches!(e, BackendError::LimitExceeded { .. }), "{e}");
        // Large enough to need the staging buffer to grow past its first size.
        let big: Vec<u8> = data(300_000, 5, 0.0, 255.0).into_iter().map(|v| v as u8).collect();
        let b = ctx.buffer_from_bytes("big", &big).unwrap();
        assert_eq!(ctx.read(&b, 0, big.len() as u64).unwrap(), big);
        let other = rlx_vulkan::Context::with_adapter(ctx.info().index).unwrap();
        assert!(other.read(&b, 0, 4).is_err(), "a buffer of another context is refused");
    }
}

#[test]
fn pipelines_are_built_once_per_context() {
    let Some(ctx) = contexts().into_iter().next() else { return };
    assert_eq!(ctx.cached_pipelines(), 0);
    let a = ctx.pipeline(KernelKey::MATMUL_TILED_F32).unwrap();
    let b = ctx.pipeline(KernelKey::MATMUL_TILED_F32).unwrap();
    assert!(Arc::ptr_eq(&a, &b));
    ctx.pipeline(KernelKey::SOFTMAX_ROW_F32).unwrap();
    assert_eq!(ctx.cached_pipelines(), 2);
    assert_eq!(a.variant().name, "matmul_tiled_f32");
    // Every variant the device can run builds into a pipeline; the tensor-core ones only where
    // it has cooperative matrices (the lowering never asks for them elsewhere).
    let coop = rlx_vulkan::gpu_limits(ctx.info()).cooperative_matrix;
    let runnable: Vec<_> =
        rlx_gpu::keys().into_iter().filter(|k| coop || !k.needs_cooperative_matrix()).collect();
    for &key in &runnable {
        ctx.pipeline(key).unwrap_or_else(|e| panic!("{key:?}: {e}"));
    }
    assert_eq!(ctx.cached_pipelines(), runnable.len());
}

#[test]
fn an_executable_outlives_its_backend() {
    for ctx in contexts() {
        let backend = VulkanBackend::with_context(ctx);
        let g = rlx_opt::optimize(&graph(64), backend.capabilities(), &PassOptions::none(), None).unwrap();
        let mut exe = backend.compile(&g, &Default::default()).unwrap();
        drop(backend);
        // The executable holds the device and its buffers: running it is still valid.
        let xv = data(64, 6, -1.0, 1.0);
        let out = exe.run(&[(NodeId(0), &Tensor::from_f32([64], xv.clone()).unwrap())]).unwrap();
        let u_ref: Vec<f64> = xv.iter().map(|&v| (v as f64) * (v as f64)).collect();
        assert_close("x² after the backend is gone", out[1].as_f32().unwrap(), &u_ref);
    }
}

#[test]
fn a_wrong_input_is_an_error_not_a_crash() {
    for ctx in contexts() {
        let backend = VulkanBackend::with_context(ctx);
        let g = rlx_opt::optimize(&graph(8), backend.capabilities(), &PassOptions::none(), None).unwrap();
        let mut exe = backend.compile(&g, &Default::default()).unwrap();
        let e = exe.run(&[]).unwrap_err();
        assert!(e.to_string().contains("was not given"), "{e}");
        let short = Tensor::from_f32([4], vec![0.0; 4]).unwrap();
        let e = exe.run(&[(NodeId(0), &short)]).unwrap_err();
        assert!(e.to_string().contains("f32[4]") || e.to_string().contains("[4]"), "{e}");
    }
}

/// Executables built at once from several threads on one context. They share the context's
/// pipelines, so recording must not touch a pipeline in any call that needs it externally
/// synchronised: each recording once renamed every pipeline it bound (vkSetDebugUtilsObjectNameEXT),
/// and two threads renaming one pipeline freed its old name twice (a glibc abort in the soak
/// test, one run in twelve). A chain of one kernel makes every step of every build bind the same
/// pipeline, so that race aborted nearly every run of this test.
#[test]
fn executables_built_from_several_threads_share_the_pipelines_safely() {
    const THREADS: usize = 4;
    const BUILDS: usize = 100;
    const STEPS: usize = 48;
    let n = 64;
    for ctx in contexts() {
        let what = tag(&ctx);
        let backend = VulkanBackend::with_context(ctx);
        let mut g = Graph::new("neg_chain");
        let x = g.input("x", &[n], DType::F32).unwrap();
        let mut y = x;
        for _ in 0..STEPS {
            y = g.neg(y).unwrap();
        }
        g.set_outputs(&[y]).unwrap();
        let g = rlx_opt::optimize(&g, backend.capabilities(), &PassOptions::none(), None).unwrap();
        let schedule = rlx_gpu::lower(&g, backend.limits(), &rlx_backend::KernelOptions::default()).unwrap();
        let build = || VulkanExecutable::build(Arc::clone(backend.context()), &schedule).unwrap();
        assert_eq!(build().dispatches(), STEPS, "{what}: one launch per step");
        std::thread::scope(|scope| {
            for _ in 0..THREADS {
                scope.spawn(|| {
                    for _ in 0..BUILDS {
                        drop(build());
                    }
                });
            }
        });
        // An even number of negations gives x back.
        let xv = data(n, 7, -1.0, 1.0);
        let x = Tensor::from_f32([n], xv.clone()).unwrap();
        let out = rlx_backend::Executable::run(&mut build(), &[(NodeId(0), &x)]).unwrap();
        assert_eq!(out[0].as_f32().unwrap(), xv.as_slice(), "{what}");
    }
}
