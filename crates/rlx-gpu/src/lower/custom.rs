//! Lowering of `Op::Custom`: one launch of the op's own kernel, its operands bound read-only in
//! order and the output after them, params words and workgroup counts from the op's launch
//! rule ([`rlx_ir::CustomOp`]).

use super::{LowerCtx, Site};
use crate::schedule::Dispatch;
use crate::{GpuError, KernelKey};
use rlx_ir::{Op, TensorType};

pub(super) fn lower(cx: &mut LowerCtx, at: &Site, out: &mut Vec<Dispatch>) -> Result<(), GpuError> {
    let node = at.node;
    let Op::Custom(call) = &node.op else {
        return Err(at.bad(format!("{} is not a custom op", node.op.name())));
    };
    let op = call.op();
    let key = crate::custom::intern(op, node.inputs.len()).map_err(|e| at.bad(e))?;
    let w = op.wgsl().ok_or_else(|| at.bad(format!("custom op {} has no WGSL kernel", op.name())))?;
    let tys: Vec<&TensorType> = node.inputs.iter().map(|&i| cx.ty(i)).collect::<Result<_, _>>()?;
    let out_ty = at.ty();
    let (words, workgroups) = (w.launch)(&tys, out_ty)
        .map_err(|e| at.bad(format!("custom op {}: its launch rule failed: {e}", op.name())))?;
    let size = w.params_size as usize;
    if words.len() * 4 > size {
        return Err(at.bad(format!(
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
    operands.push(cx.operand_nonempty(at.id)?);
    out.push(Dispatch {
        key: KernelKey::Custom(key),
        label: at.label.clone(),
        operands,
        params,
        workgroups,
        waits_for: Vec::new(),
    });
    Ok(())
}
