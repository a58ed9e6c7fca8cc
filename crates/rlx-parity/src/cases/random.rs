//! Random numbers and token sampling: uniform bits must equal the CPU's exactly on every device
//! (the Philox recipe is integer arithmetic), normals within f32 rounding of the device's
//! log/cos/sin, and sampled tokens exactly (integer outputs always compare exactly).

use super::with_nans;
use crate::Case;
use rlx_ir::{RandomDist, Tensor};
use rlx_nn::prelude::*;

pub(super) fn cases(out: &mut Vec<Case>) {
    random(out);
    sampling(out);
}

fn random(out: &mut Vec<Case>) {
    let shapes: [(&str, &[usize]); 4] =
        [("1", &[1]), ("7", &[7]), ("3x37", &[3, 37]), ("grid_70000x5", &[70_000, 5])];
    for dist in RandomDist::ALL {
        for (tag, dims) in shapes {
            let case = Case::new(format!("random_{}_f32_{tag}", dist.name()), move |c| {
                let key = c.input_tensor("key", Tensor::from_u32([2], vec![0xdead_beef, 17])?)?;
                Ok(vec![c.random(key, dist, dims)?])
            });
            // Uniform is exact by construction. Normal goes through the device's log, cos and
            // sin (Vulkan allows a few ulp), so it keeps the default f32 bound.
            out.push(if dist == RandomDist::Uniform { case.exact() } else { case });
        }
    }
    out.push(
        Case::new("random_uniform_f32_two_keys", |c| {
            // Seed and offset words at the ends of their range.
            let a = c.input_tensor("a", Tensor::from_u32([2], vec![u32::MAX, u32::MAX])?)?;
            let b = c.input_tensor("b", Tensor::from_u32([2], vec![0, 1])?)?;
            Ok(vec![c.random_uniform(a, &[9])?, c.random_uniform(b, &[2, 2])?])
        })
        .exact(),
    );
}

fn sampling(out: &mut Vec<Case>) {
    let base = SamplingSpec::with_temperature(0.8);
    let specs: [(&str, SamplingSpec, bool); 6] = [
        ("greedy", SamplingSpec::greedy(), false),
        ("greedy_penalty", SamplingSpec { repetition_penalty: 1.5, ..SamplingSpec::greedy() }, true),
        ("t08_default_k", base, false),
        ("t08_k5", SamplingSpec { top_k: Some(5), ..base }, false),
        ("t12_p09", SamplingSpec { temperature: 1.2, top_p: 0.9, ..base }, false),
        (
            "t1_k7_p08_penalty",
            SamplingSpec { temperature: 1.0, top_k: Some(7), top_p: 0.8, repetition_penalty: 1.3 },
            true,
        ),
    ];
    let shapes: [(&str, usize, usize); 3] = [("v1", 3, 1), ("v97", 6, 97), ("v151936", 2, 151_936)];
    for (name, spec, with_prev) in specs {
        for (tag, b, v) in shapes {
            out.push(Case::new(format!("sample_tokens_{name}_{tag}"), move |c| {
                // Logits spread over [-4, 4]: sampling is not near-greedy at T ≈ 1.
                let x = c.input_f32("logits", &[b, v], -4.0, 4.0)?;
                let key = c.input_tensor("key", Tensor::from_u32([2], vec![1234, 5])?)?;
                let prev = if with_prev { Some(c.input_i32("prev", &[b, 4], -1, v as i32)?) } else { None };
                // top_k past the vocabulary is an error by design; V = 1 keeps its one token.
                let spec = SamplingSpec { top_k: spec.top_k.map(|k| k.min(v)), ..spec };
                Ok(vec![c.sample_tokens(x, key, &spec, prev)?])
            }));
        }
    }
    // Rows with NaNs (never picked), one all-NaN row (token 0), one with +inf (always picked).
    for (name, spec) in [
        ("greedy", SamplingSpec::greedy()),
        (
            "t1_k8_p095",
            SamplingSpec { temperature: 1.0, top_k: Some(8), top_p: 0.95, repetition_penalty: 1.2 },
        ),
    ] {
        out.push(Case::new(format!("sample_tokens_{name}_nan_rows"), move |c| {
            let mut v = with_nans(c.uniform(4 * 13, -2.0, 2.0), 3);
            v[13..26].fill(f32::NAN);
            v[26 + 5] = f32::INFINITY;
            let x = c.input_tensor("logits", Tensor::from_f32([4, 13], v)?)?;
            let key = c.input_tensor("key", Tensor::from_u32([2], vec![99, 0])?)?;
            let prev = c.input_tensor("prev", Tensor::from_i32([4, 2], vec![2, -1, 0, 1, 5, 5, -1, -1])?)?;
            Ok(vec![c.sample_tokens(x, key, &spec, Some(prev))?])
        }));
    }
}
