//! Lowering of `Op::Custom`: one launch of the op's own kernel, its operands bound read-only in
//! order and the output after them, params words and workgroup counts from the op's launch
//! rule ([`rlx_ir::CustomOp`]).

use super::LowerCtx;
use crate::schedule::Dispatch;
use crate::{GpuError, KernelKey};
use rlx_ir::{Node, NodeId, Op, TensorType};

pub(super) fn lower(
    cx: &mut LowerCtx,
    id: NodeId,
    node: &Node,
    out: &mut Vec<Dispatch>,
) -> Result<(), GpuError> {
    let label = cx.label(id);
    let refuse = |reason: String| GpuError::Lowering { node: label.clone(), reason };
    let Op::Custom(call) = &node.op else {
        return Err(refuse(format!("{} is not a custom op", node.op.name())));
    };
    let op = call.op();
    let key = crate::custom::intern(op, node.inputs.len()).map_err(&refuse)?;
    let w = op.wgsl().ok_or_else(|| refuse(format!("custom op {} has no WGSL kernel", op.name())))?;
    let tys: Vec<&TensorType> = node.inputs.iter().map(|&i| cx.ty(i)).collect::<Result<_, _>>()?;
    let out_ty = cx.ty(id)?;
    let (words, workgroups) = (w.launch)(&tys, out_ty)
        .map_err(|e| refuse(format!("custom op {}: its launch rule failed: {e}", op.name())))?;
    let size = w.params_size as usize;
    if words.len() * 4 > size {
        return Err(refuse(format!(
            "custom op {}: the launch rule gave {} params words ({} bytes) but params_size is {size}",
            op.name(),
            words.len(),
            words.len() * 4
        )));
    }
    let mut params: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    params.resize(size, 0);
    let mut operands = Vec::with_capacity(node.inputs.len() + 1);
    for &i in &node.inputs {
        operands.push(cx.operand_nonempty(i)?);
    }
    operands.push(cx.operand_nonempty(id)?);
    out.push(Dispatch {
        key: KernelKey::Custom(key),
        label,
        operands,
        params,
        workgroups,
        waits_for: Vec::new(),
    });
    Ok(())
}
