//! The conv family: `Conv2d`, `Pool2d` and `Upsample2x` on `[N, C, H, W]` images. Shape rule
//! and flop count (convolution only; pooling and upsampling are bandwidth-bound).

use super::{arity, arity_range, attr_err, dims, float, mismatch, not_in_family, same_dtype};
use crate::{IrError, Op, OpFamily, TensorType};

pub(super) fn infer(op: &Op, inputs: &[&TensorType]) -> Result<TensorType, IrError> {
    let name = op.name();
    match op {
        Op::Conv2d { stride, padding, dilation, groups } => {
            conv2d(name, inputs, *stride, *padding, *dilation, *groups)
        }
        Op::Pool2d { kernel, stride, padding, .. } => {
            arity(name, inputs, 1)?;
            let x = inputs[0];
            float(name, 0, x.dtype)?;
            let [n, c, h, w] = nchw(name, x)?;
            for i in 0..2 {
                if kernel[i] < 1 || stride[i] < 1 {
                    return Err(attr_err(name, "kernel/stride", &x.shape, "kernel and stride must be ≥ 1"));
                }
                if padding[i] > kernel[i] / 2 {
                    return Err(attr_err(
                        name,
                        "padding",
                        &x.shape,
                        format!("padding {padding:?} exceeds half the kernel {kernel:?}; use padding ≤ kernel / 2"),
                    ));
                }
            }
            let oh = out_size(name, inputs, h, kernel[0], stride[0], padding[0], 1, "height")?;
            let ow = out_size(name, inputs, w, kernel[1], stride[1], padding[1], 1, "width")?;
            Ok(TensorType::new([n, c, oh, ow], x.dtype))
        }
        Op::Upsample2x => {
            arity(name, inputs, 1)?;
            let [n, c, h, w] = nchw(name, inputs[0])?;
            let big = |v: usize| v.checked_mul(2).ok_or_else(|| mismatch(name, inputs, "size overflow"));
            Ok(TensorType::new([n, c, big(h)?, big(w)?], inputs[0].dtype))
        }
        _ => Err(not_in_family(op, inputs, OpFamily::Conv)),
    }
}

/// Convolution: w is [O, C/groups, KH, KW], so each output element is one dot of
/// C/groups·KH·KW (two flops per multiply-add).
pub(super) fn flops(op: &Op, inputs: &[&TensorType], out: &TensorType) -> f64 {
    let Op::Conv2d { .. } = op else { return 0.0 };
    let per_out: usize = dims(inputs, 1).iter().skip(1).product();
    2.0 * out.shape.numel() as f64 * per_out as f64
}

fn nchw(name: &'static str, x: &TensorType) -> Result<[usize; 4], IrError> {
    match x.shape.dims() {
        [n, c, h, w] => Ok([*n, *c, *h, *w]),
        _ => Err(attr_err(name, "rank", &x.shape, "x must be rank 4 [N, C, H, W]; reshape it first")),
    }
}

/// `floor((size + 2·pad − dil·(k − 1) − 1) / stride) + 1`, or an error when the (dilated)
/// window does not fit in the padded input at least once.
#[allow(clippy::too_many_arguments)]
fn out_size(
    name: &'static str,
    inputs: &[&TensorType],
    size: usize,
    k: usize,
    stride: usize,
    pad: usize,
    dil: usize,
    which: &str,
) -> Result<usize, IrError> {
    let padded = size as u128 + 2 * pad as u128;
    let window = dil as u128 * (k as u128 - 1) + 1;
    if window > padded {
        return Err(mismatch(
            name,
            inputs,
            format!(
                "the {which} window spans {window} but the padded input has only {padded} ({size} + \
                 2·{pad}), giving an empty output; use a smaller kernel/dilation or more padding"
            ),
        ));
    }
    usize::try_from((padded - window) / stride as u128 + 1)
        .map_err(|_| mismatch(name, inputs, "size overflow"))
}

fn conv2d(
    name: &'static str,
    inputs: &[&TensorType],
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
    groups: usize,
) -> Result<TensorType, IrError> {
    arity_range(name, inputs, 2, 3)?;
    let (x, w) = (inputs[0], inputs[1]);
    float(name, 0, x.dtype)?;
    same_dtype(name, inputs, 0, 1)?;
    let [n, c, h, wd] = nchw(name, x)?;
    let [o, ci, kh, kw] = match w.shape.dims() {
        [o, ci, kh, kw] => [*o, *ci, *kh, *kw],
        _ => return Err(mismatch(name, inputs, "w must be rank 4 [O, C / groups, KH, KW]")),
    };
    if groups < 1 || stride.contains(&0) || dilation.contains(&0) {
        return Err(attr_err(
            name,
            "groups/stride/dilation",
            &x.shape,
            "groups, stride and dilation must be ≥ 1",
        ));
    }
    if c % groups != 0 || o % groups != 0 {
        return Err(mismatch(
            name,
            inputs,
            format!("groups = {groups} must divide both the input channels {c} and the output channels {o}"),
        ));
    }
    if ci != c / groups {
        return Err(mismatch(
            name,
            inputs,
            format!(
                "w has {ci} input channels per group but x has {c} channels / {groups} groups = {}",
                c / groups
            ),
        ));
    }
    if kh == 0 || kw == 0 {
        return Err(mismatch(name, inputs, "the kernel has a zero-sized dim"));
    }
    if let Some(bias) = inputs.get(2) {
        same_dtype(name, inputs, 0, 2)?;
        if bias.shape.dims() != [o] {
            return Err(mismatch(name, inputs, format!("bias must be 1-D [{o}] (one per output channel)")));
        }
    }
    let oh = out_size(name, inputs, h, kh, stride[0], padding[0], dilation[0], "height")?;
    let ow = out_size(name, inputs, wd, kw, stride[1], padding[1], dilation[1], "width")?;
    Ok(TensorType::new([n, o, oh, ow], x.dtype))
}
