//! Lowering of the elementwise family: unary, binary, compare, where and fused programs, on every dtype GPU
//! kernels compute (f32, i32, u32, Bool as a u32 0/1 word). Casts are `cast.rs`'s.
//!
//! Unary, binary, compare and where use the elementwise family's kernels (variants by op ×
//! dtype). Broadcast shapes are first merged ([`merge_broadcast`]): size-1
//! output dims go, and neighbouring dims that every operand either has or broadcasts become
//! one, so the kernels' rank limits only bite on truly alternating broadcast patterns.

use super::shape::word_type;
use super::{LowerCtx, Site};
use crate::catalog::consts_wgsl::{binary_ops, unary_ops, Table};
use crate::catalog::elementwise::params::{FusedKind, FusedParams, WhereParams, FUSED_MAX_INPUTS};
use crate::catalog::elementwise::ElementwiseKernel;
use crate::catalog::elementwise::{BinaryFn, UnaryFn};
use crate::schedule::Dispatch;
use crate::{BinaryParams, GpuError, KernelKey, UnaryParams};
use rlx_ir::infer::broadcast_run;
use rlx_ir::{DType, EwProgram, EwStep, NodeId, Op, UnaryOp};

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
        Op::FusedElementwise(prog) => fused(cx, at, prog, dst, out)?,
        other => return Err(at.bad(format!("{} is not an elementwise op", other.name()))),
    }
    Ok(())
}

/// A fused program: one `fused.wgsl` launch. Registers are renumbered as the kernel keeps
/// them (inputs, scalars, op results); the ops' codes are the unary and binary tables'.
fn fused(
    cx: &LowerCtx,
    at: &Site,
    prog: &EwProgram,
    dst: crate::Operand,
    out: &mut Vec<Dispatch>,
) -> Result<(), GpuError> {
    let ty = at.ty();
    let out_dims = ty.shape.dims();
    let inputs = &at.node.inputs;
    let mut index = Vec::with_capacity(inputs.len());
    let mut bools = 0u32;
    for (k, &x) in inputs.iter().enumerate() {
        let xty = cx.ty(x)?;
        let run = broadcast_run(out_dims, xty.shape.dims()).ok_or_else(|| {
            at.bad(format!(
                "input {k} {xty} is not read as one run of the output {ty}'s dims; rlx-opt's fusion \
                 keeps such inputs out"
            ))
        })?;
        index.push(run);
        if xty.dtype == DType::Bool {
            bools |= 1 << k;
        }
    }
    let n_in = inputs.len() as u32;
    let scalars: Vec<f32> =
        prog.steps.iter().filter_map(|s| if let EwStep::Scalar(v) = s { Some(*v) } else { None }).collect();
    let n_sc = scalars.len() as u32;
    let code = |table: &Table, name: &str| {
        table
            .1
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, c)| c)
            .ok_or_else(|| at.bad(format!("{name} has no op code")))
    };
    let (unary, binary) = (unary_ops(), binary_ops());
    let mut regs: Vec<u32> = Vec::with_capacity(prog.steps.len());
    let mut ops = Vec::new();
    let (mut next_scalar, mut next_op) = (n_in, n_in + n_sc);
    for step in &prog.steps {
        let r = |i: usize| {
            regs.get(i).copied().ok_or_else(|| at.bad(format!("step {step:?} reads a later register")))
        };
        let reg = match *step {
            EwStep::Input(j) => j as u32,
            EwStep::Scalar(_) => {
                next_scalar += 1;
                next_scalar - 1
            }
            EwStep::Unary(op, a) => {
                ops.push(FusedKind::Unary.word(code(&unary, op.name())?, r(a)?, 0, 0));
                next_op += 1;
                next_op - 1
            }
            EwStep::Binary(op, a, b) => {
                ops.push(FusedKind::Binary.word(code(&binary, op.name())?, r(a)?, r(b)?, 0));
                next_op += 1;
                next_op - 1
            }
            EwStep::Where(c, a, b) => {
                ops.push(FusedKind::Where.word(0, r(c)?, r(a)?, r(b)?));
                next_op += 1;
                next_op - 1
            }
        };
        regs.push(reg);
    }
    let out_reg = regs.last().copied().ok_or_else(|| at.bad("the program has no steps"))?;
    let (p, grid) = FusedParams::new(ty.numel(), &index, bools, &scalars, &ops, out_reg)?;
    let mut operands = inputs.iter().map(|&x| cx.operand_nonempty(x)).collect::<Result<Vec<_>, _>>()?;
    // Unused input slots bind the first input again (read-only, so no hazard).
    let first = *operands.first().ok_or_else(|| at.bad("a fused node without inputs reached the GPU"))?;
    operands.resize(FUSED_MAX_INPUTS, first);
    operands.push(dst);
    out.push(at.step(KernelKey::Elementwise(ElementwiseKernel::Fused), operands, &p, grid));
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
    use crate::lower::test_util::{keys, schedule};
    use rlx_ir::{BinaryOp, Graph};

    #[test]
    fn a_fused_program_is_one_launch_with_its_registers_renumbered() {
        // where(k, exp(x) · 2, x + row) over x [4, 6], row [6], k [4, 1].
        let mut g = Graph::new("fused");
        let x = g.input("x", &[4, 6], DType::F32).unwrap();
        let row = g.input("row", &[6], DType::F32).unwrap();
        let k = g.input("k", &[4, 1], DType::Bool).unwrap();
        let steps = vec![
            EwStep::Input(0),
            EwStep::Unary(UnaryOp::Exp, 0),
            EwStep::Scalar(2.0),
            EwStep::Binary(BinaryOp::Mul, 1, 2),
            EwStep::Input(1),
            EwStep::Binary(BinaryOp::Add, 0, 4),
            EwStep::Input(2),
            EwStep::Where(6, 3, 5),
        ];
        let y = g.push(Op::FusedElementwise(EwProgram { steps }), &[x, row, k]).unwrap();
        g.set_outputs(&[y]).unwrap();
        let s = schedule(&g);
        assert_eq!(keys(&s), vec![KernelKey::Elementwise(ElementwiseKernel::Fused)]);
        let step = &s.steps[0];
        assert_eq!(step.operands.len(), FUSED_MAX_INPUTS + 1);
        // Unused input slots bind the first input.
        assert!(step.operands[3..FUSED_MAX_INPUTS].iter().all(|o| *o == step.operands[0]));
        let p: FusedParams = bytemuck::pod_read_unaligned(&step.params);
        assert_eq!((p.numel, p.counts, p.n_ops), (24, 3 | 1 << 8 | 0b100 << 16, 4));
        // Whole, row, column.
        assert_eq!(p.index[..6], [1, 24, 1, 6, 6, 4]);
        assert_eq!(p.code[0], 2.0f32.to_bits());
        let code = |t: &Table, n: &str| t.1.iter().find(|e| e.0 == n).unwrap().1;
        // Registers: x 0, row 1, k 2, the scalar 3, then the ops from 4.
        assert_eq!(p.code[1], FusedKind::Unary.word(code(&unary_ops(), "exp"), 0, 0, 0));
        assert_eq!(p.code[2], FusedKind::Binary.word(code(&binary_ops(), "mul"), 4, 3, 0));
        assert_eq!(p.code[3], FusedKind::Binary.word(code(&binary_ops(), "add"), 0, 1, 0));
        assert_eq!(p.code[4], FusedKind::Where.word(0, 2, 5, 6));
        assert_eq!(p.out_reg, 7);
    }

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
