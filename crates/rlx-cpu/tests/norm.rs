//! Layer norm, RMS norm, softmax, log-softmax and the fused residual-add norm.
// Test crate: its helpers may unwrap, expect and panic, as the #[test] functions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::*;
use rlx_ir::{BinaryOp, NormKind, Op};

#[test]
fn layer_norm_by_hand() {
    // Row [1, 2, 3, 4]: mean 2.5, biased var 1.25.
    let x = t32(&[2, 4], vec![1.0, 2.0, 3.0, 4.0, 2.0, 2.0, 2.0, 2.0]);
    let g = t32(&[4], vec![1.0, 2.0, 1.0, 1.0]);
    let b = t32(&[4], vec![0.0, 0.0, 0.0, 1.0]);
    let r = evf(Op::LayerNorm { eps: 0.0 }, &[&x, &g, &b], &[2, 4]);
    let s = 1.25f64.sqrt();
    close64(&r[..4], &[-1.5 / s, 2.0 * -0.5 / s, 0.5 / s, 1.5 / s + 1.0], 1e-6);
    // Without eps a constant row is 0/0.
    assert!(r[4..].iter().all(|v| v.is_nan()));
    // A constant row with eps: (x − mean) is 0, so only beta remains; eps keeps it finite.
    let r = evf(Op::LayerNorm { eps: 1e-5 }, &[&x, &g, &b], &[2, 4]);
    assert_eq!(&r[4..], &[0.0, 0.0, 0.0, 1.0]);
}

#[test]
fn rms_norm_by_hand() {
    // Row [3, 4]: mean square 12.5.
    let x = t32(&[1, 2], vec![3.0, 4.0]);
    let g = t32(&[2], vec![1.0, 0.5]);
    let r = evf(Op::RmsNorm { eps: 0.5 }, &[&x, &g], &[1, 2]);
    close64(&r, &[3.0 / 13f64.sqrt(), 0.5 * 4.0 / 13f64.sqrt()], 1e-6);
}

#[test]
fn norms_on_prime_rows_match_naive() {
    let (rows, d) = (11, 13);
    let v = rand_vec(rows * d, 7);
    let g = rand_vec(d, 8);
    let b = rand_vec(d, 9);
    let r = evf(
        Op::LayerNorm { eps: 1e-5 },
        &[&t32(&[rows, d], v.clone()), &t32(&[d], g.clone()), &t32(&[d], b.clone())],
        &[rows, d],
    );
    let mut expect = Vec::new();
    for row in v.chunks(d) {
        let mean = row.iter().map(|&e| e as f64).sum::<f64>() / d as f64;
        let var = row.iter().map(|&e| (e as f64 - mean).powi(2)).sum::<f64>() / d as f64;
        for j in 0..d {
            expect.push((row[j] as f64 - mean) / (var + 1e-5).sqrt() * g[j] as f64 + b[j] as f64);
        }
    }
    close64(&r, &expect, 1e-5);
}

#[test]
fn softmax_and_log_softmax_by_hand() {
    let x = t32(&[2, 3], vec![1.0, 2.0, 3.0, 1000.0, 1000.0, 1000.0]);
    let r = evf(Op::Softmax, &[&x], &[2, 3]);
    let z = 1f64.exp() + 2f64.exp() + 3f64.exp();
    let expect = [1f64.exp() / z, 2f64.exp() / z, 3f64.exp() / z, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0];
    close64(&r, &expect, 1e-6);
    let r = evf(Op::LogSoftmax, &[&x], &[2, 3]);
    let lz = z.ln();
    close64(&r, &[1.0 - lz, 2.0 - lz, 3.0 - lz, -(3f64.ln()), -(3f64.ln()), -(3f64.ln())], 1e-6);
}

#[test]
fn softmax_nan_row_is_nan_and_others_unaffected() {
    let x = t32(&[2, 2], vec![f32::NAN, 0.0, 0.0, 0.0]);
    let r = evf(Op::Softmax, &[&x], &[2, 2]);
    assert!(r[0].is_nan() && r[1].is_nan());
    assert_eq!(&r[2..], &[0.5, 0.5]);
    let r = evf(Op::LogSoftmax, &[&x], &[2, 2]);
    assert!(r[0].is_nan() && r[1].is_nan());
    // -inf entries get probability 0.
    let y = t32(&[3], vec![f32::NEG_INFINITY, 0.0, 0.0]);
    assert_eq!(evf(Op::Softmax, &[&y], &[3]), vec![0.0, 0.5, 0.5]);
}

#[test]
fn softmax_size_one_and_empty() {
    assert_eq!(evf(Op::Softmax, &[&t32(&[3, 1], vec![5.0, -2.0, 0.0])], &[3, 1]), vec![1.0; 3]);
    assert!(evf(Op::Softmax, &[&t32(&[0, 4], vec![])], &[0, 4]).is_empty());
    assert!(evf(Op::Softmax, &[&t32(&[2, 0], vec![])], &[2, 0]).is_empty());
}

#[test]
fn add_norm_equals_add_then_norm() {
    let (r, d) = (3, 5);
    let x = t32(&[r, d], rand_vec(r * d, 1));
    let res = t32(&[r, d], rand_vec(r * d, 2));
    let g = t32(&[d], rand_vec(d, 3));
    let b = t32(&[d], rand_vec(d, 4));
    let sum = t32(&[r, d], evf(Op::Binary(BinaryOp::Add), &[&x, &res], &[r, d]));
    let ln = evf(Op::LayerNorm { eps: 1e-5 }, &[&sum, &g, &b], &[r, d]);
    let fused = evf(Op::AddNorm { norm: NormKind::LayerNorm, eps: 1e-5 }, &[&x, &res, &g, &b], &[r, d]);
    assert_eq!(fused, ln);
    let rms = evf(Op::RmsNorm { eps: 1e-6 }, &[&sum, &g], &[r, d]);
    let fused = evf(Op::AddNorm { norm: NormKind::RmsNorm, eps: 1e-6 }, &[&x, &res, &g], &[r, d]);
    assert_eq!(fused, rms);
}
