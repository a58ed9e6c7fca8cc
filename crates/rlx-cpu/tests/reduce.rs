//! Reductions, arg-reductions, cumsum and top-k against hand-computed values.
// Test crate: its helpers may unwrap, expect and panic, as the #[test] functions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::*;
use rlx_ir::{ArgReduceOp, DType, Op, ReduceOp, Tensor, TensorData, TopKOutput};

fn red(op: ReduceOp, x: &Tensor, axes: &[usize], keepdim: bool, dims: &[usize]) -> Vec<f32> {
    evf(Op::Reduce { op, axes: axes.to_vec(), keepdim }, &[x], dims)
}

/// [2, 3, 2] holding 1..=12.
fn x232() -> Tensor {
    t32(&[2, 3, 2], (1..=12).map(|v| v as f32).collect())
}

#[test]
fn sum_over_each_axis_set() {
    let x = x232();
    assert_eq!(red(ReduceOp::Sum, &x, &[0], false, &[3, 2]), vec![8.0, 10.0, 12.0, 14.0, 16.0, 18.0]);
    assert_eq!(red(ReduceOp::Sum, &x, &[1], false, &[2, 2]), vec![9.0, 12.0, 27.0, 30.0]);
    assert_eq!(red(ReduceOp::Sum, &x, &[2], true, &[2, 3, 1]), vec![3.0, 7.0, 11.0, 15.0, 19.0, 23.0]);
    assert_eq!(red(ReduceOp::Sum, &x, &[0, 2], false, &[3]), vec![18.0, 26.0, 34.0]);
    assert_eq!(red(ReduceOp::Sum, &x, &[0, 1, 2], false, &[]), vec![78.0]);
}

#[test]
fn mean_prod_max_min() {
    let x = x232();
    assert_eq!(red(ReduceOp::Mean, &x, &[1], false, &[2, 2]), vec![3.0, 4.0, 9.0, 10.0]);
    assert_eq!(red(ReduceOp::Prod, &x, &[2], false, &[2, 3]), vec![2.0, 12.0, 30.0, 56.0, 90.0, 132.0]);
    assert_eq!(red(ReduceOp::Max, &x, &[0, 1], false, &[2]), vec![11.0, 12.0]);
    assert_eq!(red(ReduceOp::Min, &x, &[1], true, &[2, 1, 2]), vec![1.0, 2.0, 7.0, 8.0]);
}

#[test]
fn sum_accumulates_in_f64() {
    // 1e8 + 1 + 1 + ... in f32 would lose every 1; f64 accumulation keeps them.
    let mut v = vec![1.0f32; 101];
    v[0] = 1e8;
    let x = t32(&[101], v);
    assert_eq!(red(ReduceOp::Sum, &x, &[0], false, &[]), vec![100_000_100.0]);
}

#[test]
fn max_min_propagate_nan() {
    let x = t32(&[2, 3], vec![1.0, f32::NAN, 3.0, 4.0, 5.0, 6.0]);
    let r = red(ReduceOp::Max, &x, &[1], false, &[2]);
    assert!(r[0].is_nan() && r[1] == 6.0);
    let r = red(ReduceOp::Min, &x, &[0], false, &[3]);
    assert!(r[0] == 1.0 && r[1].is_nan() && r[2] == 3.0);
    let r = red(ReduceOp::Sum, &x, &[1], false, &[2]);
    assert!(r[0].is_nan() && r[1] == 15.0);
}

#[test]
fn reductions_over_an_empty_axis() {
    let x = t32(&[2, 0], vec![]);
    assert_eq!(red(ReduceOp::Sum, &x, &[1], false, &[2]), vec![0.0, 0.0]);
    assert_eq!(red(ReduceOp::Prod, &x, &[1], false, &[2]), vec![1.0, 1.0]);
    assert!(red(ReduceOp::Mean, &x, &[1], false, &[2]).iter().all(|v| v.is_nan()));
    assert!(red(ReduceOp::Max, &x, &[1], false, &[2]).iter().all(|v| v.is_nan()));
    // Reducing the non-empty axis of an empty tensor gives an empty result.
    assert!(red(ReduceOp::Sum, &x, &[0], false, &[0]).is_empty());
}

#[test]
fn integer_reductions_wrap() {
    let x = ti32(&[2, 2], vec![i32::MAX, 1, -3, 4]);
    let s = ev(Op::Reduce { op: ReduceOp::Sum, axes: vec![1], keepdim: false }, &[&x], &[2], DType::I32);
    assert_eq!(s.as_i32().unwrap(), &[i32::MIN, 1]);
    let p = ev(Op::Reduce { op: ReduceOp::Prod, axes: vec![0], keepdim: false }, &[&x], &[2], DType::I32);
    assert_eq!(p.as_i32().unwrap(), &[i32::MAX.wrapping_mul(-3), 4]);
    let m = ev(Op::Reduce { op: ReduceOp::Max, axes: vec![0, 1], keepdim: false }, &[&x], &[], DType::I32);
    assert_eq!(m.as_i32().unwrap(), &[i32::MAX]);
    let u = tu32(&[3], vec![u32::MAX, 2, 5]);
    let s = ev(Op::Reduce { op: ReduceOp::Sum, axes: vec![0], keepdim: true }, &[&u], &[1], DType::U32);
    assert_eq!(s.data(), &TensorData::U32(vec![6]));
    let m = ev(Op::Reduce { op: ReduceOp::Min, axes: vec![0], keepdim: false }, &[&u], &[], DType::U32);
    assert_eq!(m.data(), &TensorData::U32(vec![2]));
}

