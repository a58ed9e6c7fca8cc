//! 3-D convolution (PyTorch's `conv3d`) as one `Conv2d` over depth windows folded into
//! channels.
//!
//! x [N, C, D, H, W] moves depth next to batch once ([N, D, C, H, W]), is zero-padded in depth,
//! and the KD depth taps of every output depth are stacked after the channels: [N·OD, C·KD, H,
//! W], channel c·KD + kd being input depth od·stride + kd·dilation. The weight [O, C / groups,
//! KD, KH, KW] reshaped to [O, C / groups · KD, KH, KW] (a view) matches that channel order,
//! groups included, so a single `Conv2d` with the H/W attributes computes every output. Why
//! not KD separate `Conv2d`s summed: the same KD copies of the input, plus KD − 1 output-sized
//! partial sums written and read again, and KD matmuls of depth C/groups·KH·KW instead of one
//! of depth C/groups·KD·KH·KW (a better shape for the tiled and tensor-core kernels).

use crate::{Graph, IrError, NodeId, ShapeList};

impl Graph {
    /// 3-D convolution (cross-correlation, like PyTorch) of x [N, C, D, H, W] with
    /// w [O, C / groups, KD, KH, KW] and an optional bias [O]; `stride`, `padding` and
    /// `dilation` are per axis (D, H, W). Output [N, O, OD, OH, OW] with
    /// OD = ⌊(D + 2·padding[0] − dilation[0]·(KD − 1) − 1) / stride[0]⌋ + 1 (H and W likewise).
    /// Errors name `conv3d` and both shapes.
    #[allow(clippy::too_many_arguments)]
    pub fn conv3d(
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
        self.atomically(|g| {
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
