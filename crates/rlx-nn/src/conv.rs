//! Vision and audio layers built from the native ops:
//! - 1-D convolution and pooling on [N, C, L] data, as PyTorch's `conv1d`, `max_pool1d` and
//!   `avg_pool1d`. Each is the 2-D op on a height of one: the reshapes around it are views, so
//!   nothing is copied, and every backend that runs `Conv2d`/`Pool2d` (natively or decomposed)
//!   runs these too.
//! - The channel-wise `layer_norm2d` of ConvNeXt- and SAM-style encoders on [N, C, H, W].
//! - 3-D convolution (PyTorch's `conv3d`) as one `Conv2d` over depth windows folded into channels.
//!
//!   x [N, C, D, H, W] moves depth next to batch once ([N, D, C, H, W]), is zero-padded in depth,
//!   and the KD depth taps of every output depth are stacked after the channels: [N·OD, C·KD, H,
//!   W], channel c·KD + kd being input depth od·stride + kd·dilation. The weight [O, C / groups,
//!   KD, KH, KW] reshaped to [O, C / groups · KD, KH, KW] (a view) matches that channel order,
//!   groups included, so a single `Conv2d` with the H/W attributes computes every output. Why
//!   not KD separate `Conv2d`s summed: the same KD copies of the input, plus KD − 1 output-sized
//!   partial sums written and read again, and KD matmuls of depth C/groups·KH·KW instead of one
//!   of depth C/groups·KD·KH·KW (a better shape for the tiled and tensor-core kernels).

use rlx_ir::{Graph, IrError, NodeId, Shape, ShapeList};

/// [N, C, L] of `x`, or an error naming `op` and the shape.
fn ncl(g: &Graph, op: &'static str, x: NodeId) -> Result<[usize; 3], IrError> {
    let shape = g.ty(x)?.shape.clone();
    match *shape.dims() {
        [n, c, l] => Ok([n, c, l]),
        _ => Err(IrError::Attribute {
            op,
            attr: "input rank",
            shape,
            reason: "the input must be [batch, channels, length]; add a batch dim of 1 with reshape".into(),
        }),
    }
}

/// Runs the 2-D op `f` on 1-D operands: each `(id, [a, b, len])` viewed as [a, b, 1, len], and
/// the result [N, C, 1, L'] viewed back as [N, C, L']. The reshapes are views (nothing is
/// copied). Serves conv1d, the 1-D pools and conv_transpose1d.
pub(crate) fn on_height_one<const K: usize>(
    g: &mut Graph,
    operands: [(NodeId, [usize; 3]); K],
    f: impl FnOnce(&mut Graph, [NodeId; K]) -> Result<NodeId, IrError>,
) -> Result<NodeId, IrError> {
    let mut views = [NodeId(0); K];
    for (view, (id, [a, b, len])) in views.iter_mut().zip(operands) {
        *view = g.reshape(id, &[a, b, 1, len])?;
    }
    let y = f(g, views)?;
    let out = g.ty(y)?.shape.dims().to_vec();
    g.reshape(y, &[out[0], out[1], out[3]])
}

/// Convolutions and pooling over other ranks than the native 2-D ops, built on them: 1-D, 3-D, and `layer_norm2d`.
pub trait ConvExt: AsMut<Graph> {
    /// 1-D convolution (cross-correlation, like PyTorch) of x [N, C, L] with w [O, C / groups, K]
    /// and an optional bias \[O\]: [N, O, ⌊(L + 2·padding − dilation·(K − 1) − 1) / stride⌋ + 1].
    /// Errors name `conv1d` and the shapes (through `conv2d` for channel and group mismatches).
    #[allow(clippy::too_many_arguments)]
    fn conv1d(
        &mut self,
        x: NodeId,
        w: NodeId,
        bias: Option<NodeId>,
        stride: usize,
        padding: usize,
        dilation: usize,
        groups: usize,
    ) -> Result<NodeId, IrError> {
        self.as_mut().atomically(|g| {
            let [n, c, l] = ncl(g, "conv1d", x)?;
            let wshape: Shape = g.ty(w)?.shape.clone();
            let [o, ci, k] = match *wshape.dims() {
                [o, ci, k] => [o, ci, k],
                _ => {
                    return Err(IrError::Attribute {
                        op: "conv1d",
                        attr: "weight rank",
                        shape: wshape,
                        reason: "the weight must be [out channels, in channels / groups, kernel]".into(),
                    })
                }
            };
            on_height_one(g, [(x, [n, c, l]), (w, [o, ci, k])], |g, [x4, w4]| {
                g.conv2d(x4, w4, bias, [1, stride], [0, padding], [1, dilation], groups)
            })
        })
    }

    /// 1-D max pooling over the last axis of x [N, C, L] (padding counts as −∞).
    fn max_pool1d(
        &mut self,
        x: NodeId,
        kernel: usize,
        stride: usize,
        padding: usize,
    ) -> Result<NodeId, IrError> {
        pool1d(self.as_mut(), x, kernel, stride, padding, true)
    }

