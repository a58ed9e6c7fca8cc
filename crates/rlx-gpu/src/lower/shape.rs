//! Lowering of the data-movement family: permute, slice, concat, expand, gather, scatter-add,
//! pad, reverse and reshapes that are not views. All but gather and scatter-add are one
//! strided word copy ([`StridedCopy`]) per output region; pad first fills the whole output
//! with its value. Every dtype moves as 32-bit words, so nothing here depends on the dtype
//! except pad's fill and the scatter-add, which sums f32.

use super::{LowerCtx, Site};
use crate::catalog::shape::params::CopyParams;
use crate::catalog::shape::params::FillParams;
use crate::catalog::shape::params::GatherParams;
use crate::catalog::shape::params::ScatterAddParams;
use crate::catalog::shape::params::StridedCopy;
use crate::catalog::shape::ShapeKernel;
use crate::catalog::WordType;
use crate::schedule::{Dispatch, Operand};
use crate::{GpuError, KernelKey};
use rlx_ir::{DType, Node, Op};

/// The word type a dtype computes as (Bool words as U32). The packed dtypes (f16, bf16, u8)
/// have none: only the cast kernels take them (see [`packed_refused`]).
pub(super) fn word_type(dtype: DType, label: &str) -> Result<WordType, GpuError> {
    match dtype {
        DType::F32 => Ok(WordType::F32),
        DType::I32 => Ok(WordType::I32),
        DType::U32 | DType::Bool => Ok(WordType::U32),
        DType::F16 | DType::BF16 | DType::U8 => Err(packed_refused(label, dtype)),
    }
}

/// The error for a kernel other than a cast meeting a packed dtype: rlx-opt's dtype
/// legalization wraps every such op in casts, so this is a pipeline bug, reported instead of
/// running a word kernel on 2- or 1-byte elements.
/// Whether `node` moves rows of an even count of 2-byte elements as stored words: a gather
/// (the word gather kernel) or a state row write (the word `write_rows` kernel);
/// [`crate::capabilities`] sets `packed_rows`.
pub(super) fn packed_rows(cx: &LowerCtx, node: &Node) -> Result<bool, GpuError> {
    if !matches!(node.op, Op::Gather { .. } | Op::WriteRows { .. }) {
        return Ok(false);
    }
    let inputs = node.inputs.iter().map(|&i| cx.ty(i)).collect::<Result<Vec<_>, _>>()?;
    Ok(rlx_backend::Capabilities::moves_packed_rows(&node.op, &inputs))
}

pub(super) fn packed_refused(label: &str, dtype: DType) -> GpuError {
    GpuError::Lowering {
        node: label.to_string(),
        reason: format!(
            "GPU kernels compute on 32-bit words and {dtype} is stored in {} bytes; rlx-opt should \
             have cast it to a word dtype around this op (the capabilities list {dtype} as stored, \
             not computed)",
            crate::convert::stored_size(dtype)
        ),
    }
}

/// The word that stands for `value` in a tensor of `dtype`, converted like a cast (rlx-cpu's
/// `from_f64`): f32 rounds, integers truncate and saturate, Bool is `!= 0`.
pub(super) fn fill_word(value: f64, dtype: DType, label: &str) -> Result<u32, GpuError> {
    Ok(match word_type(dtype, label)? {
        WordType::F32 => (value as f32).to_bits(),
        WordType::I32 => (value as i32) as u32,
        WordType::U32 if dtype == DType::Bool => (value != 0.0) as u32,
        WordType::U32 => value as u32,
    })
}

/// One copy step (none is needed for an empty box, but callers skip those).
pub(super) fn copy_step(
    label: &str,
    src: Operand,
    dst: Operand,
    copy: &StridedCopy,
) -> Result<Dispatch, GpuError> {
    let (p, grid) = CopyParams::new(copy)?;
    Ok(Dispatch::new(KernelKey::Shape(ShapeKernel::Copy), label, vec![src, dst], &p, grid))
}

/// One fill step over the `numel` words of `dst`.
pub(super) fn fill_step(label: &str, dst: Operand, numel: usize, value: u32) -> Result<Dispatch, GpuError> {
    let (p, grid) = FillParams::new(numel, value)?;
    Ok(Dispatch::new(KernelKey::Shape(ShapeKernel::Fill), label, vec![dst], &p, grid))
}

