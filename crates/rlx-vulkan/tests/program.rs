//! Programs of several steps, barriers, host I/O, the pipeline cache and the errors of
//! recording, on every available Vulkan device.

mod support;

use rlx_backend::BackendError;
use rlx_gpu::{BinaryParams, KernelKey, UnaryParams};
use rlx_ir::{BinaryOp, UnaryOp};
use rlx_vulkan::{BufferSlice, Context, MemoryStrategy, Step};
use std::sync::Arc;
use support::*;

fn unary_step(op: UnaryOp, x: BufferSlice, out: BufferSlice, n: usize) -> Step {
    let (p, grid) = UnaryParams::new(n).unwrap();
    Step::new(KernelKey::unary_f32(op), op.name(), vec![x, out], &p, grid)
}

fn add_step(a: BufferSlice, b: BufferSlice, out: BufferSlice, n: usize) -> Step {
    let (p, grid) = BinaryParams::broadcast(&[n], &[n], &[n]).unwrap();
    Step::new(KernelKey::binary_f32(BinaryOp::Add), "add", vec![a, b, out], &p, grid)
}

fn f32_buffer(ctx: &Context, label: &str, v: &[f32]) -> Arc<rlx_vulkan::GpuBuffer> {
    ctx.buffer_from_bytes(label, bytemuck::cast_slice(v)).unwrap()
}

#[test]
fn only_dependent_steps_get_barriers_and_programs_replay() {
    let n = 1037;
    for ctx in contexts() {
        let x = f32_buffer(&ctx, "x", &data(n, 1, -2.0, 2.0));
        let [y, z, w, u] = ["y", "z", "w", "u"].map(|l| ctx.create_buffer(l, (n * 4) as u64).unwrap());
        let s = BufferSlice::whole;
        let steps = vec![
            unary_step(UnaryOp::Exp, s(&x), s(&y), n),
            unary_step(UnaryOp::Neg, s(&x), s(&z), n),
            // Reads what both steps above wrote: one barrier.
            add_step(s(&y), s(&z), s(&w), n),
            // Reads x only, writes a fresh buffer: no barrier.
            unary_step(UnaryOp::Square, s(&x), s(&u), n),
        ];
        let mut program = ctx.record(steps).unwrap();
        assert_eq!((program.steps(), program.dispatches(), program.barriers()), (4, 4, 1), "{}", tag(&ctx));

        for round in 0..2u64 {
            let xv = data(n, 10 + round, -2.0, 2.0);
            ctx.write(&x, 0, bytemuck::cast_slice(&xv)).unwrap();
            program.run().unwrap();
            let wv = ctx.read_f32(&w).unwrap();
            let uv = ctx.read_f32(&u).unwrap();
            let w_ref: Vec<f64> = xv.iter().map(|&v| (v as f64).exp() - v as f64).collect();
            let u_ref: Vec<f64> = xv.iter().map(|&v| (v as f64) * (v as f64)).collect();
            assert_close(&format!("exp(x) - x, round {round}, {}", tag(&ctx)), &wv, &w_ref);
            assert_close(&format!("x², round {round}, {}", tag(&ctx)), &uv, &u_ref);
        }
    }
}

#[test]
fn write_after_read_needs_a_barrier() {
    let n = 300;
    for ctx in contexts() {
        let xv = data(n, 2, -1.0, 1.0);
        let zv = data(n, 3, -1.0, 1.0);
        let x = f32_buffer(&ctx, "x", &xv);
        let z = f32_buffer(&ctx, "z", &zv);
        let y = ctx.create_buffer("y", (n * 4) as u64).unwrap();
        let s = BufferSlice::whole;
        // The second step overwrites x, which the first reads.
        let steps =
            vec![unary_step(UnaryOp::Exp, s(&x), s(&y), n), unary_step(UnaryOp::Neg, s(&z), s(&x), n)];
        let mut program = ctx.record(steps).unwrap();
        assert_eq!(program.barriers(), 1);
        program.run().unwrap();
        let y_ref: Vec<f64> = xv.iter().map(|&v| (v as f64).exp()).collect();
        assert_close("exp of the old x", &ctx.read_f32(&y).unwrap(), &y_ref);
        let x_now = ctx.read_f32(&x).unwrap();
        assert_eq!(x_now, zv.iter().map(|v| -v).collect::<Vec<_>>());
    }
}

#[test]
fn disjoint_ranges_of_one_pool_buffer_are_independent() {
    let n = 100usize;
    for ctx in contexts() {
        let align = ctx.info().limits.min_storage_buffer_offset_alignment.max(256);
        let region = (n as u64 * 4).div_ceil(align) * align;
        let pool = ctx.create_buffer("pool", region * 4).unwrap();
        let xv = data(n, 4, -1.0, 1.0);
        ctx.write(&pool, 0, bytemuck::cast_slice(&xv)).unwrap();
        let at = |i: u64| BufferSlice { buffer: pool.clone(), offset: i * region, size: n as u64 * 4 };
        let steps = vec![
            unary_step(UnaryOp::Exp, at(0), at(1), n),
            unary_step(UnaryOp::Neg, at(0), at(2), n),
            add_step(at(1), at(2), at(3), n),
        ];
        let mut program = ctx.record(steps).unwrap();
        assert_eq!(program.barriers(), 1, "only the add waits");
        program.run().unwrap();
        let bytes = ctx.read(&pool, 3 * region, n as u64 * 4).unwrap();
        let out = floats(&bytes);
        let reference: Vec<f64> = xv.iter().map(|&v| (v as f64).exp() - v as f64).collect();
        assert_close(&format!("pool sub-ranges on {}", tag(&ctx)), &out, &reference);
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
        let big: Vec<f32> = data(300_000, 5, -1.0, 1.0);
        let b = f32_buffer(&ctx, "big", &big);
        assert_eq!(ctx.read_f32(&b).unwrap(), big);
    }
}

