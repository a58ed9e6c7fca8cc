//! Lowering of casts between every pair of stored dtypes: the unary kernel's word maps between
//! the 32-bit dtypes, the cast family's kernels where a packed dtype (f16, bf16, u8) is on
//! either side, and a word copy where the bits stay the same.

use super::shape::copy_step;
use super::{LowerCtx, Site};
use crate::catalog::cast::{CastFn, CastParams};
use crate::catalog::elementwise::{ElementwiseKernel, UnaryFn};
use crate::catalog::shape::params::StridedCopy;
use crate::convert::device_bytes;
use crate::schedule::Dispatch;
use crate::{GpuError, KernelKey, UnaryParams};
use rlx_ir::DType;

/// How one cast runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CastStep {
    /// The words stay the same: a copy of the input's words.
    Copy,
    /// A unary word map (both sides 32-bit).
    Unary(UnaryFn),
    /// A cast-family kernel (a packed dtype on one side).
    Packed(CastFn),
}

/// The step that casts `from` to `to`.
fn cast_step(from: DType, to: DType) -> CastStep {
    use DType::*;
    if let Some(f) = CastFn::new(from, to) {
        return CastStep::Packed(f);
    }
    CastStep::Unary(match (from, to) {
        // Bool words are 0/1: the same words as I32 or U32 0/1. Same dtype: the same words.
        _ if from == to => return CastStep::Copy,
        (Bool, I32 | U32) => return CastStep::Copy,
        (Bool | U32, F32) => UnaryFn::CastU32ToF32,
        (F32, Bool) => UnaryFn::NonzeroF32,
        (I32 | U32, Bool) => UnaryFn::NonzeroWord,
        (F32, I32) => UnaryFn::CastF32ToI32,
        (F32, U32) => UnaryFn::CastF32ToU32,
        (I32, F32) => UnaryFn::CastI32ToF32,
        (I32, U32) => UnaryFn::CastI32ToU32,
        (U32, I32) => UnaryFn::CastU32ToI32,
        // Every pair with a packed side has a cast-family kernel, and every pair of 32-bit
        // dtypes is listed above.
        _ => return CastStep::Copy,
    })
}

pub(super) fn lower(cx: &mut LowerCtx, at: &Site, out: &mut Vec<Dispatch>) -> Result<(), GpuError> {
    let label = &at.label;
    let ty = at.ty();
    let x = at.first_input("a cast needs an input")?;
    let (src, dst) = (cx.operand_nonempty(x)?, cx.operand_nonempty(at.id)?);
    match cast_step(cx.ty(x)?.dtype, ty.dtype) {
        CastStep::Copy => {
            let words = (device_bytes(ty) / 4) as usize;
            out.push(copy_step(label, src, dst, &StridedCopy::contiguous(words))?);
        }
        CastStep::Unary(f) => {
            let (p, grid) = UnaryParams::new(ty.numel())?;
            out.push(at.step(KernelKey::Elementwise(ElementwiseKernel::Unary(f)), vec![src, dst], &p, grid));
        }
        CastStep::Packed(f) => {
            let (p, grid) = CastParams::new(ty.numel(), ty.dtype)?;
            out.push(at.step(KernelKey::Cast(f), vec![src, dst], &p, grid));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{lower, GpuLimits};
    use rlx_ir::Graph;

    #[test]
    fn casts_pick_maps_kernels_or_copies() {
        use DType::*;
        assert_eq!(cast_step(F32, F32), CastStep::Copy);
        assert_eq!(cast_step(F16, F16), CastStep::Copy);
        assert_eq!(cast_step(Bool, I32), CastStep::Copy);
        assert_eq!(cast_step(Bool, F32), CastStep::Unary(UnaryFn::CastU32ToF32));
        assert_eq!(cast_step(F32, Bool), CastStep::Unary(UnaryFn::NonzeroF32));
        assert_eq!(cast_step(I32, U32), CastStep::Unary(UnaryFn::CastI32ToU32));
        assert!(matches!(cast_step(F16, F32), CastStep::Packed(f) if f.from() == F16 && f.to() == F32));
        assert!(matches!(cast_step(Bool, U8), CastStep::Packed(_)));
        // Every pair of different dtypes converts: no pair falls through to a copy.
        for from in DType::ALL {
            for to in DType::ALL {
                let copy = from == to || (from == Bool && matches!(to, I32 | U32));
                assert_eq!(cast_step(from, to) == CastStep::Copy, copy, "{from} → {to}");
            }
        }
    }

    #[test]
    fn packed_casts_launch_one_thread_per_output_word() {
        let mut g = Graph::new("c");
        let x = g.input("x", &[7], DType::F32).unwrap();
        let h = g.cast(x, DType::U8).unwrap();
        let same = g.cast(h, DType::U8).unwrap();
        g.set_outputs(&[h, same]).unwrap();
        let s = lower(&g, &GpuLimits::lavapipe(), &rlx_backend::KernelOptions::default()).unwrap();
        assert!(matches!(s.steps[0].key, KernelKey::Cast(_)));
        // 7 bytes: 2 words, one thread each; the operands cover both words.
        let p: &CastParams = bytemuck::from_bytes(&s.steps[0].params);
        assert_eq!((p.numel, p.words), (7, 2));
        assert_eq!(s.steps[0].operands[1].size, 8);
        // u8 → u8 copies the 2 words.
        assert_eq!(s.steps[1].key, KernelKey::Shape(crate::catalog::shape::ShapeKernel::Copy));
        assert_eq!(s.steps[1].operands[0].size, 8);
    }
}
