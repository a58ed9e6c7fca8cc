//! Shared by the integration tests: device discovery with the skip/require policy, data,
//! error measure, one-kernel runners and plain CPU references (f64 loops).
#![allow(dead_code)]

use rlx_backend::BackendError;
use rlx_gpu::{BinaryParams, KernelKey, MatmulParams, SoftmaxParams, UnaryParams};
use rlx_vulkan::{BufferSlice, Context, ContextOptions, MemoryStrategy, Step};
use std::io::Write as _;

/// True when a missing device must fail the test instead of skipping it.
pub fn gpu_required() -> bool {
    std::env::var("RLX_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// Reports a missing device: a failure under RLX_REQUIRE_GPU=1, a loud skip otherwise.
pub fn no_device(reason: &str) {
    assert!(!gpu_required(), "RLX_REQUIRE_GPU=1 but no Vulkan device: {reason}");
    // Straight to the stderr handle: the test harness captures eprintln! of passing tests.
    let _ = writeln!(std::io::stderr(), "SKIPPED: no Vulkan device: {reason}");
}

/// Every usable device, plus — on a unified-memory device — the same device forced onto the
/// discrete-GPU memory strategy, so the staging paths run on lavapipe too. Empty (after a
/// loud skip) when there is no device.
pub fn contexts() -> Vec<Context> {
    let adapters = match rlx_vulkan::probe() {
        Ok(a) => a,
        Err(e) => {
            no_device(&e.to_string());
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for a in adapters.iter().filter(|a| a.is_usable()) {
        let ctx = Context::with_adapter(a.index).unwrap_or_else(|e| panic!("opening {}: {e}", a.summary()));
        let unified = ctx.memory_strategy() == MemoryStrategy::Unified;
        out.push(ctx);
        if unified {
            let forced = ContextOptions { adapter: Some(a.index), memory: Some(MemoryStrategy::Discrete) };
            out.push(
                Context::with_options(forced).unwrap_or_else(|e| panic!("opening {}: {e}", a.summary())),
            );
        }
    }
    if out.is_empty() {
        no_device(&format!("no usable adapter among {} listed", adapters.len()));
    }
    out
}

/// Names a context in assertion messages.
pub fn tag(ctx: &Context) -> String {
    format!("{} ({:?})", ctx.info().name, ctx.memory_strategy())
}

/// Deterministic values in [lo, hi) (xorshift; no dependency).
pub fn data(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let u = (s >> 40) as f32 / (1u64 << 24) as f32;
            lo + (hi - lo) * u
        })
        .collect()
}

/// ‖out − ref‖₂ / ‖ref‖₂ over the finite elements (absolute ‖out − ref‖₂ when the reference
/// is all zeros). NaN where one side has a NaN the other lacks, infinite where one side has an
/// infinity the other lacks: both fail any bound.
pub fn rel_err(out: &[f32], reference: &[f64]) -> f64 {
    assert_eq!(out.len(), reference.len(), "length");
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (&o, &r) in out.iter().zip(reference) {
        let o = o as f64;
        if o.is_nan() || r.is_nan() {
            if o.is_nan() != r.is_nan() {
                return f64::NAN;
            }
            continue;
        }
        if !o.is_finite() || !r.is_finite() {
            if o != r {
                return f64::INFINITY;
            }
            continue;
        }
        num += (o - r) * (o - r);
        den += r * r;
    }
    if den == 0.0 {
        num.sqrt()
    } else {
        (num / den).sqrt()
    }
}

/// Asserts the 1e-5 relative bound of DESIGN.md's numerics.
pub fn assert_close(what: &str, out: &[f32], reference: &[f64]) {
    let e = rel_err(out, reference);
    assert!(e <= 1e-5, "{what}: relative error {e:e} > 1e-5");
}

/// f32 values of native-endian bytes (any alignment).
pub fn floats(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn upload(ctx: &Context, label: &str, v: &[f32]) -> std::sync::Arc<rlx_vulkan::GpuBuffer> {
    ctx.buffer_from_bytes(label, bytemuck::cast_slice(v)).unwrap()
}

/// Runs one step on `inputs` and returns the output of `out_len` f32.
pub fn run_one<P: bytemuck::Pod>(
    ctx: &Context,
    key: KernelKey,
    inputs: &[&[f32]],
    out_len: usize,
    params: &P,
    workgroups: [u32; 3],
) -> Result<Vec<f32>, BackendError> {
    let mut bindings: Vec<BufferSlice> = inputs
        .iter()
        .enumerate()
        .map(|(i, v)| BufferSlice::whole(&upload(ctx, &format!("in{i}"), v)))
        .collect();
    let out = ctx.create_buffer("out", (out_len * 4) as u64)?;
    bindings.push(BufferSlice::whole(&out));
    let mut program = ctx.record(vec![Step::new(key, "test", bindings, params, workgroups)])?;
    program.run()?;
    ctx.read_f32(&out)
}

pub fn gpu_binary(
    ctx: &Context,
    op: rlx_ir::BinaryOp,
    a: (&[f32], &[usize]),
    b: (&[f32], &[usize]),
    out_shape: &[usize],
) -> Vec<f32> {
    let (p, grid) = BinaryParams::broadcast(out_shape, a.1, b.1).unwrap();
    let n = out_shape.iter().product();
    run_one(ctx, KernelKey::binary_f32(op), &[a.0, b.0], n, &p, grid).unwrap()
}

pub fn gpu_unary(ctx: &Context, op: rlx_ir::UnaryOp, x: &[f32]) -> Vec<f32> {
    let (p, grid) = UnaryParams::new(x.len()).unwrap();
    run_one(ctx, KernelKey::unary_f32(op), &[x], x.len(), &p, grid).unwrap()
}

pub fn gpu_softmax(ctx: &Context, x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let (p, grid) = SoftmaxParams::new(rows, cols).unwrap();
    run_one(ctx, KernelKey::SoftmaxRowF32, &[x], rows * cols, &p, grid).unwrap()
}

/// Returns the output and its shape.
pub fn gpu_matmul(
    ctx: &Context,
    a: (&[f32], &[usize]),
    b: (&[f32], &[usize]),
    ta: bool,
    tb: bool,
) -> (Vec<f32>, Vec<usize>) {
    let (p, shape, grid) = MatmulParams::from_shapes(a.1, b.1, ta, tb).unwrap();
    let n = shape.iter().product();
    (run_one(ctx, KernelKey::MatmulTiledF32, &[a.0, b.0], n, &p, grid).unwrap(), shape)
}

/// Row-major strides of `shape`.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

/// Index into `shape` (right-aligned, broadcasting) of the output coordinate `coord`.
pub fn broadcast_index(coord: &[usize], shape: &[usize]) -> usize {
    let lead = coord.len() - shape.len();
    let st = strides(shape);
    shape.iter().enumerate().map(|(d, &n)| if n == 1 { 0 } else { coord[lead + d] * st[d] }).sum()
}

/// Coordinates of linear index `i` in `shape`.
pub fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut c = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        c[d] = i % shape[d];
        i /= shape[d];
    }
    c
}

/// CPU reference of a batched matmul with numpy batch broadcasting, in f64.
pub fn cpu_matmul(
    a: (&[f32], &[usize]),
    b: (&[f32], &[usize]),
    ta: bool,
    tb: bool,
) -> (Vec<f64>, Vec<usize>) {
    let (ar, br) = (a.1.len(), b.1.len());
    let (m, k) = if ta { (a.1[ar - 1], a.1[ar - 2]) } else { (a.1[ar - 2], a.1[ar - 1]) };
    let n = if tb { b.1[br - 2] } else { b.1[br - 1] };
    let (ab, bb) = (&a.1[..ar - 2], &b.1[..br - 2]);
    let nb = ab.len().max(bb.len());
    let pad = |x: &[usize]| {
        let mut v = vec![1; nb - x.len()];
        v.extend_from_slice(x);
        v
    };
    let (pa, pb) = (pad(ab), pad(bb));
    let ob: Vec<usize> = pa.iter().zip(&pb).map(|(x, y)| *x.max(y)).collect();
    let batches: usize = ob.iter().product();
    let mut out = Vec::with_capacity(batches * m * n);
    for z in 0..batches {
        let c = unravel(z, &ob);
        let abase = broadcast_index(&c, &pa) * m * k;
        let bbase = broadcast_index(&c, &pb) * k * n;
        for i in 0..m {
            for j in 0..n {
                let mut s = 0.0f64;
                for l in 0..k {
                    let av = if ta { a.0[abase + l * m + i] } else { a.0[abase + i * k + l] };
                    let bv = if tb { b.0[bbase + j * k + l] } else { b.0[bbase + l * n + j] };
                    s += av as f64 * bv as f64;
                }
                out.push(s);
            }
        }
    }
    let mut shape = ob;
    shape.extend([m, n]);
    (out, shape)
}
