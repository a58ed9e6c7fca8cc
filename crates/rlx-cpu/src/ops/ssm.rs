//! The recurrences of `rlx_ir::ssm`: `SelectiveScan` and `GatedDeltaRule`, each a plain
//! sequential loop over the steps in f64 (the reference the chunked GPU kernels are held to).
//! Independent channels (selective scan: one (b, d); delta rule: one (b, h)) run in parallel
//! (rayon). NaN in gives NaN out: nothing is clamped.

use crate::elem::{float_tensor, floats, invalid};
use rayon::prelude::*;
use rlx_backend::BackendError;
use rlx_ir::{ScanOutput, Tensor, TensorType};

/// PyTorch's softplus (beta 1, threshold 20): x itself above 20, log(1 + eˣ) otherwise.
pub(crate) fn softplus(x: f64) -> f64 {
    if x > 20.0 {
        x
    } else {
        x.exp().ln_1p()
    }
}

/// u, delta [B, D, L], a [D, N], b, c [B, G, N, L] → y [B, D, L] or the last state [B, D, N].
pub fn selective_scan(
    delta_softplus: bool,
    output: ScanOutput,
    ops: [&Tensor; 5],
    out: &TensorType,
) -> Result<Tensor, BackendError> {
    const OP: &str = "selective_scan";
    let [u, delta, a, b, c] = ops;
    let (&[bs, d, l], &[_, n], &[_, groups, _, _]) = (u.dims(), a.dims(), b.dims()) else {
        return Err(invalid(
            OP,
            format!("operands {}, {}, {} have the wrong ranks", u.shape(), a.shape(), b.shape()),
        ));
    };
    if groups == 0 || d % groups != 0 {
        return Err(invalid(OP, format!("{groups} groups do not divide {d} channels")));
    }
    let (us, ds, a_s, b_s, c_s) =
        (floats(u, OP)?, floats(delta, OP)?, floats(a, OP)?, floats(b, OP)?, floats(c, OP)?);
    let per = d / groups;
    let width = match output {
        ScanOutput::Y => l,
        ScanOutput::LastState => n,
    };
    let mut res = vec![0f32; bs * d * width];
    if width > 0 {
        res.par_chunks_mut(width).enumerate().for_each(|(row, dst)| {
            let (bi, di) = (row / d, row % d);
            let gi = di / per;
            let x = (bi * d + di) * l;
            let bc = (bi * groups + gi) * n * l;
            let mut h = vec![0f64; n];
            for t in 0..l {
                let raw = f64::from(ds[x + t]);
                let dt = if delta_softplus { softplus(raw) } else { raw };
                let du = dt * f64::from(us[x + t]);
                let mut y = 0f64;
                for (j, hj) in h.iter_mut().enumerate() {
                    let decay = (dt * f64::from(a_s[di * n + j])).exp();
                    *hj = decay * *hj + du * f64::from(b_s[bc + j * l + t]);
                    y += f64::from(c_s[bc + j * l + t]) * *hj;
                }
                if output == ScanOutput::Y {
                    dst[t] = y as f32;
                }
            }
            if output == ScanOutput::LastState {
                for (o, hj) in dst.iter_mut().zip(&h) {
                    *o = *hj as f32;
                }
            }
        });
    }
    float_tensor(&out.shape, out.dtype, res)
}

