//! Lowering of the reduction family: reduce (any axes), argmax/argmin, cumsum and top-k.
//!
//! Reduce reads x in place through two stride sets (kept dims, reduced dims), so any axes work
//! without a transposing copy. A reduced set longer than [`REDUCE_CHUNK`] is split: the first
//! pass reduces chunks of it into a scratch buffer of partials, later passes reduce the
//! partials, and the last writes the output. That spreads long reductions over many
//! workgroups and keeps every f32 sum a tree of short serial runs (within 1e-5 of rlx-cpu's
//! f64 sums). An empty reduced set is a fill: sum 0 (−0.0 for f32), prod 1, and NaN for f32
//! mean/max/min, 0 for integer max/min (rlx-cpu's values).

use super::shape::{fill_step, split_at_axis, word_type};
use super::{LowerCtx, Site};
use crate::catalog::reduce::params::AxisParams;
use crate::catalog::reduce::params::ReduceParams;
use crate::catalog::reduce::params::TopKParams;
use crate::catalog::reduce::IntReduceOp;
use crate::catalog::reduce::IntType;
use crate::catalog::reduce::ReduceKernel;
use crate::catalog::WordType;
use crate::schedule::{Dispatch, Operand};
use crate::{GpuError, KernelKey};
use rlx_ir::{Op, ReduceOp};

/// Reduced elements one workgroup takes in one pass (16 per thread).
pub const REDUCE_CHUNK: usize = 4096;

/// Elements per thread in a block of `cumsum.wgsl` (its ITEMS).
const CUMSUM_ITEMS: usize = 4;

/// Drops size-1 dims and joins neighbours that are contiguous in x (stride = next stride ×
/// next size): (size, stride) lists the reduce kernel walks.
fn merge_dims(dims: impl Iterator<Item = (usize, usize)>) -> Vec<(usize, usize)> {
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (n, s) in dims.filter(|d| d.0 != 1) {
        match merged.last_mut() {
            Some(last) if last.1 == s * n => *last = (last.0 * n, s),
            _ => merged.push((n, s)),
        }
    }
    merged
}

fn reduce_key(op: ReduceOp, t: WordType, label: &str) -> Result<ReduceKernel, GpuError> {
    let int = |t: IntType| {
        let op = match op {
            ReduceOp::Sum => IntReduceOp::Sum,
            ReduceOp::Prod => IntReduceOp::Prod,
            ReduceOp::Max => IntReduceOp::Max,
            ReduceOp::Min => IntReduceOp::Min,
            ReduceOp::Mean => {
                return Err(GpuError::Lowering {
                    node: label.to_string(),
                    reason: "mean of integers has no GPU kernel (cast to f32 first)".into(),
                })
            }
        };
        Ok(ReduceKernel::Int(op, t))
    };
    match t {
        WordType::F32 => Ok(ReduceKernel::F32(op)),
        WordType::I32 => int(IntType::I32),
        WordType::U32 => int(IntType::U32),
    }
}

/// The output of a reduction over nothing, as a word.
fn empty_value(op: ReduceOp, t: WordType) -> u32 {
    match (t, op) {
        // rlx-cpu's f32 sums start from -0.0, the IEEE additive identity.
        (WordType::F32, ReduceOp::Sum) => (-0f32).to_bits(),
        (_, ReduceOp::Sum) => 0,
        (WordType::F32, ReduceOp::Prod) => 1f32.to_bits(),
        (_, ReduceOp::Prod) => 1,
        (WordType::F32, _) => f32::NAN.to_bits(),
        (_, _) => 0,
    }
}

