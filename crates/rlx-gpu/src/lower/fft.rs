//! Lowering of `Op::Fft`: one step of `fft_radix2.wgsl` over every row of x `[..., N, 2]`.

use super::{LowerCtx, Site};
use crate::catalog::fft::{FftKernel, FftParams};
use crate::schedule::Dispatch;
use crate::{GpuError, KernelKey};
use rlx_ir::Op;

pub(super) fn lower(cx: &mut LowerCtx, at: &Site, out: &mut Vec<Dispatch>) -> Result<(), GpuError> {
    let (Op::Fft { inverse }, &[x]) = (&at.node.op, at.node.inputs.as_slice()) else {
        return Err(at.bad(format!("{} is not an fft of one operand", at.node.op.name())));
    };
    let dims = at.ty().shape.dims();
    let [.., n, 2] = *dims else {
        return Err(at.bad(format!("shape {dims:?} is not [..., N, 2]")));
    };
    let rows: usize = dims[..dims.len() - 2].iter().product();
    // No rows: nothing to write.
    let (Some(src), Some(dst)) = (cx.operand(x)?, cx.operand(at.id)?) else {
        return Ok(());
    };
    let (p, grid) = FftParams::new(rows, n, *inverse)?;
    out.push(at.step(KernelKey::Fft(FftKernel::Radix2F32), vec![src, dst], &p, grid));
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::catalog::fft::{FftKernel, FftParams};
    use crate::schedule::GpuLimits;
    use crate::{lower, KernelKey};
    use rlx_backend::KernelOptions;
    use rlx_ir::{DType, Graph};

    #[test]
    fn one_step_per_transform_with_rows_packed() {
        let mut g = Graph::new("fft");
        let x = g.input("x", &[7, 100, 16, 2], DType::F32).unwrap();
        let y = g.fft(x, true).unwrap();
        g.set_outputs(&[y]).unwrap();
        let s = lower(&g, &GpuLimits::lavapipe(), &KernelOptions::default()).unwrap().into_inner();
        assert_eq!(s.steps.len(), 1);
        let step = &s.steps[0];
        assert_eq!(step.key, KernelKey::Fft(FftKernel::Radix2F32));
        // 700 rows of 16, 128 rows a workgroup: 6 workgroups.
        assert_eq!(step.workgroups, [6, 1, 1]);
        let p: FftParams = bytemuck::pod_read_unaligned(&step.params);
        assert_eq!((p.n, p.log2n, p.rows, p.per_group, p.inverse), (16, 4, 700, 128, 1));
        // No rows: nothing to launch.
        let mut g = Graph::new("empty");
        let x = g.input("x", &[0, 8, 2], DType::F32).unwrap();
        let y = g.fft(x, false).unwrap();
        g.set_outputs(&[y]).unwrap();
        let s = lower(&g, &GpuLimits::lavapipe(), &KernelOptions::default()).unwrap().into_inner();
        assert!(s.steps.is_empty());
    }
}