#[test]
fn large_strided_sum_matches_naive() {
    // 37 x 41 x 3: reduce the middle axis (not trailing) over enough data to go parallel.
    let (a, b, c) = (37, 41, 29);
    let v = rand_vec(a * b * c, 5);
    let x = t32(&[a, b, c], v.clone());
    let r = red(ReduceOp::Sum, &x, &[1], false, &[a, c]);
    let mut expect = vec![0f64; a * c];
    for i in 0..a {
        for j in 0..b {
            for k in 0..c {
                expect[i * c + k] += v[(i * b + j) * c + k] as f64;
            }
        }
    }
    close64(&r, &expect, 1e-6);
}

fn arg(op: ArgReduceOp, x: &Tensor, axis: usize, keepdim: bool, dims: &[usize]) -> Vec<i32> {
    ev(Op::ArgReduce { op, axis, keepdim }, &[x], dims, DType::I32).as_i32().unwrap().to_vec()
}

#[test]
fn argmax_argmin_ties_and_nan() {
    let x = t32(&[2, 4], vec![1.0, 3.0, 3.0, 0.0, 2.0, f32::NAN, 5.0, f32::NAN]);
    assert_eq!(arg(ArgReduceOp::ArgMax, &x, 1, false, &[2]), vec![1, 1]);
    assert_eq!(arg(ArgReduceOp::ArgMin, &x, 1, true, &[2, 1]), vec![3, 1]);
    assert_eq!(arg(ArgReduceOp::ArgMax, &x, 0, false, &[4]), vec![1, 1, 1, 1]);
    assert_eq!(arg(ArgReduceOp::ArgMin, &x, 0, false, &[4]), vec![0, 1, 0, 1]);
    let i = ti32(&[3], vec![-1, 7, 7]);
    assert_eq!(arg(ArgReduceOp::ArgMax, &i, 0, false, &[]), vec![1]);
}

#[test]
fn cumsum_along_each_axis() {
    let x = t32(&[2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!(evf(Op::Cumsum { axis: 1 }, &[&x], &[2, 3]), vec![1.0, 3.0, 6.0, 4.0, 9.0, 15.0]);
    assert_eq!(evf(Op::Cumsum { axis: 0 }, &[&x], &[2, 3]), vec![1.0, 2.0, 3.0, 5.0, 7.0, 9.0]);
    let i = ti32(&[3], vec![i32::MAX, 1, 1]);
    let r = ev(Op::Cumsum { axis: 0 }, &[&i], &[3], DType::I32);
    assert_eq!(r.as_i32().unwrap(), &[i32::MAX, i32::MIN, i32::MIN + 1]);
    assert!(evf(Op::Cumsum { axis: 1 }, &[&t32(&[2, 0], vec![])], &[2, 0]).is_empty());
}

fn topk(x: &Tensor, k: usize, axis: usize, largest: bool, dims: &[usize]) -> (Tensor, Vec<i32>) {
    let v = ev(Op::TopK { k, axis, largest, output: TopKOutput::Values }, &[x], dims, x.dtype());
    let i = ev(Op::TopK { k, axis, largest, output: TopKOutput::Indices }, &[x], dims, DType::I32);
    (v, i.as_i32().unwrap().to_vec())
}

#[test]
fn topk_sorted_with_ties_by_index() {
    let x = t32(&[2, 5], vec![3.0, 1.0, 3.0, 5.0, 2.0, 0.0, 0.0, -1.0, 4.0, 0.0]);
    let (v, i) = topk(&x, 3, 1, true, &[2, 3]);
    assert_eq!(v.as_f32().unwrap(), &[5.0, 3.0, 3.0, 4.0, 0.0, 0.0]);
    assert_eq!(i, vec![3, 0, 2, 3, 0, 1]);
    let (v, i) = topk(&x, 2, 1, false, &[2, 2]);
    assert_eq!(v.as_f32().unwrap(), &[1.0, 2.0, -1.0, 0.0]);
    assert_eq!(i, vec![1, 4, 2, 0]);
    // Along axis 0 of the same data.
    let (v, i) = topk(&x, 1, 0, true, &[1, 5]);
    assert_eq!(v.as_f32().unwrap(), &[3.0, 1.0, 3.0, 5.0, 2.0]);
    assert_eq!(i, vec![0, 0, 0, 0, 0]);
}

#[test]
fn topk_treats_nan_as_largest() {
    let x = t32(&[4], vec![1.0, f32::NAN, 7.0, f32::NAN]);
    let (v, i) = topk(&x, 2, 0, true, &[2]);
    assert!(v.as_f32().unwrap().iter().all(|e| e.is_nan()));
    assert_eq!(i, vec![1, 3]);
    let (v, i) = topk(&x, 3, 0, false, &[3]);
    assert_eq!(&v.as_f32().unwrap()[..2], &[1.0, 7.0]);
    assert_eq!(i, vec![0, 2, 1]);
}

#[test]
fn topk_on_integers_keeps_dtype() {
    let x = ti32(&[5], vec![4, -2, 9, 4, 0]);
    let (v, i) = topk(&x, 5, 0, true, &[5]);
    assert_eq!(v.as_i32().unwrap(), &[9, 4, 4, 0, -2]);
    assert_eq!(i, vec![2, 0, 3, 4, 1]);
}