    /// 1-D average pooling over the last axis of x [N, C, L]; padded positions count in the
    /// divisor (PyTorch's default).
    fn avg_pool1d(
        &mut self,
        x: NodeId,
        kernel: usize,
        stride: usize,
        padding: usize,
    ) -> Result<NodeId, IrError> {
        pool1d(self.as_mut(), x, kernel, stride, padding, false)
    }

    /// LayerNorm over the channels of x [N, C, H, W] at every position (ConvNeXt's and SAM's
    /// `LayerNorm2d`): (x − mean_c) / sqrt(var_c + eps) · γ\[c\] + β\[c\], γ and β \[C\] (ones and
    /// zeros when absent). The layer norm over axis 1: the channels move last and back.
    fn layer_norm2d(
        &mut self,
        x: NodeId,
        gamma: Option<NodeId>,
        beta: Option<NodeId>,
        eps: f32,
    ) -> Result<NodeId, IrError> {
        let g = self.as_mut();
        let shape = g.ty(x)?.shape.clone();
        if shape.rank() != 4 {
            return Err(IrError::Attribute {
                op: "layer_norm2d",
                attr: "input rank",
                shape,
                reason: "the input must be [batch, channels, height, width]".into(),
            });
        }
        g.layer_norm(x, gamma, beta, 1, eps)
    }

    /// 3-D convolution (cross-correlation, like PyTorch) of x [N, C, D, H, W] with
    /// w [O, C / groups, KD, KH, KW] and an optional bias \[O\]; `stride`, `padding` and
    /// `dilation` are per axis (D, H, W). Output [N, O, OD, OH, OW] with
    /// OD = ⌊(D + 2·padding\[0\] − dilation\[0\]·(KD − 1) − 1) / stride\[0\]⌋ + 1 (H and W likewise).
    /// Errors name `conv3d` and both shapes.
    #[allow(clippy::too_many_arguments)]
    fn conv3d(
        &mut self,
        x: NodeId,
        w: NodeId,
        bias: Option<NodeId>,
        stride: [usize; 3],
        padding: [usize; 3],
        dilation: [usize; 3],
        groups: usize,
    ) -> Result<NodeId, IrError> {
        const OP: &str = "conv3d";
        self.as_mut().atomically(|g| {
            let xs = g.shape_of(OP, x)?;
            let ws = g.shape_of(OP, w)?;
            let mismatch = |reason: String| IrError::ShapeMismatch {
                op: OP,
                shapes: ShapeList(vec![xs.clone(), ws.clone()]),
                reason,
            };
            let (&[n, c, d, h, wd], &[o, cg, kd, kh, kw]) = (xs.dims(), ws.dims()) else {
                return Err(mismatch(
                    "x must be [N, C, D, H, W] and w [O, C / groups, KD, KH, KW]; add a batch dim of 1 \
                     with reshape"
                        .into(),
                ));
            };
            if groups == 0 || stride.contains(&0) || dilation.contains(&0) {
                return Err(IrError::Attribute {
                    op: OP,
                    attr: "groups/stride/dilation",
                    shape: xs.clone(),
                    reason: format!(
                        "groups = {groups}, stride {stride:?} and dilation {dilation:?} must all be ≥ 1"
                    ),
                });
            }
            if c % groups != 0 || o % groups != 0 || cg * groups != c {
                return Err(mismatch(format!(
                    "groups = {groups} must divide the input channels {c} and the output channels {o}, \
                     and w's dim 1 ({cg}) must be C / groups"
                )));
            }
            if kd == 0 || kh == 0 || kw == 0 {
                return Err(mismatch("the kernel has a zero-sized dim".into()));
            }
            let padded = d as u128 + 2 * padding[0] as u128;
            let window = dilation[0] as u128 * (kd as u128 - 1) + 1;
            if window > padded {
                return Err(mismatch(format!(
                    "the depth window spans {window} but the padded depth is only {padded} ({d} + \
                     2·{}); use a smaller kernel or dilation, or more padding",
                    padding[0]
                )));
            }
            let od = usize::try_from((padded - window) / stride[0] as u128 + 1)
                .map_err(|_| mismatch("output depth overflows".into()))?;
            if let Some(b) = bias {
                let bs = g.shape_of(OP, b)?;
                if bs.dims() != [o] {
                    return Err(IrError::ShapeMismatch {
                        op: OP,
                        shapes: ShapeList(vec![ws.clone(), bs]),
                        reason: format!("bias must be 1-D [{o}] (one per output channel)"),
                    });
                }
            }
            let (Some(nod), Some(ckd)) = (n.checked_mul(od), c.checked_mul(kd)) else {
                return Err(mismatch("the folded batch·depth or channels·kernel overflows".into()));
            };
            // Depth next to batch, then padded in depth.
            let xt = g.permute(x, &[0, 2, 1, 3, 4])?;
            let xt = if padding[0] > 0 {
                g.pad(xt, &[(0, 0), (padding[0], padding[0]), (0, 0), (0, 0), (0, 0)], 0.0)?
            } else {
                xt
            };
            let mut taps = Vec::with_capacity(kd);
            for k in 0..kd {
                let start = k * dilation[0];
                let end = start + (od - 1) * stride[0] + 1;
                let t = g.slice(xt, 1, start, end, stride[0])?;
                taps.push(g.reshape(t, &[n, od, c, 1, h, wd])?);
            }
            let stacked = if taps.len() == 1 { taps[0] } else { g.concat(&taps, 3)? };
            let x2 = g.reshape(stacked, &[nod, ckd, h, wd])?;
            let w2 = g.reshape(w, &[o, cg * kd, kh, kw])?;
            let y = g
                .conv2d(
                    x2,
                    w2,
                    bias,
                    [stride[1], stride[2]],
                    [padding[1], padding[2]],
                    [dilation[1], dilation[2]],
                    groups,
                )
                .map_err(|e| match e {
                    // conv2d's own errors name the folded shapes; restate them for conv3d.
                    IrError::ShapeMismatch { reason, .. } => mismatch(reason),
                    other => other,
                })?;
            let ys = g.shape_of(OP, y)?;
            let &[_, _, oh, ow] = ys.dims() else {
                return Err(mismatch("internal: conv2d gave a non-4-D result".into()));
            };
            let y = g.reshape(y, &[n, od, o, oh, ow])?;
            g.permute(y, &[0, 2, 1, 3, 4])
        })
    }
}

