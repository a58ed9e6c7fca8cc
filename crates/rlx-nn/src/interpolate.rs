//! Resizing NCHW images (PyTorch's `F.interpolate` in modes `nearest` and `bilinear`) with
//! `Gather` on constant indices and elementwise ops on constant weights.
//!
//! Each axis is resized on its own, W first and then H (the order of PyTorch's kernels). The
//! source positions and weights are computed on the host when the graph is built, in f32
//! exactly as PyTorch computes them for f32 tensors, so nearest picks the same pixel even where
//! `floor` sits on a rounding edge. Bilinear along one axis is
//! `l0 · gather(x, i0) + l1 · gather(x, i1)`. Why gathers and not a matmul with a dense
//! interpolation matrix: two taps per output element move O(output) bytes where the matrix
//! moves O(output · input) multiply-adds, and a NaN stays with its neighbours, as in PyTorch,
//! instead of spreading to whole rows through the zero weights.

use crate::layers::float_dtype;
use rlx_ir::{Graph, IrError, NodeId, Shape, Tensor};

/// How [`Graph::interpolate`] maps an output pixel to input pixels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum InterpolateMode {
    /// PyTorch's `nearest`: input index `min(⌊dst · scale⌋, in − 1)`, with `scale` =
    /// in / out (or 1 / scale_factor when a scale factor is given), in f32: the rule of
    /// PyTorch's CUDA kernel. (PyTorch's CPU kernel copies when out = in and halves when
    /// out = 2·in even if a scale factor says otherwise; the two agree whenever `Size` is
    /// used or the factor is exactly out / in.)
    Nearest,
    /// PyTorch's `bilinear`. With `align_corners` the corner pixels of input and output align:
    /// src = dst · (in − 1) / (out − 1). Without it pixel centres align:
    /// src = max((dst + 0.5) · scale − 0.5, 0) with `scale` as for `Nearest`.
    Bilinear { align_corners: bool },
}

/// The output size of [`Graph::interpolate`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum InterpolateSize {
    /// The output [height, width].
    Size([usize; 2]),
    /// Scale factors [height, width]: out = ⌊in · factor⌋, and the source positions use
    /// 1 / factor (PyTorch's `scale_factor` with `recompute_scale_factor` unset).
    Scale([f64; 2]),
}

/// One axis: input length, output length, and the f32 scale PyTorch computes.
struct AxisMap {
    len: usize,
    out: usize,
    /// `Some(1 / factor)` when a scale factor was given.
    inv_factor: Option<f64>,
}

impl AxisMap {
    /// PyTorch's `compute_scales_value` / `area_pixel_compute_scale`, in f32.
    fn scale(&self, align_corners: bool) -> f32 {
        if align_corners {
            if self.out > 1 {
                (self.len as f32 - 1.0) / (self.out as f32 - 1.0)
            } else {
                0.0
            }
        } else {
            match self.inv_factor {
                Some(s) => s as f32,
                None => self.len as f32 / self.out as f32,
            }
        }
    }

    fn nearest(&self) -> Vec<i32> {
        let scale = self.scale(false);
        let last = self.len.saturating_sub(1);
        (0..self.out).map(|o| ((o as f32 * scale).floor() as usize).min(last) as i32).collect()
    }

    /// (i0, i1, l0, l1) per output position.
    fn linear(&self, align_corners: bool) -> (Vec<i32>, Vec<i32>, Vec<f32>, Vec<f32>) {
        let scale = self.scale(align_corners);
        let last = self.len.saturating_sub(1);
        let mut taps = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for o in 0..self.out {
            let src =
                if align_corners { scale * o as f32 } else { (scale * (o as f32 + 0.5) - 0.5).max(0.0) };
            let i0 = (src as usize).min(last);
            let l1 = (src - i0 as f32).clamp(0.0, 1.0);
            taps.0.push(i0 as i32);
            taps.1.push((i0 + usize::from(i0 < last)) as i32);
            taps.2.push(1.0 - l1);
            taps.3.push(l1);
        }
        taps
    }
}

