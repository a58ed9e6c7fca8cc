//! Rotary position embedding.

use super::attention::View;
use crate::elem::{float_tensor, floats, invalid};
use rlx_backend::BackendError;
use rlx_ir::{AttnLayout, RopeStyle, Tensor, TensorType};

/// Rotates the first `rotary_dims` of every head row of `x` by the angles whose cosines and
/// sines are `cos`, `sin` ([S, rotary_dims/2]); the sequence index comes from the layout.
/// Pairs are (i, i + rot/2) for NeoX and (2i, 2i + 1) for GPT-J:
/// `out1 = x1·cos − x2·sin`, `out2 = x2·cos + x1·sin`. Other dims pass through.
pub fn rope(
    style: RopeStyle,
    layout: AttnLayout,
    rotary_dims: usize,
    x: &Tensor,
    cos: &Tensor,
    sin: &Tensor,
    out: &TensorType,
) -> Result<Tensor, BackendError> {
    const OP: &str = "rope";
    let view = View::new(layout, x.dims(), OP)?;
    let half = rotary_dims / 2;
    let (c, s) = (floats(cos, OP)?, floats(sin, OP)?);
    if rotary_dims > view.d || c.len() != view.s * half || s.len() != view.s * half {
        return Err(invalid(
            OP,
            format!(
                "x {:?} with {rotary_dims} rotary dims does not fit cos {:?} / sin {:?}",
                x.dims(),
                cos.dims(),
                sin.dims()
            ),
        ));
    }
    let v = floats(x, OP)?;
    let mut res = v.to_vec();
    for b in 0..view.b {
        for p in 0..view.s {
            for h in 0..view.h {
                let row = view.row(b, p, h);
                for i in 0..half {
                    let (i1, i2) = match style {
                        RopeStyle::NeoX => (i, i + half),
                        RopeStyle::GptJ => (2 * i, 2 * i + 1),
                    };
                    let (x1, x2) = (v[row + i1] as f64, v[row + i2] as f64);
                    let (ci, si) = (c[p * half + i] as f64, s[p * half + i] as f64);
                    res[row + i1] = (x1 * ci - x2 * si) as f32;
                    res[row + i2] = (x2 * ci + x1 * si) as f32;
                }
            }
        }
    }
    float_tensor(&out.shape, out.dtype, res)
}