/// q, k [B, L, H, K], v [B, L, H, V], g, beta [B, L, H] → o [B, L, H, V] or the last state
/// [B, H, K, V].
pub fn gated_delta_rule(
    scale: f32,
    output: ScanOutput,
    ops: [&Tensor; 5],
    out: &TensorType,
) -> Result<Tensor, BackendError> {
    const OP: &str = "gated_delta_rule";
    let [q, k, v, g, beta] = ops;
    let (&[bs, l, heads, kd], &[_, _, _, vd]) = (q.dims(), v.dims()) else {
        return Err(invalid(OP, format!("operands {}, {} are not 4-D", q.shape(), v.shape())));
    };
    let (qs, ks, vs, gs, betas) =
        (floats(q, OP)?, floats(k, OP)?, floats(v, OP)?, floats(g, OP)?, floats(beta, OP)?);
    let scale = f64::from(scale);
    // One (b, h) pair per task: its outputs (one V row per step) or its K × V state.
    let results: Vec<Vec<f32>> = (0..bs * heads)
        .into_par_iter()
        .map(|pair| {
            let (bi, hi) = (pair / heads, pair % heads);
            let mut s = vec![0f64; kd * vd];
            let mut o = vec![0f32; if output == ScanOutput::Y { l * vd } else { 0 }];
            let mut err = vec![0f64; vd];
            for t in 0..l {
                let step = (bi * l + t) * heads + hi;
                let (qr, kr, vr) = (&qs[step * kd..][..kd], &ks[step * kd..][..kd], &vs[step * vd..][..vd]);
                let alpha = f64::from(gs[step]).exp();
                let bt = f64::from(betas[step]);
                s.iter_mut().for_each(|x| *x *= alpha);
                // err = beta · (v − Sᵀ k)
                for (j, e) in err.iter_mut().enumerate() {
                    let mem: f64 = (0..kd).map(|i| s[i * vd + j] * f64::from(kr[i])).sum();
                    *e = bt * (f64::from(vr[j]) - mem);
                }
                for (i, &ki) in kr.iter().enumerate() {
                    for (j, e) in err.iter().enumerate() {
                        s[i * vd + j] += f64::from(ki) * e;
                    }
                }
                if output == ScanOutput::Y {
                    for j in 0..vd {
                        let dot: f64 = (0..kd).map(|i| s[i * vd + j] * scale * f64::from(qr[i])).sum();
                        o[t * vd + j] = dot as f32;
                    }
                }
            }
            match output {
                ScanOutput::Y => o,
                ScanOutput::LastState => s.iter().map(|&x| x as f32).collect(),
            }
        })
        .collect();
    let mut res = vec![0f32; out.numel()];
    for (pair, r) in results.iter().enumerate() {
        let (bi, hi) = (pair / heads, pair % heads);
        match output {
            ScanOutput::Y => {
                for t in 0..l {
                    let dst = ((bi * l + t) * heads + hi) * vd;
                    res[dst..dst + vd].copy_from_slice(&r[t * vd..][..vd]);
                }
            }
            ScanOutput::LastState => res[pair * kd * vd..][..kd * vd].copy_from_slice(r),
        }
    }
    float_tensor(&out.shape, out.dtype, res)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use rlx_ir::DType;

    #[test]
    fn selective_scan_by_hand() {
        // B = 1, D = 2, L = 3, N = 1, one group: h_t = e^{δA} h + δ B u, y = C h.
        let u = Tensor::from_f32([1, 2, 3], vec![1., 2., 3., 1., f32::NAN, 1.]).unwrap();
        let delta = Tensor::from_f32([1, 2, 3], vec![0.5; 6]).unwrap();
        let a = Tensor::from_f32([2, 1], vec![-2.0, -1.0]).unwrap();
        let b = Tensor::from_f32([1, 1, 1, 3], vec![1., 1., 2.]).unwrap();
        let c = Tensor::from_f32([1, 1, 1, 3], vec![1., 2., 1.]).unwrap();
        let ty = TensorType::new([1, 2, 3], DType::F32);
        let y = selective_scan(false, ScanOutput::Y, [&u, &delta, &a, &b, &c], &ty).unwrap();
        let y = y.as_f32().unwrap();
        let e = (-1.0f64).exp();
        let h0 = 0.5;
        let h1 = e * h0 + 1.0;
        let h2 = e * h1 + 3.0;
        for (got, want) in y[..3].iter().zip([h0, 2.0 * h1, h2]) {
            assert!((f64::from(*got) - want).abs() < 1e-6, "{y:?}");
        }
        assert!(y[4].is_nan() && y[5].is_nan() && !y[3].is_nan(), "NaN reaches later steps only: {y:?}");
        let st = TensorType::new([1, 2, 1], DType::F32);
        let s = selective_scan(false, ScanOutput::LastState, [&u, &delta, &a, &b, &c], &st).unwrap();
        assert!((f64::from(s.as_f32().unwrap()[0]) - h2).abs() < 1e-6);
        // softplus(0.5) replaces δ.
        let y = selective_scan(true, ScanOutput::Y, [&u, &delta, &a, &b, &c], &ty).unwrap();
        let sp = softplus(0.5);
        assert!((f64::from(y.as_f32().unwrap()[0]) - sp).abs() < 1e-6);
        assert_eq!(softplus(30.0), 30.0);
    }

    #[test]
    fn gated_delta_rule_by_hand() {
        // K = V = 1: s = α s + k β (v − s k); o = s · scale · q.
        let q = Tensor::from_f32([1, 2, 1, 1], vec![1., 2.]).unwrap();
        let k = Tensor::from_f32([1, 2, 1, 1], vec![1., 0.5]).unwrap();
        let v = Tensor::from_f32([1, 2, 1, 1], vec![2., 4.]).unwrap();
        let g = Tensor::from_f32([1, 2, 1], vec![0., (0.5f32).ln()]).unwrap();
        let beta = Tensor::from_f32([1, 2, 1], vec![0.5, 1.0]).unwrap();
        let ty = TensorType::new([1, 2, 1, 1], DType::F32);
        let o = gated_delta_rule(3.0, ScanOutput::Y, [&q, &k, &v, &g, &beta], &ty).unwrap();
        let s0 = 0.5 * 2.0;
        let s1 = 0.5 * s0 + 0.5 * (4.0 - 0.5 * s0 * 0.5);
        let o = o.as_f32().unwrap();
        assert!(
            (f64::from(o[0]) - 3.0 * s0).abs() < 1e-6 && (f64::from(o[1]) - 6.0 * s1).abs() < 1e-5,
            "{o:?}"
        );
        let st = TensorType::new([1, 1, 1, 1], DType::F32);
        let s = gated_delta_rule(3.0, ScanOutput::LastState, [&q, &k, &v, &g, &beta], &st).unwrap();
        assert!((f64::from(s.as_f32().unwrap()[0]) - s1).abs() < 1e-6);
    }
}
