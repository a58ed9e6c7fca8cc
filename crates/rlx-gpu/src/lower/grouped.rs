//! Lowering of GroupedMatMul and QuantGroupedMatMul (the experts of a mixture-of-experts layer)
//! onto the grouped family's kernels: one launch per node, the experts picked on the device from
//! the ids.
//!
//! - x [T, S, K], w [E, N, K], ids [T, k] → out [T, k, N]: few slots (T · k, a decode step)
//!   run the matrix-vector kernel (one workgroup per slot and block of output rows), many (a
//!   prefill) the expert-major tiled kernel ([`GroupedKernel::choose`]).
//! - An f16 weight widened by a cast that only grouped matmuls read as their weight (the
//!   experts under `Precision::F16`) is read by them as f16 (`matmul::absorbed_casts`): the
//!   cast launches nothing, and the experts stream at half the bytes.
//! - A packed stack (QuantGroupedMatMul, w U8 [E, N, row_bytes]) is bound as it is stored and
//!   decoded by the quantized variants of the same two kernels ([`GroupedKernel::choose_quant`]);
//!   x has been widened to f32 by rlx-opt.
//! - K = 0 or E = 0 (an empty x or w) with a non-empty output: every output is 0 (an empty dot,
//!   or every id out of range), written by a fill.

use super::shape::fill_step;
use super::{LowerCtx, Site};
use crate::catalog::grouped::{GroupedKernel, GroupedParams};
use crate::schedule::Dispatch;
use crate::{GpuError, KernelKey};
use rlx_ir::{NodeId, Op};

pub(super) fn lower(cx: &mut LowerCtx, at: &Site, out: &mut Vec<Dispatch>) -> Result<(), GpuError> {
    let &[x, w, ids] = at.node.inputs.as_slice() else {
        return Err(at.bad("grouped_matmul takes three operands (x, w, ids)"));
    };
    let dims3 = |id: NodeId| -> Result<[usize; 3], GpuError> {
        let d = cx.ty(id)?.shape.dims();
        <[usize; 3]>::try_from(d).map_err(|_| at.bad(format!("operand of shape {d:?} is not 3-D")))
    };
    let (x_dims, w_dims) = (dims3(x)?, dims3(w)?);
    let top = cx.ty(ids)?.shape.dims().get(1).copied().unwrap_or(0);
    let dst = cx.operand_nonempty(at.id)?;
    let numel = at.ty().numel();
    let quant = match at.node.op {
        Op::QuantGroupedMatMul { quant } => Some(quant),
        _ => None,
    };
    // An absorbed cast: bind the f16 value it would have widened.
    let (w_src, f16_w) = match super::matmul::absorbed_source(cx.graph, &cx.absorbed, w) {
        Some(src) if quant.is_none() => (src, true),
        _ => (w, false),
    };
    let (Some(x_op), Some(w_op)) = (cx.operand(x)?, cx.operand(w_src)?) else {
        out.push(fill_step(&at.label, dst, numel, 0)?);
        return Ok(());
    };
    let params = match quant {
        Some(q) => GroupedParams::quant(at.node.op.name(), q, x_dims, w_dims, top),
        None => GroupedParams::new(at.node.op.name(), x_dims, w_dims, top),
    };
    let p = params.map_err(|e| match e {
        GpuError::TooLarge { .. } => e,
        other => at.bad(other.to_string()),
    })?;
    let slots = x_dims[0] * top;
    let kernel = match quant {
        Some(q) => GroupedKernel::choose_quant(slots, q),
        None => GroupedKernel::choose(slots, f16_w),
    };
    let grid = p.grid(kernel)?;
    let operands = vec![x_op, w_op, cx.operand_nonempty(ids)?, dst];
    out.push(at.step(KernelKey::Grouped(kernel), operands, &p, grid));
    Ok(())
}