/// Row-major strides of `dims`, signed.
fn strides(dims: &[usize]) -> Vec<i64> {
    let mut s = vec![1i64; dims.len()];
    for d in (0..dims.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * dims[d + 1] as i64;
    }
    s
}

/// Elements before, at and after `axis` of `dims`.
pub(super) fn split_at_axis(dims: &[usize], axis: usize) -> (usize, usize, usize) {
    let outer = dims.iter().take(axis).product();
    let len = dims.get(axis).copied().unwrap_or(1);
    let inner = dims.iter().skip(axis + 1).product();
    (outer, len, inner)
}

pub(super) fn lower(cx: &mut LowerCtx, at: &Site, out: &mut Vec<Dispatch>) -> Result<(), GpuError> {
    let (id, node) = (at.id, at.node);
    let label = &at.label;
    let ty = at.ty();
    let out_dims = ty.shape.dims();
    let dst = cx.operand_nonempty(id)?;
    let x = at.first_input("the node has no input")?;
    let x_dims = cx.ty(x)?.shape.dims();
    let x_len = cx.ty(x)?.numel();
    let n = ty.numel();
    // A box read from x with x's strides, written contiguously to the output.
    let gather_copy = |src_strides: Vec<i64>, src_base: i64| StridedCopy {
        shape: out_dims.to_vec(),
        src_strides,
        src_base,
        src_len: x_len,
        out_strides: strides(out_dims),
        out_base: 0,
        out_len: n,
    };
    let xs = strides(x_dims);
    match &node.op {
        Op::Reshape(_) => {
            // The same bytes: a copy of whole words serves every dtype, packed ones included.
            let words = (crate::convert::device_bytes(ty) / 4) as usize;
            out.push(copy_step(label, cx.operand_nonempty(x)?, dst, &StridedCopy::contiguous(words))?)
        }
        Op::Permute(perm) => {
            let src =
                perm.iter().map(|&p| xs.get(p).copied().ok_or_else(|| at.bad(format!("bad perm {perm:?}"))));
            let copy = gather_copy(src.collect::<Result<_, _>>()?, 0);
            out.push(copy_step(label, cx.operand_nonempty(x)?, dst, &copy)?);
        }
        Op::Slice { axis, start, step, .. } => {
            let mut src = xs.clone();
            let s = src.get_mut(*axis).ok_or_else(|| at.bad(format!("axis {axis} out of range")))?;
            let base = *start as i64 * *s;
            *s *= *step as i64;
            out.push(copy_step(label, cx.operand_nonempty(x)?, dst, &gather_copy(src, base))?);
        }
        Op::Expand(_) => {
            let lead = out_dims.len().saturating_sub(x_dims.len());
            let src = (0..out_dims.len())
                .map(|d| match d.checked_sub(lead) {
                    Some(j) if x_dims[j] != 1 => xs[j],
                    _ => 0,
                })
                .collect();
            out.push(copy_step(label, cx.operand_nonempty(x)?, dst, &gather_copy(src, 0))?);
        }
        Op::Reverse { axes } => {
            let (mut src, mut base) = (xs.clone(), 0i64);
            for &a in axes {
                if let (Some(s), Some(&d)) = (src.get_mut(a), x_dims.get(a)) {
                    base += (d as i64 - 1).max(0) * *s;
                    *s = -*s;
                }
            }
            out.push(copy_step(label, cx.operand_nonempty(x)?, dst, &gather_copy(src, base))?);
        }
        Op::Pad { pads, value } => {
            let word = fill_word(*value, ty.dtype, label)?;
            out.push(fill_step(label, dst, n, word)?);
            if let Some(src) = cx.operand(x)? {
                let os = strides(out_dims);
                let base = pads.iter().zip(&os).map(|(&(before, _), &s)| before as i64 * s).sum();
                let copy = StridedCopy {
                    shape: x_dims.to_vec(),
                    src_strides: xs.clone(),
                    src_base: 0,
                    src_len: x_len,
                    out_strides: os,
                    out_base: base,
                    out_len: n,
                };
                out.push(copy_step(label, src, dst, &copy)?);
            }
        }
        Op::Concat { axis } => {
            let os = strides(out_dims);
            let step = *os.get(*axis).ok_or_else(|| at.bad(format!("axis {axis} out of range")))?;
            let mut offset = 0i64;
            for &part in &node.inputs {
                let pty = cx.ty(part)?;
                let along = pty.shape.dims().get(*axis).copied().unwrap_or(1);
                // An empty part writes nothing; the others cover the whole output.
                if let Some(src) = cx.operand(part)? {
                    let copy = StridedCopy {
                        shape: pty.shape.dims().to_vec(),
                        src_strides: strides(pty.shape.dims()),
                        src_base: 0,
                        src_len: pty.numel(),
                        out_strides: os.clone(),
                        out_base: offset * step,
                        out_len: n,
                    };
                    out.push(copy_step(label, src, dst, &copy)?);
                }
                offset += along as i64;
            }
        }
        Op::Gather { axis } => {
            let idx = *node.inputs.get(1).ok_or_else(|| at.bad("gather needs indices"))?;
            let (outer, len, mut inner) = split_at_axis(x_dims, *axis);
            let nidx = cx.ty(idx)?.numel();
            let mut n = n;
            // Rows of an even count of 2-byte elements move as words (packed_rows).
            if packed_rows(cx, node)? {
                inner /= 2;
                n /= 2;
            }
            match cx.operand(x)? {
                Some(data) => {
                    let (p, grid) = GatherParams::new(outer, len, inner, nidx)?;
                    let operands = vec![data, cx.operand_nonempty(idx)?, dst];
                    out.push(at.step(KernelKey::Shape(ShapeKernel::Gather), operands, &p, grid));
                }
                // Empty data (len = 0): every index is out of range, so every output is 0.
                None => out.push(fill_step(label, dst, n, 0)?),
            }
        }
        Op::ScatterAdd { axis, len } => {
            if ty.dtype != DType::F32 {
                return Err(packed_refused(label, ty.dtype));
            }
            let src = *node.inputs.get(1).ok_or_else(|| at.bad("scatter_add needs a source"))?;
            let (outer, _, inner) = split_at_axis(out_dims, *axis);
            match cx.operand(src)? {
                Some(s) => {
                    let (p, grid) = ScatterAddParams::new(outer, *len, inner, cx.ty(x)?.numel())?;
                    let operands = vec![cx.operand_nonempty(x)?, s, dst];
                    out.push(at.step(KernelKey::Shape(ShapeKernel::ScatterAdd), operands, &p, grid));
                }
                // No ids (an empty source): nothing is added, every output is +0.0.
                None => out.push(fill_step(label, dst, n, 0)?),
            }
        }
        other => return Err(at.bad(format!("{} is not a data-movement op", other.name()))),
    }
    Ok(())
}

