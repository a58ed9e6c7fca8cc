//! Lowering of the last-axis row ops: LayerNorm, RmsNorm, AddNorm, Softmax, LogSoftmax. Each
//! is one launch of a workgroup-per-row kernel.
//!
//! AddNorm whose x and residual both have the output's shape runs the fused add + norm kernel.
//! When one of them broadcasts, the broadcasting add kernel writes x + residual to a scratch
//! buffer first and the plain norm reads it: the same f32 sum, rounded once, either way.

use super::{LowerCtx, Site};
use crate::catalog::norm::{NormKernel, NormParams, NormRow};
use crate::schedule::Dispatch;
use crate::{BinaryParams, GpuError, KernelKey, SoftmaxParams};
use rlx_ir::{BinaryOp, NormKind, Op};

pub(super) fn lower(cx: &mut LowerCtx, at: &Site, out: &mut Vec<Dispatch>) -> Result<(), GpuError> {
    let (id, node) = (at.id, at.node);
    let dims = at.ty().shape.dims().to_vec();
    let cols = dims.last().copied().unwrap_or(1);
    // The output is non-empty (the walk skips empty ones), so cols > 0.
    let rows = at.ty().numel() / cols.max(1);
    let result = cx.operand_nonempty(id)?;

    match (&node.op, node.inputs.as_slice()) {
        (Op::Softmax | Op::LogSoftmax, &[x]) => {
            let (p, grid) = SoftmaxParams::new(rows, cols).map_err(|e| at.named(e))?;
            let key = match node.op {
                Op::Softmax => KernelKey::SOFTMAX_ROW_F32,
                _ => KernelKey::Norm(NormKernel::LogSoftmax),
            };
            out.push(at.step(key, vec![cx.operand_nonempty(x)?, result], &p, grid));
        }
        (Op::LayerNorm { eps }, &[x, gamma, beta]) => {
            let (p, grid) = NormParams::new(rows, cols, *eps).map_err(|e| at.named(e))?;
            let ops = vec![
                cx.operand_nonempty(x)?,
                cx.operand_nonempty(gamma)?,
                cx.operand_nonempty(beta)?,
                result,
            ];
            out.push(at.step(KernelKey::Norm(NormKernel::Row(NormRow::LayerNorm)), ops, &p, grid));
        }
        (Op::RmsNorm { eps }, &[x, gamma]) => {
            let (p, grid) = NormParams::new(rows, cols, *eps).map_err(|e| at.named(e))?;
            let ops = vec![cx.operand_nonempty(x)?, cx.operand_nonempty(gamma)?, result];
            out.push(at.step(KernelKey::Norm(NormKernel::Row(NormRow::RmsNorm)), ops, &p, grid));
        }
        (Op::AddNorm { norm, eps }, &[x, residual, gamma, ref rest @ ..]) => {
            let beta = match (norm, rest) {
                (NormKind::LayerNorm, &[beta]) => Some(cx.operand_nonempty(beta)?),
                (NormKind::RmsNorm, &[]) => None,
                _ => return Err(at.bad("add_norm: wrong operand count for its norm kind")),
            };
            let (p, grid) = NormParams::new(rows, cols, *eps).map_err(|e| at.named(e))?;
            let gamma = cx.operand_nonempty(gamma)?;
            let x_dims = cx.ty(x)?.shape.dims().to_vec();
            let r_dims = cx.ty(residual)?.shape.dims().to_vec();
            let (mut ops, row) = if x_dims == dims && r_dims == dims {
                let ops = vec![cx.operand_nonempty(x)?, cx.operand_nonempty(residual)?, gamma];
                (ops, if beta.is_some() { NormRow::AddLayerNorm } else { NormRow::AddRmsNorm })
            } else {
                let sum = cx.scratch(result.size);
                let (bp, bgrid) =
                    BinaryParams::broadcast(&dims, &x_dims, &r_dims).map_err(|e| at.named(e))?;
                let add_ops = vec![cx.operand_nonempty(x)?, cx.operand_nonempty(residual)?, sum];
                out.push(at.step(KernelKey::binary_f32(BinaryOp::Add), add_ops, &bp, bgrid));
                (vec![sum, gamma], if beta.is_some() { NormRow::LayerNorm } else { NormRow::RmsNorm })
            };
            ops.extend(beta);
            ops.push(result);
            out.push(at.step(KernelKey::Norm(NormKernel::Row(row)), ops, &p, grid));
        }
        _ => return Err(at.bad("not a row op, or a wrong operand count")),
    }
    Ok(())
}
