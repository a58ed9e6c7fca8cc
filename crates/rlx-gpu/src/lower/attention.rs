//! Lowering of Attention onto the online-softmax attention kernel: one launch, whatever the
//! layout, mask kind or head grouping (all of them are addressing and params).
//!
//! Empty operands still need bindings: with Sk = 0 (k and v empty) every row is fully masked
//! and the kernel writes zeros without reading them; with D = 0 (q and k empty) every score is
//! 0 · scale. Those bind a 4-byte dummy. Mask kinds without a mask operand bind q (or the
//! dummy) as the mask, which the kernel then never reads; so does attention without kv
//! lengths for the lengths binding.

use super::matmul::operand_or_dummy;
use super::{LowerCtx, Site};
use crate::catalog::attention::{
    attention_launches, combine_launches, partial_bytes, split_chunks, split_fits, AttentionKernel,
    AttentionParams, AttnCombineParams, CoopHead, CoopLoads, KvStore,
};
use crate::schedule::Dispatch;
use crate::schedule::Operand;
use crate::{GpuError, KernelKey};
use rlx_backend::{KernelOptions, MatmulKernel};
use rlx_ir::{NodeId, Op};

pub(super) fn lower(cx: &mut LowerCtx, at: &Site, out: &mut Vec<Dispatch>) -> Result<(), GpuError> {
    let (id, node) = (at.id, at.node);
    let Op::Attention(spec) = &node.op else {
        return Err(at.bad("not an attention op"));
    };
    let (operands, lens) = match (spec.kv_lengths, node.inputs.split_last()) {
        (true, Some((&lens, rest))) => (rest, Some(lens)),
        _ => (node.inputs.as_slice(), None),
    };
    let (q, k, v, mask) = match *operands {
        [q, k, v] => (q, k, v, None),
        [q, k, v, m] => (q, k, v, Some(m)),
        _ => return Err(at.bad("attention needs q, k, v, an optional mask and optional kv lengths")),
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
    .map_err(|e| at.named(e))?;
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
    // Keys and values stored f16 (a KV cache in f16) are read as packed words by the kernels'
    // f16 variants (rlx-opt leaves them unwidened: `Capabilities::half_kv_attention`).
    let kv = KvStore::of(cx.ty(k)?.dtype);
    // A few query rows (decode steps, one or many sequences) take the split-key kernel: the
    // tensor-core kernel's 64-row blocks would be 63/64 padding at one row a sequence (a
    // 64-stream batched step spent 29 % of its time there on the H100). Otherwise tensor cores
    // where the device and the precision allow them, the head dims fit and the launch fills
    // the GPU (or a forced coop matmul says so); the f32 kernel otherwise (any head dim).
    let (d, dv) = (params.d as usize, params.dv as usize);
    if split_kernel(&cx.options) && split_fits(params.sq, d) {
        return split(cx, id, params, grid[1], kv, [q_op, k_op, v_op, m_op, result, len_op], out);
    }
    let coop =
        CoopHead::select(d, dv, params.sq, grid, cx.limits, &cx.options).map_err(|reason| at.bad(reason))?;
    let (key, grid) = match coop {
        Some(head) => {
            (AttentionKernel::Coop(head, CoopLoads::for_params(&params), kv), CoopHead::grid(params.sq, grid))
        }
        None => (AttentionKernel::Rows(block, kv), grid),
    };
    for (params, grid) in attention_launches(params, grid) {
        out.push(at.step(
            KernelKey::Attention(key),
            vec![q_op, k_op, v_op, m_op, result, len_op],
            &params,
            grid,
        ));
    }
    Ok(())
}

/// Whether the split-key kernel may run: unless a forced matmul kernel picks the row-blocked
/// or the tensor-core attention kernels (so that the parity table still reaches them with one
/// query row).
fn split_kernel(options: &KernelOptions) -> bool {
    !matches!(options.matmul, Some(MatmulKernel::Tiled64 | MatmulKernel::Reg128 | MatmulKernel::Coop))
}

/// The split-key kernel's two launches: partials per (chunk, row) into a scratch buffer, then
/// the merge into the output.
fn split(
    cx: &mut LowerCtx,
    id: NodeId,
    params: AttentionParams,
    batch_heads: u32,
    kv: KvStore,
    operands: [Operand; 6],
    out: &mut Vec<Dispatch>,
) -> Result<(), GpuError> {
    let chunks = split_chunks(params.sk as usize);
    // sq ≤ SPLIT_MAX_ROWS, so this is at most 4 × a grid dimension the params accepted.
    let rows = batch_heads.checked_mul(params.sq).ok_or_else(|| GpuError::TooLarge {
        kernel: "nn_attention_split_f32",
        what: "query rows",
        value: u64::from(batch_heads) * u64::from(params.sq),
        limit: u64::from(u32::MAX),
    })?;
    let partials = cx.scratch(partial_bytes(u64::from(rows), chunks, params.dv as usize));
    let [q, k, v, m, result, lens] = operands;
    for (p, grid) in attention_launches(params, [chunks, rows, 1]) {
        let ops = vec![q, k, v, m, result, lens, partials];
        out.push(Dispatch::new(
            KernelKey::Attention(AttentionKernel::Split(kv)),
            cx.label(id),
            ops,
            &p,
            grid,
        ));
    }
    let [o_sb, o_ss, o_sh] = params.o_strides;
    let combine = AttnCombineParams {
        chunks,
        dv: params.dv,
        hq: params.hq,
        sq: params.sq,
        o_sb,
        o_ss,
        o_sh,
        row_offset: 0,
    };
    for (p, grid) in combine_launches(combine, rows) {
        let ops = vec![partials, result];
        out.push(Dispatch::new(KernelKey::Attention(AttentionKernel::Combine), cx.label(id), ops, &p, grid));
    }
    Ok(())
}
