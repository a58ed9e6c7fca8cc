//! Lowering of AttentionGrad onto flash attention's backward kernels
//! (`catalog::attention::backward`): one launch per part, whatever the layout, mask kind or
//! head grouping.

use super::matmul::operand_or_dummy;
use super::{LowerCtx, Site};
use crate::catalog::attention::backward::{bwd_block, bwd_coop_head, bwd_grid, BWD_COOP_ROWS, BWD_ROWS};
use crate::catalog::attention::{attention_launches, AttentionKernel, AttentionParams};
use crate::schedule::Dispatch;
use crate::{GpuError, KernelKey};
use rlx_ir::{AttnGradPart, Op};

pub(super) fn lower(cx: &mut LowerCtx, at: &Site, out: &mut Vec<Dispatch>) -> Result<(), GpuError> {
    let (id, node) = (at.id, at.node);
    let Op::AttentionGrad { spec, part } = &node.op else {
        return Err(at.bad("not an attention gradient op"));
    };
    let (q, k, v, x, y, mask) = match *node.inputs.as_slice() {
        [q, k, v, x, y] => (q, k, v, x, y, None),
        [q, k, v, x, y, m] => (q, k, v, x, y, Some(m)),
        _ => return Err(at.bad("attention_grad needs q, k, v, two part operands and an optional mask")),
    };
    let mask_ty = match mask {
        Some(m) => Some(cx.ty(m)?),
        None => None,
    };
    let (qd, kd) = (cx.ty(q)?.shape.dims().to_vec(), cx.ty(k)?.shape.dims().to_vec());
    let (params, _, fwd_grid) = AttentionParams::new(
        spec,
        &qd,
        &kd,
        cx.ty(v)?.shape.dims(),
        mask_ty.map(|t| (t.shape.dims(), t.dtype)),
        cx.limits.shared_memory_bytes,
    )
    .map_err(|e| at.named(e))?;
    let cols = match part {
        AttnGradPart::V => params.dv as usize,
        _ => params.d as usize,
    };
    // dk and dv take one workgroup row per (batch, kv head); the rest per (batch, query head).
    let (pairs, rows) = match part {
        AttnGradPart::Stats | AttnGradPart::Q => (fwd_grid[1], params.sq),
        AttnGradPart::K | AttnGradPart::V => (fwd_grid[1] / params.group.max(1), params.sk),
    };
    // Tensor cores where the device, the precision and the launch allow them, as for the
    // forward; the f32 kernel otherwise.
    let dims = [params.d as usize, params.dv as usize];
    let coop = bwd_coop_head(dims, rows, pairs, cx.limits, &cx.options).map_err(|r| at.bad(r))?;
    let sizes = [params.sq as usize, params.sk as usize];
    let (kernel, tile) = match coop {
        Some(head) => (AttentionKernel::BackwardCoop(head, *part), (BWD_COOP_ROWS, None)),
        None => {
            let block = bwd_block(*part, cols, cx.limits.shared_memory_bytes).map_err(|e| at.named(e))?;
            (AttentionKernel::Backward(block, *part), (BWD_ROWS, Some(block.columns())))
        }
    };
    let grid = bwd_grid(*part, tile, sizes, pairs, cols).map_err(|e| at.named(e))?;
    let q_op = operand_or_dummy(cx, q)?;
    let ops = [
        q_op,
        operand_or_dummy(cx, k)?,
        operand_or_dummy(cx, v)?,
        match mask {
            Some(m) => operand_or_dummy(cx, m)?,
            None => q_op,
        },
        cx.operand_nonempty(id)?,
        q_op,
        operand_or_dummy(cx, x)?,
        operand_or_dummy(cx, y)?,
    ];
    let key = KernelKey::Attention(kernel);
    for (params, grid) in attention_launches(params, grid) {
        out.push(at.step(key, ops.to_vec(), &params, grid));
    }
    Ok(())
}
