//! Lowering of `Op::Random`: one step of `random_philox.wgsl` reading the key and writing every
//! element (see the kernel for the recipe, shared with rlx-cpu).

use super::{LowerCtx, Site};
use crate::catalog::random::RandomParams;
use crate::schedule::Dispatch;
use crate::{GpuError, KernelKey};
use rlx_ir::Op;

pub(super) fn lower(cx: &mut LowerCtx, at: &Site, out: &mut Vec<Dispatch>) -> Result<(), GpuError> {
    let Op::Random { dist, .. } = &at.node.op else {
        return Err(at.bad(format!("{} is not random", at.node.op.name())));
    };
    let key = at.first_input("the node has no key input")?;
    let dst = cx.operand_nonempty(at.id)?;
    let (p, grid) = RandomParams::new(at.ty().numel())?;
    out.push(at.step(KernelKey::Random(*dist), vec![cx.operand_nonempty(key)?, dst], &p, grid));
    Ok(())
}
