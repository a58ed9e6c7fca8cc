//! Lowering of `Op::Fft`: one step of `fft_radix2.wgsl` over every row of x `[..., N, 2]`.

use super::LowerCtx;
use crate::catalog::fft::FftParams;
use crate::schedule::Dispatch;
use crate::{GpuError, KernelKey};
use rlx_ir::{Node, NodeId, Op};

pub(super) fn lower(
    cx: &mut LowerCtx,
    id: NodeId,
    node: &Node,
    out: &mut Vec<Dispatch>,
) -> Result<(), GpuError> {
    let label = cx.label(id);
    let bad = |reason: String| GpuError::Lowering { node: label.clone(), reason };
    let (Op::Fft { inverse }, &[x]) = (&node.op, node.inputs.as_slice()) else {
        return Err(bad(format!("{} is not an fft of one operand", node.op.name())));
    };
    let dims = cx.ty(id)?.shape.dims();
    let [.., n, 2] = *dims else {
        return Err(bad(format!("shape {dims:?} is not [..., N, 2]")));
    };
    let rows: usize = dims[..dims.len() - 2].iter().product();
    // No rows: nothing to write.
    let (Some(src), Some(dst)) = (cx.operand(x)?, cx.operand(id)?) else {
        return Ok(());
    };
    let (p, grid) = FftParams::new(rows, n, *inverse)?;
    out.push(Dispatch::new(KernelKey::FftRadix2F32, label, vec![src, dst], &p, grid));
    Ok(())
}
