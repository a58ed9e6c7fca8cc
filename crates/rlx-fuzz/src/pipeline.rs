//! The graphs that verify, through what a compile does with them: `rlx_opt::optimize` for the
//! CPU's capabilities (with constant folding on the CPU reference, as the runtime does) and for
//! GPU capabilities, the memory planner on each result, and `rlx_gpu::lower` of the GPU graph
//! into a validated `Schedule` (no device needed).

use crate::graph_gen;
use crate::reader::Reader;
use rlx_backend::{Backend, Capabilities, KernelOptions, MatmulKernel, Precision};
use rlx_gpu::GpuLimits;
use rlx_ir::{Graph, Op, Tensor, TensorType};
use rlx_opt::{memory, PassOptions};
use std::sync::OnceLock;

/// Constant folding evaluates ops on the CPU reference; it runs only on graphs whose every value
/// has at most this many elements, so one execution stays fast.
const FOLD_MAX_ELEMS: usize = 4096;

fn cpu_caps() -> &'static Capabilities {
    static CAPS: OnceLock<Capabilities> = OnceLock::new();
    CAPS.get_or_init(|| rlx_cpu::CpuBackend::new().capabilities().clone())
}

/// Conv2d and Pool2d decompose for GPU capabilities into one tap per kernel position, and the
/// memory planner is O(values × live values): a 64×64 kernel takes seconds to plan (the open
/// finding in docs/reliability.md). Graphs with a kernel of more taps skip the GPU path, so the
/// target keeps to its 10 s budget per input and keeps finding other bugs.
const MAX_GPU_TAPS: usize = 256;

/// Kernel positions of the largest conv2d or pool2d of `g`.
fn max_taps(g: &Graph) -> usize {
    let taps = |n: &rlx_ir::Node| match &n.op {
        Op::Pool2d { kernel, .. } => kernel[0].saturating_mul(kernel[1]),
        Op::Conv2d { .. } => n
            .inputs
            .get(1)
            .and_then(|&w| g.ty(w).ok())
            .map_or(0, |t| t.shape.dims().iter().skip(2).fold(1usize, |a, &d| a.saturating_mul(d))),
        _ => 0,
    };
    g.nodes().iter().map(taps).max().unwrap_or(0)
}

/// The device limits one input lowers for: lavapipe, an H200, or lavapipe without f16.
pub fn limits(choice: u8) -> GpuLimits {
    match choice % 3 {
        0 => GpuLimits::lavapipe(),
        1 => GpuLimits::hopper(),
        _ => GpuLimits { shader_f16: false, ..GpuLimits::lavapipe() },
    }
}

/// Kernel options from one byte: every precision, and sometimes a forced matmul rung.
pub fn kernel_options(choice: u8) -> KernelOptions {
    let precision = Precision::ALL.get(usize::from(choice % 3)).copied().unwrap_or_default();
    let matmul = MatmulKernel::ALL.get(usize::from(choice / 3 % 4)).copied();
    KernelOptions { precision, matmul }
}

/// Alignment for the memory planner: a power of two up to 256, or sometimes one that is not.
fn alignment(choice: u8) -> usize {
    match choice % 11 {
        10 => 48,
        k => 1 << k,
    }
}

/// Optimizes, plans and lowers the graph decoded from the input after its first 3 bytes
/// (passes, device, kernel options).
pub fn run(data: &[u8]) {
    let mut r = Reader::new(data);
    let (passes, device, kernel) = (r.u8(), r.u8(), r.u8());
    let Some(g) = graph_gen::build(r.rest()) else { return };
    if rlx_ir::verify(&g).is_err() {
        return;
    }
    let opts = PassOptions { fold_constants: passes & 1 == 1, fuse: passes & 2 == 2 };
    let small = g.nodes().iter().all(|n| n.ty.shape.numel() <= FOLD_MAX_ELEMS);
    let fold = |op: &Op, inputs: &[&Tensor], out: &TensorType| rlx_cpu::eval(op, inputs, out).ok();
    let fold: Option<rlx_opt::FoldFn<'_>> = if small { Some(&fold) } else { None };
    if let Ok(cpu) = rlx_opt::optimize(&g, cpu_caps(), &opts, fold) {
        let _ = memory::plan(&cpu, alignment(passes >> 2));
    }
    if max_taps(&g) > MAX_GPU_TAPS {
        return;
    }
    let limits = limits(device);
    let caps = rlx_gpu::capabilities("fuzz gpu", &limits);
    if let Ok(gpu) = rlx_opt::optimize(&g, &caps, &opts, fold) {
        let _ = memory::plan(&gpu, alignment(passes >> 4));
        if let Ok(schedule) = rlx_gpu::lower(&gpu, &limits, &kernel_options(kernel)) {
            let _ = schedule.barriers();
            let _ = schedule.total_bytes();
        }
    }
}

/// The graph of `data` lowered for lavapipe's limits, when it gets that far (the base schedule
/// the schedule target mutates).
pub fn lowered(data: &[u8], limits: &GpuLimits) -> Option<rlx_gpu::Schedule> {
    let g: Graph = graph_gen::build(data)?;
    if max_taps(&g) > MAX_GPU_TAPS {
        return None;
    }
    let caps = rlx_gpu::capabilities("fuzz gpu", limits);
    let gpu = rlx_opt::optimize(&g, &caps, &PassOptions::default(), None).ok()?;
    rlx_gpu::lower(&gpu, limits, &KernelOptions::default()).ok().map(|s| s.into_inner())
}
