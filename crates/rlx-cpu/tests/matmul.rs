//! Matmul (2-D, batched with broadcast, transposed operands) and the fused matmul epilogue,
//! against naive triple loops.
// Test crate: its helpers may unwrap, expect and panic, as the #[test] functions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::*;
use half::f16;
use rlx_ir::{BinaryOp, DType, Op, Tensor, TensorData, UnaryOp};

fn mm(ta: bool, tb: bool) -> Op {
    Op::MatMul { transpose_a: ta, transpose_b: tb }
}

/// Naive `a · b` for one [m, k] · [k, n] product (after transposes), in f64.
fn naive(a: &[f32], b: &[f32], m: usize, k: usize, n: usize, ta: bool, tb: bool) -> Vec<f64> {
    let mut out = vec![0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            for p in 0..k {
                let x = if ta { a[p * m + i] } else { a[i * k + p] };
                let y = if tb { b[j * k + p] } else { b[p * n + j] };
                out[i * n + j] += x as f64 * y as f64;
            }
        }
    }
    out
}

#[test]
fn two_by_two_by_hand() {
    let a = t32(&[2, 2], vec![1.0, 2.0, 3.0, 4.0]);
    let b = t32(&[2, 2], vec![5.0, 6.0, 7.0, 8.0]);
    assert_eq!(evf(mm(false, false), &[&a, &b], &[2, 2]), vec![19.0, 22.0, 43.0, 50.0]);
    // aᵀ·b = [[1,3],[2,4]]·b
    assert_eq!(evf(mm(true, false), &[&a, &b], &[2, 2]), vec![26.0, 30.0, 38.0, 44.0]);
    // a·bᵀ = a·[[5,7],[6,8]]
    assert_eq!(evf(mm(false, true), &[&a, &b], &[2, 2]), vec![17.0, 23.0, 39.0, 53.0]);
    assert_eq!(evf(mm(true, true), &[&a, &b], &[2, 2]), vec![23.0, 31.0, 34.0, 46.0]);
}

#[test]
fn prime_sizes_every_transpose() {
    let (m, k, n) = (7, 13, 5);
    let a = rand_vec(m * k, 11);
    let b = rand_vec(k * n, 12);
    for ta in [false, true] {
        for tb in [false, true] {
            let ad: &[usize] = if ta { &[k, m] } else { &[m, k] };
            let bd: &[usize] = if tb { &[n, k] } else { &[k, n] };
            let r = evf(mm(ta, tb), &[&t32(ad, a.clone()), &t32(bd, b.clone())], &[m, n]);
            close64(&r, &naive(&a, &b, m, k, n, ta, tb), 1e-5);
        }
    }
}

#[test]
fn size_one_dims() {
    let a = t32(&[1, 3], vec![1.0, 2.0, 3.0]);
    let b = t32(&[3, 1], vec![4.0, 5.0, 6.0]);
    assert_eq!(evf(mm(false, false), &[&a, &b], &[1, 1]), vec![32.0]);
    assert_eq!(evf(mm(false, false), &[&b, &a], &[3, 3])[..3], [4.0, 8.0, 12.0]);
}

#[test]
fn batched_with_broadcast_batch_dims() {
    // a: [2, 1, 3, 4], b: [3, 4, 5] -> [2, 3, 3, 5]
    let (m, k, n) = (3, 4, 5);
    let a = rand_vec(2 * m * k, 21);
    let b = rand_vec(3 * k * n, 22);
    let r =
        evf(mm(false, false), &[&t32(&[2, 1, m, k], a.clone()), &t32(&[3, k, n], b.clone())], &[2, 3, m, n]);
    let mut expect = Vec::new();
    for i in 0..2 {
        for j in 0..3 {
            expect.extend(naive(&a[i * m * k..][..m * k], &b[j * k * n..][..k * n], m, k, n, false, false));
        }
    }
    close64(&r, &expect, 1e-5);
    // Many small batches (the per-thread path) with a transposed rhs.
    let batches = 40;
    let a = rand_vec(batches * m * k, 23);
    let b = rand_vec(batches * n * k, 24);
    let r = evf(
        mm(false, true),
        &[&t32(&[batches, m, k], a.clone()), &t32(&[batches, n, k], b.clone())],
        &[batches, m, n],
    );
    let expect: Vec<f64> = (0..batches)
        .flat_map(|i| naive(&a[i * m * k..][..m * k], &b[i * n * k..][..n * k], m, k, n, false, true))
        .collect();
    close64(&r, &expect, 1e-5);
}

