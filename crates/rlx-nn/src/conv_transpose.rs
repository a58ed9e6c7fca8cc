//! Transposed convolutions (PyTorch's `conv_transpose1d` and `conv_transpose2d`) built from
//! `Conv2d`, slices, pads and concats, by output phase ("sub-pixel" decomposition).
//!
//! Why phases and not zero insertion: zero insertion dilates the input by the stride and runs
//! a stride-1 convolution over it, so (for stride s per axis) s² of every s² products multiply
//! an inserted zero, and the im2col columns the GPU decomposition of `Conv2d` writes are s²
//! times larger than needed (for a 256→128-channel 64×64→128×128 decoder stage at batch 8 with
//! a 4×4 kernel: 2 GiB of columns, at the per-binding limit of wgpu on an H100/H200). Instead,
//! the output positions o ≡ r (mod s) of each axis only ever meet the kernel taps k with
//! k·dilation ≡ r (mod s); each such phase is a stride-1 correlation of the (undilated) input
//! with those taps, reversed. The s_h·s_w phase outputs are interleaved by concat + reshape and
//! cropped by `padding`. Every product computed is one the direct definition computes, up to a
//! border of at most one phase row per side.

use crate::conv::on_height_one;
use rlx_ir::{DType, Graph, IrError, NodeId, Shape, ShapeList};

/// One spatial axis of a transposed convolution.
#[derive(Clone, Copy, Debug)]
struct Axis {
    len: usize,
    kernel: usize,
    stride: usize,
    padding: usize,
    output_padding: usize,
    dilation: usize,
}

/// How the output positions `q·stride + r` (q counted from the plan's first row) of one axis
/// are computed: a stride-1 correlation, dilated by `dilation`, of the input window `[lo, hi)`
/// (zeros outside the input) with the kernel taps `k0, k0 + step, …` (`taps` of them),
/// reversed.
#[derive(Clone, Copy, Debug)]
struct Phase {
    k0: usize,
    step: usize,
    taps: usize,
    dilation: usize,
    lo: i128,
    hi: i128,
}

/// Every phase of one axis. `None` for a phase that no kernel tap reaches, or that reads only
/// positions outside the input: its outputs are the bias alone.
#[derive(Debug)]
struct AxisPlan {
    out: usize,
    /// Output rows per phase.
    rows: usize,
    /// Where the output starts in the interleaved phases (`padding` mod stride).
    crop: usize,
    phases: Vec<Option<Phase>>,
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl Axis {
    /// `(len − 1)·stride − 2·padding + dilation·(kernel − 1) + output_padding + 1`, if ≥ 1.
    fn out_len(&self) -> Option<usize> {
        let v = (self.len as i128 - 1) * self.stride as i128 - 2 * self.padding as i128
            + self.dilation as i128 * (self.kernel as i128 - 1)
            + self.output_padding as i128
            + 1;
        usize::try_from(v).ok().filter(|&v| v >= 1)
    }

    /// The phase plan (callers have checked that `out_len` is `Some`).
    fn plan(&self, out: usize) -> AxisPlan {
        let (s, d, k) = (self.stride, self.dilation, self.kernel);
        // Output o sits at o + padding in the uncropped result, position q·s + r of phase r.
        let q0 = self.padding / s;
        let rows = (self.padding + out).div_ceil(s) - q0;
        let g = gcd(d, s);
        let (step, dd) = (s / g, d / g);
        let phases = (0..s)
            .map(|r| {
                let k0 = (0..k.min(step)).find(|&k| (k * d) % s == r)?;
                let taps = (k - 1 - k0) / step + 1;
                let m0 = ((k0 * d - r) / s) as i128;
                let span = ((taps - 1) * dd) as i128;
                let lo = q0 as i128 - m0 - span;
                let hi = lo + rows as i128 + span;
                let reads_input = lo.max(0) < hi.min(self.len as i128);
                reads_input.then_some(Phase { k0, step, taps, dilation: dd, lo, hi })
            })
            .collect();
        AxisPlan { out, rows, crop: self.padding % s, phases }
    }
}

/// Transposed convolutions (PyTorch's `conv_transpose1d`/`2d`) by output phase on `Conv2d`.
pub trait ConvTransposeExt: AsMut<Graph> {
    /// Transposed 1-D convolution with PyTorch's `conv_transpose1d` semantics: x [N, C_in, L],
    /// w [C_in, C_out / groups, K] (the layout of `nn.ConvTranspose1d.weight`), an optional
    /// bias \[C_out\]; output [N, C_out, (L − 1)·stride − 2·padding + dilation·(K − 1) +
    /// output_padding + 1]. `output_padding` must be below `stride` or `dilation`, as in
    /// PyTorch. The 2-D op on a height of one (views around it).
    #[allow(clippy::too_many_arguments)]
    fn conv_transpose1d(
        &mut self,
        x: NodeId,
        w: NodeId,
        bias: Option<NodeId>,
        stride: usize,
        padding: usize,
        output_padding: usize,
        dilation: usize,
        groups: usize,
    ) -> Result<NodeId, IrError> {
        const OP: &str = "conv_transpose1d";
        self.as_mut().atomically(|g| {
            let xs = g.shape_of(OP, x)?;
            let ws = g.shape_of(OP, w)?;
            let (&[n, c, l], &[ci, co, k]) = (xs.dims(), ws.dims()) else {
                return Err(IrError::ShapeMismatch {
                    op: OP,
                    shapes: ShapeList(vec![xs, ws]),
                    reason: "x must be [batch, in channels, length] and w [in channels, out channels / \
                             groups, kernel]"
                        .into(),
                });
            };
            on_height_one(g, [(x, [n, c, l]), (w, [ci, co, k])], |g, [x4, w4]| {
                let (s, p, out_pad, d) = ([1, stride], [0, padding], [0, output_padding], [1, dilation]);
                conv_transpose(g, OP, x4, w4, bias, s, p, out_pad, d, groups)
            })
        })
    }

