//! Lowering of QuantMatMul and QuantGather onto the quant family's kernels. The packed weight
//! (U8) is bound as it is stored, one byte per element; x has been widened to f32 by rlx-opt.
//!
//! - QuantMatMul: x [..., K] is M = Π leading dims rows; the path ([`QuantPath::choose`]) is the
//!   one-row kernel for M = 1 and the matrix-vector kernel for M ≤ 8 unless a matmul kernel is
//!   forced, else the cooperative-matrix
//!   tile where the device and precision allow, else the f32 tile. K = 0 (an empty weight) with a
//!   non-empty output is a fill with zeros.
//! - QuantGather: one launch over the ids; an empty table (V = 0) makes every id out of range, so
//!   the output is a fill with zeros.

use super::shape::fill_step;
use super::{LowerCtx, Site};
use crate::catalog::quant::{QuantKernel, QuantParams, QuantPath};
use crate::schedule::Dispatch;
use crate::{GpuError, KernelKey};
use rlx_ir::Op;

pub(super) fn lower(cx: &mut LowerCtx, at: &Site, out: &mut Vec<Dispatch>) -> Result<(), GpuError> {
    let (id, node) = (at.id, at.node);
    let label = &at.label;
    let &[a, b] = node.inputs.as_slice() else {
        return Err(at.bad("a quantized op takes two operands"));
    };
    let dst = cx.operand_nonempty(id)?;
    let numel = at.ty().numel();
    match node.op {
        Op::QuantMatMul { quant } => {
            let x_dims = cx.ty(a)?.shape.dims();
            let k = x_dims.last().copied().unwrap_or(0);
            let n = cx.ty(b)?.shape.dims().first().copied().unwrap_or(0);
            let m = numel / n.max(1);
            let Some(w) = cx.operand(b)? else {
                out.push(fill_step(label, dst, numel, 0)?);
                return Ok(());
            };
            let x = cx.operand_nonempty(a)?;
            let path = QuantPath::choose(m, cx.limits, &cx.options).map_err(|reason| at.bad(&reason))?;
            let kernel = path.kernel(quant);
            let p = QuantParams::new(kernel_name(kernel), quant, m, n, k)?;
            let grid = match path {
                QuantPath::MatVecOne | QuantPath::MatVec => p.vec_grid()?,
                QuantPath::Tiled | QuantPath::Coop => p.tile_grid(kernel_name(kernel))?,
            };
            out.push(at.step(KernelKey::Quant(kernel), vec![x, w, dst], &p, grid));
        }
        Op::QuantGather { quant } => {
            let v = cx.ty(a)?.shape.dims().first().copied().unwrap_or(0);
            let ids = cx.ty(b)?.numel();
            let k = numel / ids.max(1);
            let Some(table) = cx.operand(a)? else {
                out.push(fill_step(label, dst, numel, 0)?);
                return Ok(());
            };
            let kernel = QuantKernel::Gather(quant);
            let p = QuantParams::new(kernel_name(kernel), quant, ids, v, k)?;
            let grid = p.gather_grid()?;
            let operands = vec![table, cx.operand_nonempty(b)?, dst];
            out.push(at.step(KernelKey::Quant(kernel), operands, &p, grid));
        }
        _ => return Err(at.bad("not a quantized op")),
    }
    Ok(())
}

/// The variant name of `kernel`, for limit errors.
fn kernel_name(kernel: QuantKernel) -> &'static str {
    crate::variant(KernelKey::Quant(kernel)).static_name()
}