#[test]
fn empty_and_zero_inner_dim() {
    let a = t32(&[0, 3], vec![]);
    let b = t32(&[3, 2], vec![1.0; 6]);
    assert!(evf(mm(false, false), &[&a, &b], &[0, 2]).is_empty());
    let a = t32(&[2, 0], vec![]);
    let b = t32(&[0, 3], vec![]);
    assert_eq!(evf(mm(false, false), &[&a, &b], &[2, 3]), vec![0.0; 6]);
}

#[test]
fn nan_propagates() {
    let a = t32(&[2, 2], vec![f32::NAN, 1.0, 1.0, 1.0]);
    let b = t32(&[2, 2], vec![1.0, 1.0, 1.0, 1.0]);
    let r = evf(mm(false, false), &[&a, &b], &[2, 2]);
    assert!(r[0].is_nan() && r[1].is_nan() && r[2] == 2.0 && r[3] == 2.0);
}

#[test]
fn f16_is_widened_and_rounded() {
    let h = |v: &[f32]| v.iter().map(|&x| f16::from_f32(x)).collect::<Vec<_>>();
    let a = Tensor::from_f16([1, 3], h(&[0.1, 0.2, 0.3])).unwrap();
    let b = Tensor::from_f16([3, 1], h(&[1.0, 2.0, 3.0])).unwrap();
    let r = ev(mm(false, false), &[&a, &b], &[1, 1], DType::F16);
    let exact: f32 =
        [0.1f32, 0.2, 0.3].iter().zip([1.0f32, 2.0, 3.0]).map(|(&x, y)| f16::from_f32(x).to_f32() * y).sum();
    assert_eq!(r.data(), &TensorData::F16(vec![f16::from_f32(exact)]));
}

#[test]
fn fused_matmul_equals_its_parts() {
    let (m, k, n) = (5, 7, 3);
    let a = t32(&[m, k], rand_vec(m * k, 31));
    let w = t32(&[n, k], rand_vec(n * k, 32));
    let bias = t32(&[n], rand_vec(n, 33));
    let op = Op::FusedMatMul {
        transpose_a: false,
        transpose_b: true,
        bias: true,
        activation: Some(UnaryOp::Gelu),
    };
    let fused = evf(op, &[&a, &w, &bias], &[m, n]);
    let y = t32(&[m, n], evf(mm(false, true), &[&a, &w], &[m, n]));
    let y = t32(&[m, n], evf(Op::Binary(BinaryOp::Add), &[&y, &bias], &[m, n]));
    let y = evf(Op::Unary(UnaryOp::Gelu), &[&y], &[m, n]);
    assert_eq!(fused, y);
    // No bias, no activation: a plain matmul.
    let op = Op::FusedMatMul { transpose_a: false, transpose_b: true, bias: false, activation: None };
    assert_eq!(evf(op, &[&a, &w], &[m, n]), evf(mm(false, true), &[&a, &w], &[m, n]));
}

#[test]
fn large_square_matches_naive_samples() {
    // 129³ goes through gemm's threaded path; check a sample of entries against the naive sum.
    let s = 129;
    let a = rand_vec(s * s, 41);
    let b = rand_vec(s * s, 42);
    let r = evf(mm(false, false), &[&t32(&[s, s], a.clone()), &t32(&[s, s], b.clone())], &[s, s]);
    for &(i, j) in &[(0, 0), (5, 128), (128, 7), (64, 64), (100, 3)] {
        let e: f64 = (0..s).map(|p| a[i * s + p] as f64 * b[p * s + j] as f64).sum();
        assert!((r[i * s + j] as f64 - e).abs() < 1e-4, "({i},{j}): {} vs {e}", r[i * s + j]);
    }
}