    /// Transposed 2-D convolution with PyTorch's `conv_transpose2d` semantics: x [N, C_in, H,
    /// W], w [C_in, C_out / groups, KH, KW] (the layout of `nn.ConvTranspose2d.weight`), an
    /// optional bias \[C_out\]; output [N, C_out, H_out, W_out] with H_out = (H − 1)·stride\[0\] −
    /// 2·padding\[0\] + dilation\[0\]·(KH − 1) + output_padding\[0\] + 1 (W likewise). Each
    /// `output_padding` must be below its axis's `stride` or `dilation`, as in PyTorch.
    /// Decomposed by output phase into stride-1 `Conv2d`s (see the module doc).
    #[allow(clippy::too_many_arguments)]
    fn conv_transpose2d(
        &mut self,
        x: NodeId,
        w: NodeId,
        bias: Option<NodeId>,
        stride: [usize; 2],
        padding: [usize; 2],
        output_padding: [usize; 2],
        dilation: [usize; 2],
        groups: usize,
    ) -> Result<NodeId, IrError> {
        self.as_mut().atomically(|g| {
            conv_transpose(
                g,
                "conv_transpose2d",
                x,
                w,
                bias,
                stride,
                padding,
                output_padding,
                dilation,
                groups,
            )
        })
    }
}

impl ConvTransposeExt for Graph {}

#[allow(clippy::too_many_arguments)]
fn conv_transpose(
    g: &mut Graph,
    op: &'static str,
    x: NodeId,
    w: NodeId,
    bias: Option<NodeId>,
    stride: [usize; 2],
    padding: [usize; 2],
    output_padding: [usize; 2],
    dilation: [usize; 2],
    groups: usize,
) -> Result<NodeId, IrError> {
    let xt = g.ty_for(op, x)?.clone();
    let ws = g.shape_of(op, w)?;
    let mismatch = |reason: String| IrError::ShapeMismatch {
        op,
        shapes: ShapeList(vec![xt.shape.clone(), ws.clone()]),
        reason,
    };
    let (&[n, c, h, wd], &[wc, cog, kh, kw]) = (xt.shape.dims(), ws.dims()) else {
        return Err(mismatch("x must be [N, C_in, H, W] and w [C_in, C_out / groups, KH, KW]".into()));
    };
    let attr =
        |a: &'static str, reason: String| IrError::Attribute { op, attr: a, shape: xt.shape.clone(), reason };
    if groups == 0 || c % groups != 0 {
        return Err(attr("groups", format!("groups = {groups} must be ≥ 1 and divide C_in = {c}")));
    }
    if wc != c {
        return Err(mismatch(format!(
            "w's first dim is {wc} but x has {c} input channels; w is laid out [C_in, C_out / \
             groups, KH, KW] (nn.ConvTranspose's layout, not Conv's)"
        )));
    }
    if kh == 0 || kw == 0 || cog == 0 {
        return Err(mismatch("the weight has a zero-sized dim".into()));
    }
    if stride.contains(&0) || dilation.contains(&0) {
        return Err(attr(
            "stride/dilation",
            format!("stride {stride:?} and dilation {dilation:?} must be ≥ 1"),
        ));
    }
    for i in 0..2 {
        if output_padding[i] >= stride[i] && output_padding[i] >= dilation[i] {
            return Err(attr(
                "output_padding",
                format!(
                    "output_padding {output_padding:?} must be smaller than either stride \
                     {stride:?} or dilation {dilation:?} on each axis (as in PyTorch); it only \
                     picks among the output sizes that one input size allows"
                ),
            ));
        }
    }
    let co = cog * groups;
    if let Some(b) = bias {
        let bs = g.shape_of(op, b)?;
        if bs.dims() != [co] {
            return Err(IrError::ShapeMismatch {
                op,
                shapes: ShapeList(vec![ws.clone(), bs]),
                reason: format!("bias must be 1-D [C_out] = [{co}] (w's dim 1 × groups)"),
            });
        }
    }
    let axes = [
        Axis {
            len: h,
            kernel: kh,
            stride: stride[0],
            padding: padding[0],
            output_padding: output_padding[0],
            dilation: dilation[0],
        },
        Axis {
            len: wd,
            kernel: kw,
            stride: stride[1],
            padding: padding[1],
            output_padding: output_padding[1],
            dilation: dilation[1],
        },
    ];
    let mut plans = Vec::with_capacity(2);
    for (a, name) in axes.iter().zip(["height", "width"]) {
        let out = a.out_len().ok_or_else(|| {
            attr(
                "padding",
                format!(
                    "the output {name} (in − 1)·stride − 2·padding + dilation·(kernel − 1) + \
                     output_padding + 1 is below 1 for {name} {}, kernel {}, stride {}, padding \
                     {}, dilation {}; use less padding",
                    a.len, a.kernel, a.stride, a.padding, a.dilation
                ),
            )
        })?;
        Shape::new(&[n, co, out]).check_size(op, xt.dtype)?;
        plans.push(a.plan(out));
    }
    let (ph, pw) = (&plans[0], &plans[1]);
    Shape::new(&[n, co, ph.out, pw.out]).check_size(op, xt.dtype)?;

    // The weight as Conv2d wants it: [C_out, C_in / groups, KH, KW], in/out swapped per group.
    let cig = c / groups;
    let wconv = if groups == 1 {
        g.permute(w, &[1, 0, 2, 3])?
    } else {
        let w5 = g.reshape(w, &[groups, cig, cog, kh, kw])?;
        let w5 = g.permute(w5, &[0, 2, 1, 3, 4])?;
        g.reshape(w5, &[co, cig, kh, kw])?
    };
    let bias4 = match bias {
        Some(b) => Some(g.reshape(b, &[co, 1, 1])?),
        None => None,
    };
    let phase_dims = [n, co, ph.rows, pw.rows];
    let mut rows_of_phases = Vec::with_capacity(ph.phases.len());
    for fh in &ph.phases {
        let mut row = Vec::with_capacity(pw.phases.len());
        for fw in &pw.phases {
            let y = match (fh, fw) {
                (Some(fh), Some(fw)) => phase_conv(g, x, wconv, bias, [fh, fw], [h, wd], groups)?,
                _ => bias_only(g, bias4, &phase_dims, xt.dtype)?,
            };
            row.push(y);
        }
        rows_of_phases.push(row);
    }
    let y = interleave(g, rows_of_phases, phase_dims)?;
    let y = crop(g, y, 2, ph.crop, ph.out, ph.rows * stride[0])?;
    crop(g, y, 3, pw.crop, pw.out, pw.rows * stride[1])
}

/// One output phase: the input window of each axis (sliced and zero-padded) correlated
/// with the phase's reversed kernel taps at stride 1.
fn phase_conv(
    g: &mut Graph,
    x: NodeId,
    wconv: NodeId,
    bias: Option<NodeId>,
    phases: [&Phase; 2],
    lens: [usize; 2],
    groups: usize,
) -> Result<NodeId, IrError> {
    let mut xw = x;
    let mut pads = vec![(0, 0); 4];
    let mut wsub = wconv;
    let mut flip = Vec::new();
    for (i, (p, &len)) in phases.iter().zip(&lens).enumerate() {
        let axis = 2 + i;
        // plan() kept only phases whose window overlaps the input, so start < end here.
        let start = p.lo.max(0) as usize;
        let end = p.hi.min(len as i128) as usize;
        if start > 0 || end < len {
            xw = g.slice(xw, axis as isize, start, end, 1)?;
        }
        pads[axis] = ((-p.lo).max(0) as usize, (p.hi - len as i128).max(0) as usize);
        let kernel = g.shape_of("conv_transpose", wconv)?.dims()[axis];
        if p.k0 > 0 || p.step > 1 {
            wsub = g.slice(wsub, axis as isize, p.k0, kernel, p.step)?;
        }
        if p.taps > 1 {
            flip.push(axis as isize);
        }
    }
    if pads.iter().any(|&(a, b)| a > 0 || b > 0) {
        xw = g.pad(xw, &pads, 0.0)?;
    }
    if !flip.is_empty() {
        wsub = g.reverse(wsub, &flip)?;
    }
    let dil = [phases[0].dilation, phases[1].dilation];
    g.conv2d(xw, wsub, bias, [1, 1], [0, 0], dil, groups)
}

/// A phase no kernel tap reaches: the bias (or zeros) broadcast to `dims`.
fn bias_only(g: &mut Graph, bias4: Option<NodeId>, dims: &[usize], dtype: DType) -> Result<NodeId, IrError> {
    let v = match bias4 {
        Some(b) => b,
        None => g.full(&[], dtype, 0.0)?,
    };
    g.expand(v, dims)
}

/// Phase outputs `rows[rh][rw]`, each [N, C, QH, QW], interleaved into [N, C, QH·sh, QW·sw]
/// (output row q·sh + rh, column q·sw + rw).
fn interleave(g: &mut Graph, rows: Vec<Vec<NodeId>>, [n, c, qh, qw]: [usize; 4]) -> Result<NodeId, IrError> {
    let (sh, sw) = (rows.len(), rows.first().map_or(0, Vec::len));
    if sh == 1 && sw == 1 {
        return Ok(rows[0][0]);
    }
    let mut stacked = Vec::with_capacity(sh);
    for row in rows {
        let parts =
            row.into_iter().map(|y| g.reshape(y, &[n, c, qh, 1, qw, 1])).collect::<Result<Vec<_>, _>>()?;
        stacked.push(if parts.len() == 1 { parts[0] } else { g.concat(&parts, 5)? });
    }
    let y = if stacked.len() == 1 { stacked[0] } else { g.concat(&stacked, 3)? };
    g.reshape(y, &[n, c, qh * sh, qw * sw])
}

/// `len` elements from `start` along `axis` of a tensor `full` long there (no node when
/// that is everything).
fn crop(
    g: &mut Graph,
    y: NodeId,
    axis: isize,
    start: usize,
    len: usize,
    full: usize,
) -> Result<NodeId, IrError> {
    if start == 0 && len == full {
        return Ok(y);
    }
    g.narrow(y, axis, start, len)
}

#[cfg(test)]
mod tests {
    use super::Axis;