#[test]
fn pipelines_are_built_once_per_context() {
    let Some(ctx) = contexts().into_iter().next() else { return };
    assert_eq!(ctx.cached_pipelines(), 0);
    let a = ctx.pipeline(KernelKey::MatmulTiledF32).unwrap();
    let b = ctx.pipeline(KernelKey::MatmulTiledF32).unwrap();
    assert!(Arc::ptr_eq(&a, &b));
    ctx.pipeline(KernelKey::SoftmaxRowF32).unwrap();
    assert_eq!(ctx.cached_pipelines(), 2);
    assert_eq!(a.variant().name, "matmul_tiled_f32");
    // Every variant of the catalogue builds into a pipeline.
    for key in rlx_gpu::keys() {
        ctx.pipeline(key).unwrap_or_else(|e| panic!("{key:?}: {e}"));
    }
    assert_eq!(ctx.cached_pipelines(), rlx_gpu::keys().len());
}

#[test]
fn recording_rejects_bad_steps_with_clear_errors() {
    for ctx in contexts() {
        let x = ctx.create_buffer("x", 400).unwrap();
        let y = ctx.create_buffer("y", 400).unwrap();
        let s = BufferSlice::whole;
        let good = || unary_step(UnaryOp::Exp, s(&x), s(&y), 100);

        let mut step = good();
        step.bindings.pop();
        let e = ctx.record(vec![step]).err().unwrap();
        assert!(e.to_string().contains("takes 2 bindings, the step has 1"), "{e}");

        let mut step = good();
        step.params.truncate(8);
        let e = ctx.record(vec![step]).err().unwrap();
        assert!(e.to_string().contains("params are 8 bytes"), "{e}");

        let mut step = good();
        step.bindings[1] = BufferSlice { buffer: y.clone(), offset: 0, size: 404 };
        let e = ctx.record(vec![step]).err().unwrap();
        assert!(matches!(e, BackendError::LimitExceeded { requested: 404, limit: 400, .. }), "{e}");

        let mut step = good();
        step.bindings[1] = BufferSlice { buffer: y.clone(), offset: 0, size: 0 };
        let e = ctx.record(vec![step]).err().unwrap();
        assert!(e.to_string().contains("empty range"), "{e}");

        let align = ctx.info().limits.min_storage_buffer_offset_alignment;
        if align > 4 {
            let mut step = good();
            step.bindings[0] = BufferSlice { buffer: x.clone(), offset: 4, size: 396 };
            let e = ctx.record(vec![step]).err().unwrap();
            assert!(e.to_string().contains(&format!("not a multiple of {align}")), "{e}");
        }

        let mut step = good();
        step.workgroups = [u32::MAX, 1, 1];
        let e = ctx.record(vec![step]).err().unwrap();
        assert!(matches!(e, BackendError::LimitExceeded { what: "workgroup count x", .. }), "{e}");
        assert!(e.to_string().contains("exp"), "names the step: {e}");

        let other = Context::with_adapter(ctx.info().index).unwrap();
        let foreign = other.create_buffer("foreign", 400).unwrap();
        let mut step = good();
        step.bindings[0] = s(&foreign);
        let e = ctx.record(vec![step]).err().unwrap();
        assert!(e.to_string().contains("belongs to another context"), "{e}");
        assert!(ctx.read(&foreign, 0, 4).is_err());
    }
}

#[test]
fn empty_steps_launch_nothing() {
    for ctx in contexts() {
        let x = ctx.create_buffer("x", 16).unwrap();
        let y = ctx.create_buffer("y", 16).unwrap();
        let mut step = unary_step(UnaryOp::Exp, BufferSlice::whole(&x), BufferSlice::whole(&y), 4);
        step.workgroups = [0, 1, 1];
        let mut program = ctx.record(vec![step]).unwrap();
        assert_eq!((program.steps(), program.dispatches(), program.barriers()), (1, 0, 0));
        program.run().unwrap();
        let empty = ctx.record(Vec::new()).unwrap();
        assert_eq!(empty.steps(), 0);
    }
}

#[test]
fn a_program_outlives_its_context_and_buffers() {
    for ctx in contexts() {
        let xv = data(64, 6, -1.0, 1.0);
        let x = f32_buffer(&ctx, "x", &xv);
        let y = ctx.create_buffer("y", 256).unwrap();
        let mut program = ctx
            .record(vec![unary_step(UnaryOp::Abs, BufferSlice::whole(&x), BufferSlice::whole(&y), 64)])
            .unwrap();
        drop((x, ctx));
        // The program holds the device and its buffers: running it is still valid.
        program.run().unwrap();
        assert_eq!(Arc::strong_count(&y), 2, "the test's handle and the program's");
        drop(program);
        assert_eq!(Arc::strong_count(&y), 1);
        drop(y);
    }
}
