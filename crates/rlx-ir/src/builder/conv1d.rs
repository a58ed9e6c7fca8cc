//! Vision and audio layers built from the native ops:
//! - 1-D convolution and pooling on [N, C, L] data, as PyTorch's `conv1d`, `max_pool1d` and
//!   `avg_pool1d`. Each is the 2-D op on a height of one: the reshapes around it are views, so
//!   nothing is copied, and every backend that runs `Conv2d`/`Pool2d` (natively or decomposed)
//!   runs these too.
//! - The channel-wise `layer_norm2d` of ConvNeXt- and SAM-style encoders on [N, C, H, W].

use crate::{Graph, IrError, NodeId, Shape};

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

impl Graph {
    /// 1-D convolution (cross-correlation, like PyTorch) of x [N, C, L] with w [O, C / groups, K]
    /// and an optional bias [O]: [N, O, ⌊(L + 2·padding − dilation·(K − 1) − 1) / stride⌋ + 1].
    /// Errors name `conv1d` and the shapes (through `conv2d` for channel and group mismatches).
    #[allow(clippy::too_many_arguments)]
    pub fn conv1d(
        &mut self,
        x: NodeId,
        w: NodeId,
        bias: Option<NodeId>,
        stride: usize,
        padding: usize,
        dilation: usize,
        groups: usize,
    ) -> Result<NodeId, IrError> {
        self.atomically(|g| {
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
            let x4 = g.reshape(x, &[n, c, 1, l])?;
            let w4 = g.reshape(w, &[o, ci, 1, k])?;
            let y = g.conv2d(x4, w4, bias, [1, stride], [0, padding], [1, dilation], groups)?;
            let out = g.ty(y)?.shape.dims().to_vec();
            g.reshape(y, &[out[0], out[1], out[3]])
        })
    }

    /// 1-D max pooling over the last axis of x [N, C, L] (padding counts as −∞).
    pub fn max_pool1d(
        &mut self,
        x: NodeId,
        kernel: usize,
        stride: usize,
        padding: usize,
    ) -> Result<NodeId, IrError> {
        self.pool1d(x, kernel, stride, padding, true)
    }

    /// 1-D average pooling over the last axis of x [N, C, L]; padded positions count in the
    /// divisor (PyTorch's default).
    pub fn avg_pool1d(
        &mut self,
        x: NodeId,
        kernel: usize,
        stride: usize,
        padding: usize,
    ) -> Result<NodeId, IrError> {
        self.pool1d(x, kernel, stride, padding, false)
    }

    fn pool1d(
        &mut self,
        x: NodeId,
        kernel: usize,
        stride: usize,
        padding: usize,
        max: bool,
    ) -> Result<NodeId, IrError> {
        self.atomically(|g| {
            let [n, c, l] = ncl(g, if max { "max_pool1d" } else { "avg_pool1d" }, x)?;
            let x4 = g.reshape(x, &[n, c, 1, l])?;
            let y = if max {
                g.max_pool2d(x4, [1, kernel], [1, stride], [0, padding])?
            } else {
                g.avg_pool2d(x4, [1, kernel], [1, stride], [0, padding])?
            };
            let out = g.ty(y)?.shape.dims().to_vec();
            g.reshape(y, &[out[0], out[1], out[3]])
        })
    }
}

impl Graph {
    /// LayerNorm over the channels of x [N, C, H, W] at every position (ConvNeXt's and SAM's
    /// `LayerNorm2d`): (x − mean_c) / sqrt(var_c + eps) · γ[c] + β[c], γ and β [C] (ones and
    /// zeros when absent). The layer norm over axis 1: the channels move last and back.
    pub fn layer_norm2d(
        &mut self,
        x: NodeId,
        gamma: Option<NodeId>,
        beta: Option<NodeId>,
        eps: f32,
    ) -> Result<NodeId, IrError> {
        let shape = self.ty(x)?.shape.clone();
        if shape.rank() != 4 {
            return Err(IrError::Attribute {
                op: "layer_norm2d",
                attr: "input rank",
                shape,
                reason: "the input must be [batch, channels, height, width]".into(),
            });
        }
        self.layer_norm(x, gamma, beta, 1, eps)
    }
}

#[cfg(test)]
mod tests {
    use crate::{DType, Graph, IrError};

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