impl ConvExt for Graph {}

fn pool1d(
    g: &mut Graph,
    x: NodeId,
    kernel: usize,
    stride: usize,
    padding: usize,
    max: bool,
) -> Result<NodeId, IrError> {
    g.atomically(|g| {
        let [n, c, l] = ncl(g, if max { "max_pool1d" } else { "avg_pool1d" }, x)?;
        on_height_one(g, [(x, [n, c, l])], |g, [x4]| {
            if max {
                g.max_pool2d(x4, [1, kernel], [1, stride], [0, padding])
            } else {
                g.avg_pool2d(x4, [1, kernel], [1, stride], [0, padding])
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use crate::ConvExt;
    use rlx_ir::{DType, Graph, IrError};

    #[test]
    fn layer_norm2d_normalizes_channels_and_wants_nchw() {
        let mut g = Graph::new("ln2d");
        let x = g.input("x", &[2, 8, 3, 5], DType::F32).unwrap();
        let gamma = g.param("g", &[8], DType::F32).unwrap();
        let y = g.layer_norm2d(x, Some(gamma), None, 1e-6).unwrap();
        assert_eq!(g.ty(y).unwrap().shape.dims(), [2, 8, 3, 5]);
        let flat = g.input("flat", &[2, 8], DType::F32).unwrap();
        let e = g.layer_norm2d(flat, None, None, 1e-6).unwrap_err();
        assert!(e.to_string().contains("[batch, channels, height, width]"), "{e}");
        // γ must have the channel count.
        let g3 = g.param("g3", &[3], DType::F32).unwrap();
        assert!(g.layer_norm2d(x, Some(g3), None, 1e-6).is_err());
    }

    #[test]
    fn shapes_follow_pytorch_and_bad_ranks_are_named() {
        let mut g = Graph::new("c1");
        let x = g.input("x", &[2, 4, 50], DType::F32).unwrap();
        let w = g.param("w", &[6, 2, 5], DType::F32).unwrap();
        let y = g.conv1d(x, w, None, 2, 3, 2, 2).unwrap();
        // ⌊(50 + 6 − 2·4 − 1) / 2⌋ + 1 = 24
        assert_eq!(g.ty(y).unwrap().shape.dims(), [2, 6, 24]);
        let p = g.max_pool1d(x, 3, 2, 1).unwrap();
        assert_eq!(g.ty(p).unwrap().shape.dims(), [2, 4, 25]);
        let len = g.len();
        let bad = g.input("bad", &[4, 50], DType::F32).unwrap();
        let e = g.conv1d(bad, w, None, 1, 0, 1, 1).unwrap_err();
        assert!(matches!(e, IrError::Attribute { op: "conv1d", .. }), "{e}");
        assert!(e.to_string().contains("[batch, channels, length]"), "{e}");
        // A failed composite leaves no nodes behind (the input stays).
        assert_eq!(g.len(), len + 1);
        let e = g.avg_pool1d(bad, 2, 2, 0).unwrap_err();
        assert!(e.to_string().contains("avg_pool1d"), "{e}");
        // Channels that do not match the weight: conv2d's error, with both shapes.
        let w3 = g.param("w3", &[6, 3, 5], DType::F32).unwrap();
        assert!(g.conv1d(x, w3, None, 1, 0, 1, 1).is_err());
    }
}
