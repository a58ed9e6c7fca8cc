//! Lowering of the recurrences of `rlx_ir::ssm` onto the ssm family's kernels.
//!
//! - SelectiveScan: three launches (chunk scans from zero, carries across chunks, chunk
//!   rescans writing y; `ssm_scan_chunk.wgsl` has the design) through two scratch buffers
//!   (chunk end states and Σ δ per chunk). The last-state output is the carry launch's result,
//!   so a node asking for it runs only the first two launches. The chunk length is picked by
//!   [`scan_chunk`] so that a short batch still fills a large GPU.
//! - GatedDeltaRule: one launch (one workgroup per batch, head and block of state columns).
//! - An empty operand with a non-empty output (N = 0 for y, L = 0 for the last state) means
//!   an empty sum or no step at all: every output is 0, written by a fill.

use super::shape::fill_step;
use super::{LowerCtx, Site};
use crate::catalog::ssm::{DeltaRuleParams, ScanParams, SsmKernel};
use crate::schedule::{Dispatch, Operand};
use crate::{GpuError, KernelKey};
use rlx_ir::{Op, ScanOutput};

const KERNEL: &str = "ssm_scan";

/// Invocations (one per channel and chunk) below which the chunks are made shorter: a few
/// waves of an H200 (132 SMs × 2048 resident invocations ≈ 270 k).
const TARGET_INVOCATIONS: u64 = 1 << 18;

/// The chunk length for `channels` = B · D sequences of length `l`: the longest of 256, 128,
/// 64, 32, 16 that still gives [`TARGET_INVOCATIONS`] invocations (16 if none does). Longer
/// chunks mean fewer carries (phase 2 is sequential over chunks); shorter ones more
/// parallelism in phases 1 and 3.
pub(super) fn scan_chunk(channels: u64, l: u64) -> usize {
    let mut chunk = 256u64;
    while chunk > 16 && channels.saturating_mul(l.div_ceil(chunk)) < TARGET_INVOCATIONS {
        chunk /= 2;
    }
    chunk as usize
}

pub(super) fn lower(cx: &mut LowerCtx, at: &Site, out: &mut Vec<Dispatch>) -> Result<(), GpuError> {
    let (id, node) = (at.id, at.node);
    let label = &at.label;
    let &[i0, i1, i2, i3, i4] = node.inputs.as_slice() else {
        return Err(at.bad("a recurrence takes five operands"));
    };
    let dst = cx.operand_nonempty(id)?;
    let numel = at.ty().numel();
    let mut ops = Vec::with_capacity(5);
    for i in [i0, i1, i2, i3, i4] {
        match cx.operand(i)? {
            Some(o) => ops.push(o),
            None => {
                out.push(fill_step(label, dst, numel, 0)?);
                return Ok(());
            }
        }
    }
    match node.op {
        Op::SelectiveScan { delta_softplus, output } => {
            let u = cx.ty(i0)?.shape.dims().to_vec();
            let (n, groups) = (cx.ty(i2)?.shape.dims()[1..].to_vec(), cx.ty(i3)?.shape.dims().to_vec());
            let (&[b, d, l], &[n], Some(&g)) = (u.as_slice(), n.as_slice(), groups.get(1)) else {
                return Err(at.bad("selective scan operands of the wrong rank reached the GPU"));
            };
            let chunk = scan_chunk((b * d) as u64, l as u64);
            let p =
                ScanParams::new(KERNEL, [b, d, l], n, g, chunk, delta_softplus).map_err(|e| at.named(e))?;
            scan(cx, label, p, ops, dst, output, out)
        }
        Op::GatedDeltaRule { scale, output } => {
            let q = cx.ty(i0)?.shape.dims().to_vec();
            let v = cx.ty(i2)?.shape.dims().last().copied().unwrap_or(0);
            let dims: [usize; 4] = q.as_slice().try_into().map_err(|_| at.bad("q is not 4-D"))?;
            let (p, grid) = DeltaRuleParams::new(dims, v, scale, output == ScanOutput::LastState)
                .map_err(|e| at.named(e))?;
            ops.push(dst);
            out.push(at.step(KernelKey::Ssm(SsmKernel::DeltaRule), ops, &p, grid));
            Ok(())
        }
        _ => Err(at.bad("not a recurrence op")),
    }
}

/// The selective scan's launches: chunk, carry, then (for y) out.
fn scan(
    cx: &mut LowerCtx,
    label: &str,
    p: ScanParams,
    ops: Vec<Operand>,
    dst: Operand,
    output: ScanOutput,
    out: &mut Vec<Dispatch>,
) -> Result<(), GpuError> {
    let &[u, delta, a, bm, cm] = ops.as_slice() else {
        return Err(GpuError::Lowering { node: label.into(), reason: "five operands expected".into() });
    };
    let (hend_bytes, dtsum_bytes) = p.scratch_bytes();
    let hend = cx.scratch(hend_bytes);
    let dtsum = cx.scratch(dtsum_bytes);
    let last = match output {
        ScanOutput::LastState => dst,
        ScanOutput::Y => cx.scratch(4 * u64::from(p.batch) * u64::from(p.d) * u64::from(p.n)),
    };
    let key = |k| KernelKey::Ssm(k);
    let (pc, grid) = p.launch(SsmKernel::ScanChunk)?;
    out.push(Dispatch::new(key(SsmKernel::ScanChunk), label, vec![u, delta, a, bm, hend, dtsum], &pc, grid));
    let (pc, grid) = p.launch(SsmKernel::ScanCarry)?;
    out.push(Dispatch::new(key(SsmKernel::ScanCarry), label, vec![a, dtsum, hend, last], &pc, grid));
    if output == ScanOutput::Y {
        let (pc, grid) = p.launch(SsmKernel::ScanOut)?;
        out.push(Dispatch::new(
            key(SsmKernel::ScanOut),
            label,
            vec![u, delta, a, bm, cm, hend, dst],
            &pc,
            grid,
        ));
    }
    Ok(())
}
