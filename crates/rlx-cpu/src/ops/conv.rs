//! 2-D convolution and pooling over [N, C, H, W], direct loops with f64 accumulation, and
//! nearest-neighbour ×2 upsampling (a gather of the input's elements).

use super::shape::gather_elems;
use crate::elem::{float_tensor, floats, invalid};
use rayon::prelude::*;
use rlx_backend::BackendError;
use rlx_ir::{PoolKind, Tensor, TensorType};

/// Input coordinate for output coordinate `o`, kernel tap `k`; `None` when it falls in padding.
fn src(o: usize, k: usize, stride: usize, dilation: usize, pad: usize, len: usize) -> Option<usize> {
    (o * stride + k * dilation).checked_sub(pad).filter(|&i| i < len)
}

fn dims4(dims: &[usize], op: &str, what: &str) -> Result<[usize; 4], BackendError> {
    match *dims {
        [a, b, c, d] => Ok([a, b, c, d]),
        _ => Err(invalid(op, format!("{what} of shape {dims:?} is not rank 4"))),
    }
}

/// Window geometry of a convolution (the attributes of `Op::Conv2d`).
pub struct ConvGeom {
    pub stride: [usize; 2],
    pub padding: [usize; 2],
    pub dilation: [usize; 2],
    pub groups: usize,
}

/// Grouped, strided, dilated, zero-padded 2-D convolution (cross-correlation, as in PyTorch).
pub fn conv2d(
    geom: &ConvGeom,
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    out: &TensorType,
) -> Result<Tensor, BackendError> {
    let ConvGeom { stride, padding, dilation, groups } = *geom;
    const OP: &str = "conv2d";
    let [n, c, h, wd] = dims4(x.dims(), OP, "input")?;
    let [o, cg, kh, kw] = dims4(w.dims(), OP, "weight")?;
    let [_, _, oh, ow] = dims4(out.shape.dims(), OP, "output")?;
    let og = o.checked_div(groups).unwrap_or(0);
    if groups == 0 || cg * groups != c || og * groups != o {
        return Err(invalid(
            OP,
            format!("input {:?}, weight {:?} and {groups} groups do not fit", x.dims(), w.dims()),
        ));
    }
    let (xv, wv) = (floats(x, OP)?, floats(w, OP)?);
    let bv = match bias {
        Some(b) => {
            let v = floats(b, OP)?;
            if v.len() != o {
                return Err(invalid(OP, format!("bias has {} elements for {o} output channels", v.len())));
            }
            Some(v)
        }
        None => None,
    };
    let plane = oh * ow;
    let mut res = vec![0f32; n * o * plane];
    if plane == 0 {
        return float_tensor(&out.shape, out.dtype, res);
    }
    // One (image, output channel) plane per task.
    res.par_chunks_mut(plane).enumerate().for_each(|(no, dst)| {
        let (ni, oc) = (no / o, no % o);
        let g = oc / og;
        let b0 = bv.as_ref().map_or(0.0, |b| b[oc] as f64);
        for oy in 0..oh {
            for ox in 0..ow {
                let mut acc = b0;
                for ci in 0..cg {
                    let xc = (ni * c + g * cg + ci) * h;
                    let wc = (oc * cg + ci) * kh;
                    for ky in 0..kh {
                        let Some(iy) = src(oy, ky, stride[0], dilation[0], padding[0], h) else { continue };
                        for kx in 0..kw {
                            let Some(ix) = src(ox, kx, stride[1], dilation[1], padding[1], wd) else {
                                continue;
                            };
                            acc += xv[(xc + iy) * wd + ix] as f64 * wv[(wc + ky) * kw + kx] as f64;
                        }
                    }
                }
                dst[oy * ow + ox] = acc as f32;
            }
        }
    });
    float_tensor(&out.shape, out.dtype, res)
}

/// Max pooling (padding never wins: it acts as −∞; NaN propagates) or average pooling
/// (padding counts as zeros and the sum is divided by the full kernel area).
pub fn pool2d(
    kind: PoolKind,
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 2],
    x: &Tensor,
    out: &TensorType,
) -> Result<Tensor, BackendError> {
    const OP: &str = "pool2d";
    let [n, c, h, w] = dims4(x.dims(), OP, "input")?;
    let [_, _, oh, ow] = dims4(out.shape.dims(), OP, "output")?;
    let xv = floats(x, OP)?;
    let plane = oh * ow;
    let mut res = vec![0f32; n * c * plane];
    if plane == 0 {
        return float_tensor(&out.shape, out.dtype, res);
    }
    let area = (kernel[0] * kernel[1]) as f64;
    res.par_chunks_mut(plane).enumerate().for_each(|(p, dst)| {
        let base = p * h * w;
        for oy in 0..oh {
            for ox in 0..ow {
                let taps = (0..kernel[0])
                    .filter_map(|ky| src(oy, ky, stride[0], 1, padding[0], h))
                    .flat_map(|iy| {
                        (0..kernel[1])
                            .filter_map(move |kx| src(ox, kx, stride[1], 1, padding[1], w))
                            .map(move |ix| iy * w + ix)
                    })
                    .map(|i| xv[base + i] as f64);
                let r = match kind {
                    PoolKind::Max => taps.fold(f64::NEG_INFINITY, |m, e| {
                        if m.is_nan() || e.is_nan() {
                            f64::NAN
                        } else {
                            m.max(e)
                        }
                    }),
                    PoolKind::Avg => taps.sum::<f64>() / area,
                };
                dst[oy * ow + ox] = r as f32;
            }
        }
    });
    float_tensor(&out.shape, out.dtype, res)
}

/// Nearest-neighbour ×2 upsampling of [N, C, H, W].
pub fn upsample2x(x: &Tensor, out: &TensorType) -> Result<Tensor, BackendError> {
    let &[n, c, h, w] = x.dims() else {
        return Err(invalid("upsample2x", format!("input {} is not rank 4", x.shape())));
    };
    let mut idx = Vec::with_capacity(out.numel());
    for p in 0..n * c {
        for y in 0..2 * h {
            idx.extend((0..2 * w).map(|xx| (p * h + y / 2) * w + xx / 2));
        }
    }
    gather_elems(x, &idx, 0.0, out, "upsample2x")
}