/// Image resizing (PyTorch's `F.interpolate`, nearest and bilinear) with gathers and elementwise ops.
pub trait InterpolateExt: AsMut<Graph> {
    /// Resizes x [N, C, H, W] (float) to [N, C, OH, OW] like PyTorch's
    /// `F.interpolate(x, size | scale_factor, mode)` for `mode` in `nearest` and `bilinear`
    /// (with either `align_corners`). Errors name `interpolate`: a rank other than 4, an integer
    /// dtype, a zero input or output size, or a scale factor that is not finite and positive.
    fn interpolate(
        &mut self,
        x: NodeId,
        size: InterpolateSize,
        mode: InterpolateMode,
    ) -> Result<NodeId, IrError> {
        const OP: &str = "interpolate";
        self.as_mut().atomically(|g| {
            let t = g.ty_for(OP, x)?.clone();
            let attr = |a: &'static str, reason: String| IrError::Attribute {
                op: OP,
                attr: a,
                shape: t.shape.clone(),
                reason,
            };
            let &[_, _, h, w] = t.shape.dims() else {
                return Err(attr("input rank", "x must be [N, C, H, W]; add a batch dim of 1 with reshape".into()));
            };
            float_dtype(OP, t.dtype)?;
            if h == 0 || w == 0 {
                return Err(attr("size", "the input height and width must be ≥ 1".into()));
            }
            let maps = match size {
                InterpolateSize::Size([oh, ow]) => {
                    [AxisMap { len: h, out: oh, inv_factor: None }, AxisMap { len: w, out: ow, inv_factor: None }]
                }
                InterpolateSize::Scale(f) => {
                    let mut maps = Vec::with_capacity(2);
                    for (len, s) in [(h, f[0]), (w, f[1])] {
                        let out = len as f64 * s;
                        if !(s.is_finite() && s > 0.0 && out < u32::MAX as f64) {
                            return Err(attr(
                                "scale_factor",
                                format!("scale factors {f:?} must be finite, positive and keep the size below 2³²"),
                            ));
                        }
                        maps.push(AxisMap { len, out: out.floor() as usize, inv_factor: Some(1.0 / s) });
                    }
                    let [mh, mw] = <[AxisMap; 2]>::try_from(maps)
                        .map_err(|_| attr("scale_factor", "internal: two axes expected".into()))?;
                    [mh, mw]
                }
            };
            if maps.iter().any(|m| m.out == 0) {
                return Err(attr(
                    "size",
                    format!(
                        "the output size [{}, {}] must be ≥ 1 on both axes; use a larger size or scale factor",
                        maps[0].out, maps[1].out
                    ),
                ));
            }
            let mut dims = t.shape.dims().to_vec();
            dims[2] = maps[0].out;
            dims[3] = maps[1].out;
            Shape::new(&dims).check_size(OP, t.dtype)?;
            let mut y = x;
            for (axis, m) in [(3usize, &maps[1]), (2, &maps[0])] {
                y = match mode {
                    InterpolateMode::Nearest => gather_const(g, y, axis, m.nearest())?,
                    InterpolateMode::Bilinear { align_corners } => {
                        let (i0, i1, l0, l1) = m.linear(align_corners);
                        let a = gather_const(g, y, axis, i0)?;
                        let b = gather_const(g, y, axis, i1)?;
                        let wa = axis_weights(g, axis, l0, t.dtype)?;
                        let wb = axis_weights(g, axis, l1, t.dtype)?;
                        let a = g.mul(wa, a)?;
                        let b = g.mul(wb, b)?;
                        g.add(a, b)?
                    }
                };
            }
            Ok(y)
        })
    }
}

impl InterpolateExt for Graph {}

/// `x` gathered along `axis` at constant I32 `indices`.
fn gather_const(g: &mut Graph, x: NodeId, axis: usize, indices: Vec<i32>) -> Result<NodeId, IrError> {
    let n = indices.len();
    let idx = g.constant(Tensor::from_i32(&[n][..], indices)?)?;
    g.gather(x, idx, axis as isize)
}

/// Per-position weights along `axis` of an NCHW tensor, shaped to broadcast there.
fn axis_weights(g: &mut Graph, axis: usize, v: Vec<f32>, dtype: rlx_ir::DType) -> Result<NodeId, IrError> {
    let n = v.len();
    let dims: &[usize] = if axis == 3 { &[n] } else { &[n, 1] };
    let v64: Vec<f64> = v.into_iter().map(f64::from).collect();
    g.constant(Tensor::from_f64(dims, dtype, &v64)?)
}