    /// The phase plan reproduces the direct definition y[o] = Σ x[i]·w[k] over
    /// o + padding = i·stride + k·dilation, on 1-D integer data, for many attribute mixes.
    #[test]
    fn phases_match_the_direct_definition() {
        for len in 1..6usize {
            for kernel in 1..5usize {
                for stride in 1..4usize {
                    for dilation in 1..4usize {
                        for padding in 0..4usize {
                            for output_padding in 0..stride.max(dilation) {
                                let a = Axis { len, kernel, stride, padding, output_padding, dilation };
                                let Some(out) = a.out_len() else { continue };
                                check(&a, out);
                            }
                        }
                    }
                }
            }
        }
    }

    fn check(a: &Axis, out: usize) {
        let x: Vec<i64> = (0..a.len as i64).map(|i| 3 * i + 1).collect();
        let w: Vec<i64> = (0..a.kernel as i64).map(|k| 100 * (k + 1)).collect();
        let mut direct = vec![0i64; out];
        for (i, xi) in x.iter().enumerate() {
            for (k, wk) in w.iter().enumerate() {
                let o = (i * a.stride + k * a.dilation) as i64 - a.padding as i64;
                if (0..out as i64).contains(&o) {
                    direct[o as usize] += xi * wk;
                }
            }
        }
        let plan = a.plan(out);
        let mut interleaved = vec![0i64; plan.rows * a.stride];
        for (r, p) in plan.phases.iter().enumerate() {
            let Some(p) = p else { continue };
            for q in 0..plan.rows {
                let mut acc = 0;
                for t in 0..p.taps {
                    let xi = p.lo + (q + t * p.dilation) as i128;
                    let k = p.k0 + (p.taps - 1 - t) * p.step;
                    if (0..a.len as i128).contains(&xi) {
                        acc += x[xi as usize] * w[k];
                    }
                }
                interleaved[q * a.stride + r] = acc;
            }
        }
        assert_eq!(&interleaved[plan.crop..plan.crop + out], &direct[..], "{a:?}");
    }
}
