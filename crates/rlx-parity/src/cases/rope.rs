//! RoPE: NeoX and GPT-J pairing, both layouts, full or leading rotary dims, offset positions
//! ([`cases`]); and its edges, every rotary width of a head on random angles ([`edge_cases`]).

use super::attention::shape;
use crate::Case;
use rlx_ir::{AttnLayout, IrError, RopeStyle, Tensor};

pub(super) fn cases(out: &mut Vec<Case>) {
    rope(out);
}

pub(super) fn edge_cases(out: &mut Vec<Case>) {
    rope_random_angles(out);
}

/// cos and sin [s, rot/2] for positions `start..start + s` (theta base 10000).
pub(super) fn rope_tables(start: usize, s: usize, rot: usize) -> Result<(Tensor, Tensor), IrError> {
    let half = rot / 2;
    let (mut cos, mut sin) = (Vec::with_capacity(s * half), Vec::with_capacity(s * half));
    for p in start..start + s {
        for i in 0..half {
            let inv_freq = 10000f64.powf(-2.0 * i as f64 / rot as f64);
            let a = p as f64 * inv_freq;
            cos.push(a.cos() as f32);
            sin.push(a.sin() as f32);
        }
    }
    Ok((Tensor::from_f32([s, half], cos)?, Tensor::from_f32([s, half], sin)?))
}

fn rope(out: &mut Vec<Case>) {
    use AttnLayout::{Bhsd, Bshd};
    use RopeStyle::{GptJ, NeoX};
    // (tag, style, layout, [b, s, h, d], rotary dims, first position)
    type Rope = (&'static str, RopeStyle, AttnLayout, [usize; 4], usize, usize);
    let table: [Rope; 9] = [
        ("neox_bshd", NeoX, Bshd, [2, 5, 3, 8], 8, 0),
        ("neox_bhsd", NeoX, Bhsd, [2, 5, 3, 8], 8, 0),
        ("gptj_bshd", GptJ, Bshd, [2, 5, 3, 8], 8, 0),
        ("gptj_bhsd", GptJ, Bhsd, [2, 5, 3, 8], 8, 0),
        ("neox_partial_rot4_of_8", NeoX, Bshd, [1, 6, 2, 8], 4, 0),
        ("gptj_partial_rot6_of_10", GptJ, Bhsd, [1, 6, 2, 10], 6, 0),
        ("neox_d64_rot32_offset", NeoX, Bshd, [1, 7, 2, 64], 32, 100),
        ("neox_single_position", NeoX, Bhsd, [2, 1, 4, 16], 16, 37),
        ("gptj_rot2", GptJ, Bshd, [1, 3, 1, 6], 2, 5),
    ];
    for (tag, style, layout, [b, s, h, d], rot, start) in table {
        out.push(Case::new(format!("rope_{tag}"), move |c| {
            let x = c.input_f32("x", &shape(layout, b, s, h, d), -1.0, 1.0)?;
            let (cos, sin) = rope_tables(start, s, rot)?;
            let cos = c.input_tensor("cos", cos)?;
            let sin = c.input_tensor("sin", sin)?;
            Ok(vec![c.rope(x, cos, sin, style, layout, rot)?])
        }));
    }
}

fn rope_random_angles(out: &mut Vec<Case>) {
    let (b, s, h, d) = (2, 7, 3, 12);
    for style in [RopeStyle::NeoX, RopeStyle::GptJ] {
        for layout in [AttnLayout::Bshd, AttnLayout::Bhsd] {
            for rot in [2, 8, 12] {
                let name = format!("rope_{style:?}_{layout:?}_d12_rot{rot}_random_angles").to_lowercase();
                out.push(Case::new(name, move |c| {
                    let v = c.uniform(b * s * h * d, -1.5, 1.5);
                    let x =
                        c.input_tensor("x", Tensor::from_f32(shape(layout, b, s, h, d).as_slice(), v)?)?;
                    let angles = c.uniform(s * rot / 2, -3.0, 3.0);
                    let cos = Tensor::from_f32([s, rot / 2], angles.iter().map(|a| a.cos()).collect())?;
                    let sin = Tensor::from_f32([s, rot / 2], angles.iter().map(|a| a.sin()).collect())?;
                    let (cos, sin) = (c.input_tensor("cos", cos)?, c.input_tensor("sin", sin)?);
                    Ok(vec![c.rope(x, cos, sin, style, layout, rot)?])
                }));
            }
        }
    }
}
