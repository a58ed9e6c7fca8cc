//! Lowering of Attention onto the online-softmax attention kernel: one launch, whatever the
//! layout, mask kind or head grouping (all of them are addressing and params).
//!
//! Empty operands still need bindings: with Sk = 0 (k and v empty) every row is fully masked
//! and the kernel writes zeros without reading them; with D = 0 (q and k empty) every score is
//! 0 · scale. Those bind a 4-byte dummy. Mask kinds without a mask operand bind q (or the
//! dummy) as the mask, which the kernel then never reads; so does attention without kv
//! lengths for the lengths binding.

use super::matmul::{named, operand_or_dummy};
use super::LowerCtx;
use crate::catalog::nn::{attention_launches, AttentionParams, CoopHead, NnKernel};
use crate::schedule::Dispatch;
use crate::{GpuError, KernelKey};
use rlx_ir::{Node, NodeId, Op};

pub(super) fn lower(
    cx: &mut LowerCtx,
    id: NodeId,
    node: &Node,
    out: &mut Vec<Dispatch>,
) -> Result<(), GpuError> {
    let Op::Attention(spec) = &node.op else {
        return Err(GpuError::Lowering { node: cx.label(id), reason: "not an attention op".into() });
    };
    let (operands, lens) = match (spec.kv_lengths, node.inputs.split_last()) {
        (true, Some((&lens, rest))) => (rest, Some(lens)),
        _ => (node.inputs.as_slice(), None),
    };
    let (q, k, v, mask) = match *operands {
        [q, k, v] => (q, k, v, None),
        [q, k, v, m] => (q, k, v, Some(m)),
        _ => {
            return Err(GpuError::Lowering {
                node: cx.label(id),
                reason: "attention needs q, k, v, an optional mask and optional kv lengths".into(),
            })
        }
    };
    let mask_ty = match mask {
        Some(m) => Some(cx.ty(m)?),
        None => None,
    };
    let (params, block, grid) = AttentionParams::new(
        spec,
        cx.ty(q)?.shape.dims(),
        cx.ty(k)?.shape.dims(),
        cx.ty(v)?.shape.dims(),
        mask_ty.map(|t| (t.shape.dims(), t.dtype)),
        cx.limits.shared_memory_bytes,
    )
    .map_err(|e| named(cx, id, e))?;
    let q_op = operand_or_dummy(cx, q)?;
    let k_op = operand_or_dummy(cx, k)?;
    let v_op = operand_or_dummy(cx, v)?;
    let m_op = match mask {
        Some(m) => operand_or_dummy(cx, m)?,
        None => q_op,
    };
    let len_op = match lens {
        Some(l) => operand_or_dummy(cx, l)?,
        None => q_op,
    };
    let result = cx.operand_nonempty(id)?;
    // Tensor cores where the device and the precision allow them, the head dims fit and the
    // launch fills the GPU (or a forced coop matmul says so); the f32 kernel otherwise (it
    // takes any head dim).
    let (d, dv) = (params.d as usize, params.dv as usize);
    let coop = CoopHead::select(d, dv, params.sq, grid, cx.limits, &cx.options)
        .map_err(|reason| GpuError::Lowering { node: cx.label(id), reason })?;
    let (key, grid) = match coop {
        Some(head) => (NnKernel::AttentionCoop(head), CoopHead::grid(params.sq, grid)),
        None => (NnKernel::Attention(block), grid),
    };
    for (params, grid) in attention_launches(params, grid) {
        out.push(Dispatch::new(
            KernelKey::Nn(key),
            cx.label(id),
            vec![q_op, k_op, v_op, m_op, result, len_op],
            &params,
            grid,
        ));
    }
    Ok(())
}