/// A reshape whose memory plan makes it a view needs no step; otherwise it is a copy.
pub(super) fn lower_reshape(cx: &mut LowerCtx, at: &Site, out: &mut Vec<Dispatch>) -> Result<(), GpuError> {
    if cx.plan.view_of.get(at.id.index()).copied().flatten().is_some() {
        return Ok(());
    }
    lower(cx, at, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_words_follow_cast_rules() {
        assert_eq!(fill_word(1.5, DType::F32, "n").unwrap(), 1.5f32.to_bits());
        assert_eq!(fill_word(-2.7, DType::I32, "n").unwrap(), (-2i32) as u32);
        assert_eq!(fill_word(-2.7, DType::U32, "n").unwrap(), 0);
        assert_eq!(fill_word(1e12, DType::I32, "n").unwrap(), i32::MAX as u32);
        assert_eq!(fill_word(0.5, DType::Bool, "n").unwrap(), 1);
        assert_eq!(fill_word(0.0, DType::Bool, "n").unwrap(), 0);
        for d in [DType::F16, DType::BF16, DType::U8] {
            let e = fill_word(0.0, d, "%3 pad").unwrap_err();
            assert!(e.to_string().contains(&format!("{d} is stored in")), "{e}");
        }
    }

    #[test]
    fn strides_and_axis_split() {
        assert_eq!(strides(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(strides(&[]), Vec::<i64>::new());
        assert_eq!(split_at_axis(&[2, 3, 5], 1), (2, 3, 5));
        assert_eq!(split_at_axis(&[7], 0), (1, 7, 1));
    }
}
