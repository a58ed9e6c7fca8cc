//! Lowering of the elementwise family: unary, binary, compare, where and fused programs, on every dtype GPU
//! kernels compute (f32, i32, u32, Bool as a u32 0/1 word). Casts are `cast.rs`'s.
//!
//! Unary, binary, compare and where use the elementwise family's kernels (variants by op ×
//! dtype). Broadcast shapes are first merged ([`merge_broadcast`]): size-1
//! output dims go, and neighbouring dims that every operand either has or broadcasts become
//! one, so the kernels' rank limits only bite on truly alternating broadcast patterns.

use super::shape::word_type;
use super::{LowerCtx, Site};
use crate::catalog::elementwise::params::WhereParams;
use crate::catalog::elementwise::ElementwiseKernel;
use crate::catalog::elementwise::{BinaryFn, UnaryFn};
use crate::schedule::Dispatch;
use crate::{BinaryParams, GpuError, KernelKey, UnaryParams};
use rlx_ir::{DType, NodeId, Op, UnaryOp};

pub(super) fn lower(cx: &mut LowerCtx, at: &Site, out: &mut Vec<Dispatch>) -> Result<(), GpuError> {
    let (id, node) = (at.id, at.node);
    let label = &at.label;
    let ty = at.ty();
    let dst = cx.operand_nonempty(id)?;
    let input = |i: usize| {
        let missing = || at.bad(format!("expected input {i}, the node has {}", node.inputs.len()));
        node.inputs.get(i).copied().ok_or_else(missing)
    };
    match &node.op {
        Op::Unary(u) => {
            let x = input(0)?;
            let xty = cx.ty(x)?;
            let key = match (xty.dtype, u) {
                (DType::F32, _) => KernelKey::Elementwise(ElementwiseKernel::Unary(UnaryFn::F32(*u))),
                (DType::I32, UnaryOp::Neg) => {
                    KernelKey::Elementwise(ElementwiseKernel::Unary(UnaryFn::NegI32))
                }
                (DType::I32, UnaryOp::Abs) => {
                    KernelKey::Elementwise(ElementwiseKernel::Unary(UnaryFn::AbsI32))
                }
                (d, _) => return Err(at.bad(format!("{} on {d} has no GPU kernel", u.name()))),
            };
            let (p, grid) = UnaryParams::new(ty.numel())?;
            out.push(at.step(key, vec![cx.operand_nonempty(x)?, dst], &p, grid));
        }
        Op::Binary(b) => {
            let (x, y) = (input(0)?, input(1)?);
            let t = word_type(cx.ty(x)?.dtype, label)?;
            if cx.ty(x)?.dtype == DType::Bool {
                return Err(at.bad(format!("{} on bool has no GPU kernel", b.name())));
            }
            let key = KernelKey::Elementwise(ElementwiseKernel::Binary(BinaryFn::Arith(*b), t));
            binary_step(cx, key, label, [x, y], ty.shape.dims(), dst, out)?;
        }
        Op::Compare(c) => {
            let (x, y) = (input(0)?, input(1)?);
            let t = word_type(cx.ty(x)?.dtype, label)?;
            let key = KernelKey::Elementwise(ElementwiseKernel::Binary(BinaryFn::Compare(*c), t));
            binary_step(cx, key, label, [x, y], ty.shape.dims(), dst, out)?;
        }
        Op::Where => {
            let ids = [input(0)?, input(1)?, input(2)?];
            let shapes =
                ids.iter().map(|&i| Ok(cx.ty(i)?.shape.dims())).collect::<Result<Vec<_>, GpuError>>()?;
            let (o, ins) = merge_broadcast(ty.shape.dims(), &shapes);
            let (p, grid) = WhereParams::broadcast(&o, &ins[0], &ins[1], &ins[2])?;
            let mut operands = ids.iter().map(|&i| cx.operand_nonempty(i)).collect::<Result<Vec<_>, _>>()?;
            operands.push(dst);
            out.push(at.step(KernelKey::Elementwise(ElementwiseKernel::Where), operands, &p, grid));
        }
        Op::FusedElementwise(prog) => super::fused::lower(cx, at, prog, dst, out)?,
        other => return Err(at.bad(format!("{} is not an elementwise op", other.name()))),
    }
    Ok(())
}

/// A broadcasting two-operand step (`BinaryParams` addressing) after merging dims.
fn binary_step(
    cx: &LowerCtx,
    key: KernelKey,
    label: &str,
    ids: [NodeId; 2],
    out_dims: &[usize],
    dst: crate::Operand,
    out: &mut Vec<Dispatch>,
) -> Result<(), GpuError> {
    let shapes = [cx.ty(ids[0])?.shape.dims(), cx.ty(ids[1])?.shape.dims()];
    let (o, ins) = merge_broadcast(out_dims, &shapes);
    let (p, grid) = BinaryParams::broadcast(&o, &ins[0], &ins[1])?;
    let operands = vec![cx.operand_nonempty(ids[0])?, cx.operand_nonempty(ids[1])?, dst];
    out.push(Dispatch::new(key, label, operands, &p, grid));
    Ok(())
}

/// Merges the dims of a numpy broadcast: returns the output dims and each operand's dims
/// (padded to the output rank) with every size-1 output dim dropped and neighbouring dims
/// joined where each operand either has both (size equal to the output's) or broadcasts both
/// (size 1). Operands must broadcast to `out` (the IR's inference guarantees it).
pub(super) fn merge_broadcast(out: &[usize], ins: &[&[usize]]) -> (Vec<usize>, Vec<Vec<usize>>) {
    let rank = out.len();
    let dim =
        |x: &[usize], d: usize| (d + x.len()).checked_sub(rank).and_then(|j| x.get(j).copied()).unwrap_or(1);
    let mut merged_out: Vec<usize> = Vec::new();
    let mut present: Vec<Vec<bool>> = Vec::new();
    for (d, &n) in out.iter().enumerate() {
        if n == 1 {
            continue;
        }
        let has: Vec<bool> = ins.iter().map(|x| dim(x, d) != 1).collect();
        match (merged_out.last_mut(), present.last()) {
            (Some(last), Some(prev)) if *prev == has => *last *= n,
            _ => {
                merged_out.push(n);
                present.push(has);
            }
        }
    }
    let merged_ins = (0..ins.len())
        .map(|k| merged_out.iter().zip(&present).map(|(&n, has)| if has[k] { n } else { 1 }).collect())
        .collect();
    (merged_out, merged_ins)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_broadcast_joins_runs_and_drops_ones() {
        let (o, ins) = merge_broadcast(&[2, 3, 4, 5], &[&[2, 3, 4, 5], &[4, 5]]);
        assert_eq!(o, vec![6, 20]);
        assert_eq!(ins, vec![vec![6, 20], vec![1, 20]]);
        let (o, ins) = merge_broadcast(&[2, 1, 3, 4], &[&[2, 1, 1, 4], &[3, 1]]);
        assert_eq!(o, vec![2, 3, 4]);
        assert_eq!(ins, vec![vec![2, 1, 4], vec![1, 3, 1]]);
        let (o, ins) = merge_broadcast(&[], &[&[], &[]]);
        assert!(o.is_empty() && ins.iter().all(|x| x.is_empty()));
        // A pattern that alternates keeps every dim.
        let (o, _) = merge_broadcast(&[2, 3, 2, 3], &[&[2, 1, 2, 1], &[1, 3, 1, 3]]);
        assert_eq!(o, vec![2, 3, 2, 3]);
    }
}