pub(super) fn lower(cx: &mut LowerCtx, at: &Site, out: &mut Vec<Dispatch>) -> Result<(), GpuError> {
    let (id, node) = (at.id, at.node);
    let label = &at.label;
    let ty = at.ty();
    let dst = cx.operand_nonempty(id)?;
    let x = at.first_input("the node has no input")?;
    let xty = cx.ty(x)?;
    let dims = xty.shape.dims();
    let t = word_type(xty.dtype, label)?;
    match &node.op {
        Op::Reduce { op, axes, .. } => {
            let key = reduce_key(*op, t, label)?;
            let count: usize = axes.iter().map(|&a| dims.get(a).copied().unwrap_or(1)).product();
            if count == 0 {
                out.push(fill_step(label, dst, ty.numel(), empty_value(*op, t))?);
                return Ok(());
            }
            let mut strides = vec![1usize; dims.len()];
            for d in (0..dims.len().saturating_sub(1)).rev() {
                strides[d] = strides[d + 1] * dims[d + 1];
            }
            let dim = |d: usize| (dims[d], strides[d]);
            let kept = merge_dims((0..dims.len()).filter(|d| !axes.contains(d)).map(dim));
            let red = merge_dims(axes.iter().copied().filter(|&a| a < dims.len()).map(dim));
            let src = cx.operand_nonempty(x)?;
            reduce_passes(cx, key, label, src, dst, kept, red, xty.numel(), out)?;
        }
        Op::ArgReduce { op, axis, .. } => {
            let (outer, len, inner) = split_at_axis(dims, *axis);
            let (p, grid) = AxisParams::new("data_arg_reduce", outer, len, inner, 1)?;
            let key = KernelKey::Reduce(ReduceKernel::Arg(*op, t));
            out.push(at.step(key, vec![cx.operand_nonempty(x)?, dst], &p, grid));
        }
        Op::Cumsum { axis } => {
            let (outer, len, inner) = split_at_axis(dims, *axis);
            let (p, grid) = AxisParams::new("data_cumsum", outer, len, inner, CUMSUM_ITEMS)?;
            let key = KernelKey::Reduce(ReduceKernel::Cumsum(t));
            out.push(at.step(key, vec![cx.operand_nonempty(x)?, dst], &p, grid));
        }
        Op::TopK { k, axis, largest, output } => {
            let (outer, len, inner) = split_at_axis(dims, *axis);
            let (p, grid) = TopKParams::new(outer, len, inner, *k, *largest)?;
            let key = KernelKey::Reduce(ReduceKernel::TopK(t, *output));
            out.push(at.step(key, vec![cx.operand_nonempty(x)?, dst], &p, grid));
        }
        other => return Err(at.bad(format!("{} is not a reduction", other.name()))),
    }
    Ok(())
}

/// Emits the passes of one reduction (see the module doc). `kept` and `red` are merged
/// (size, stride) lists over a source of `src_len` elements; the reduced count is ≥ 1.
#[allow(clippy::too_many_arguments)]
fn reduce_passes(
    cx: &mut LowerCtx,
    key: ReduceKernel,
    label: &str,
    mut src: Operand,
    dst: Operand,
    mut kept: Vec<(usize, usize)>,
    mut red: Vec<(usize, usize)>,
    mut src_len: usize,
    out: &mut Vec<Dispatch>,
) -> Result<(), GpuError> {
    let n_out: usize = kept.iter().map(|d| d.0).product();
    let total: usize = red.iter().map(|d| d.0).product();
    // f32 counts are exact up to 2^24; above, the divisor rounds by at most half an ulp.
    let divisor = total as f32;
    // Earlier passes of a mean add up; only the last divides.
    let partial_key = match key {
        ReduceKernel::F32(ReduceOp::Mean) => ReduceKernel::F32(ReduceOp::Sum),
        k => k,
    };
    loop {
        let count: usize = red.iter().map(|d| d.0).product();
        let chunks = count.div_ceil(REDUCE_CHUNK);
        let last = chunks == 1;
        let target = if last { dst } else { cx.scratch((n_out * chunks * 4) as u64) };
        let (p, grid) = ReduceParams::new(&kept, &red, REDUCE_CHUNK, divisor, src_len)?;
        let k = if last { key } else { partial_key };
        out.push(Dispatch::new(KernelKey::Reduce(k), label, vec![src, target], &p, grid));
        if last {
            return Ok(());
        }
        // The partials are [n_out, chunks], contiguous: reduce each row next.
        src = target;
        src_len = n_out * chunks;
        kept = merge_dims(std::iter::once((n_out, chunks)));
        red = vec![(chunks, 1)];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_dims_joins_contiguous_runs() {
        // x [2, 3, 4, 5] reducing axes 1 and 2: reduced (3, 20), (4, 5) join into (12, 5).
        assert_eq!(merge_dims([(3, 20), (4, 5)].into_iter()), vec![(12, 5)]);
        // Kept (2, 60), (5, 1) are not contiguous with each other.
        assert_eq!(merge_dims([(2, 60), (5, 1)].into_iter()), vec![(2, 60), (5, 1)]);
        assert_eq!(merge_dims([(1, 7), (3, 1)].into_iter()), vec![(3, 1)]);
        assert!(merge_dims([(1, 7)].into_iter()).is_empty());
    }

    #[test]
    fn empty_reductions_give_rlx_cpu_values() {
        assert_eq!(empty_value(ReduceOp::Sum, WordType::F32), 0x8000_0000);
        assert_eq!(empty_value(ReduceOp::Sum, WordType::U32), 0);
        assert_eq!(empty_value(ReduceOp::Prod, WordType::F32), 1f32.to_bits());
        assert!(f32::from_bits(empty_value(ReduceOp::Mean, WordType::F32)).is_nan());
        assert!(f32::from_bits(empty_value(ReduceOp::Max, WordType::F32)).is_nan());
        assert_eq!(empty_value(ReduceOp::Min, WordType::I32), 0);
        assert_eq!(empty_value(ReduceOp::Prod, WordType::U32), 1);
        assert!(reduce_key(ReduceOp::Mean, WordType::I32, "n").is_err());
    }
}
