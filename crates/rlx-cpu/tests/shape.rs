//! Shape ops on every dtype: reshape, permute, slice, concat, expand, gather, pad, reverse,
//! upsample.
// Test crate: its helpers may unwrap, expect and panic, as the #[test] functions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::*;
use half::f16;
use rlx_ir::{DType, Op, Shape, Tensor, TensorData};

fn seq(dims: &[usize]) -> Tensor {
    let n: usize = dims.iter().product();
    t32(dims, (0..n).map(|v| v as f32).collect())
}

#[test]
fn reshape_keeps_data() {
    let x = seq(&[2, 3]);
    let r = ev(Op::Reshape(Shape::new(&[3, 1, 2])), &[&x], &[3, 1, 2], DType::F32);
    assert_eq!(r.dims(), &[3, 1, 2]);
    assert_eq!(r.data(), x.data());
}

#[test]
fn permute_2d_and_3d() {
    let x = seq(&[2, 3]);
    assert_eq!(evf(Op::Permute(vec![1, 0]), &[&x], &[3, 2]), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    let y = seq(&[2, 3, 4]);
    let r = evf(Op::Permute(vec![2, 0, 1]), &[&y], &[4, 2, 3]);
    // out[k, i, j] = y[i, j, k] = 12i + 4j + k
    let expect: Vec<f32> = (0..4)
        .flat_map(|k| (0..2).flat_map(move |i| (0..3).map(move |j| (12 * i + 4 * j + k) as f32)))
        .collect();
    assert_eq!(r, expect);
}

#[test]
fn permute_bool_and_f16() {
    let b = tbool(&[2, 2], vec![true, false, false, false]);
    let r = ev(Op::Permute(vec![1, 0]), &[&b], &[2, 2], DType::Bool);
    assert_eq!(r.as_bool().unwrap(), &[true, false, false, false]);
    let h: Vec<f16> = [1.0f32, 2.0, 3.0, 4.0].iter().map(|&v| f16::from_f32(v)).collect();
    let x = Tensor::from_f16([2, 2], h.clone()).unwrap();
    let r = ev(Op::Permute(vec![1, 0]), &[&x], &[2, 2], DType::F16);
    assert_eq!(r.data(), &TensorData::F16(vec![h[0], h[2], h[1], h[3]]));
}

#[test]
fn slice_with_step_and_empty() {
    let x = seq(&[3, 7]);
    let r = evf(Op::Slice { axis: 1, start: 1, end: 7, step: 3 }, &[&x], &[3, 2]);
    assert_eq!(r, vec![1.0, 4.0, 8.0, 11.0, 15.0, 18.0]);
    let r = evf(Op::Slice { axis: 0, start: 2, end: 3, step: 1 }, &[&x], &[1, 7]);
    assert_eq!(r, (14..21).map(|v| v as f32).collect::<Vec<_>>());
    assert!(evf(Op::Slice { axis: 1, start: 4, end: 4, step: 1 }, &[&x], &[3, 0]).is_empty());
    let i = ti32(&[5], vec![10, 11, 12, 13, 14]);
    let r = ev(Op::Slice { axis: 0, start: 0, end: 5, step: 2 }, &[&i], &[3], DType::I32);
    assert_eq!(r.as_i32().unwrap(), &[10, 12, 14]);
}

#[test]
fn concat_along_inner_and_outer_axes() {
    let a = seq(&[2, 2]);
    let b = t32(&[2, 1], vec![9.0, 8.0]);
    assert_eq!(evf(Op::Concat { axis: 1 }, &[&a, &b], &[2, 3]), vec![0.0, 1.0, 9.0, 2.0, 3.0, 8.0]);
    let c = t32(&[1, 2], vec![7.0, 6.0]);
    assert_eq!(evf(Op::Concat { axis: 0 }, &[&a, &c], &[3, 2]), vec![0.0, 1.0, 2.0, 3.0, 7.0, 6.0]);
    let e = t32(&[2, 0], vec![]);
    assert_eq!(evf(Op::Concat { axis: 1 }, &[&e, &b, &e], &[2, 1]), vec![9.0, 8.0]);
    assert_eq!(evf(Op::Concat { axis: 0 }, &[&b], &[2, 1]), vec![9.0, 8.0]);
    let u = tu32(&[1], vec![1]);
    let v = tu32(&[2], vec![2, 3]);
    let r = ev(Op::Concat { axis: 0 }, &[&u, &v], &[3], DType::U32);
    assert_eq!(r.data(), &TensorData::U32(vec![1, 2, 3]));
}

#[test]
fn expand_broadcasts() {
    let x = t32(&[3, 1], vec![1.0, 2.0, 3.0]);
    let r = evf(Op::Expand(Shape::new(&[2, 3, 2])), &[&x], &[2, 3, 2]);
    assert_eq!(r, vec![1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0]);
    let s = Tensor::scalar_f32(4.0);
    assert_eq!(evf(Op::Expand(Shape::new(&[3])), &[&s], &[3]), vec![4.0; 3]);
    assert!(evf(Op::Expand(Shape::new(&[0, 3])), &[&t32(&[1, 3], vec![1.0, 2.0, 3.0])], &[0, 3]).is_empty());
}

#[test]
fn gather_embedding_and_inner_axis() {
    let table = seq(&[4, 3]);
    let ids = ti32(&[2, 2], vec![3, 0, 1, 3]);
    let r = evf(Op::Gather { axis: 0 }, &[&table, &ids], &[2, 2, 3]);
    assert_eq!(r, vec![9.0, 10.0, 11.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 9.0, 10.0, 11.0]);
    let cols = ti32(&[3], vec![2, 2, 0]);
    let r = evf(Op::Gather { axis: 1 }, &[&table, &cols], &[4, 3]);
    assert_eq!(r[..6], [2.0, 2.0, 0.0, 5.0, 5.0, 3.0]);
    // Scalar index drops the axis.
    let one = ti32(&[], vec![1]);
    assert_eq!(evf(Op::Gather { axis: 0 }, &[&table, &one], &[3]), vec![3.0, 4.0, 5.0]);
}

#[test]
fn gather_out_of_range_gives_zeros() {
    let table = t32(&[3, 2], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let ids = ti32(&[4], vec![-1, 3, i32::MAX, 2]);
    let r = evf(Op::Gather { axis: 0 }, &[&table, &ids], &[4, 2]);
    assert_eq!(r, vec![0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 5.0, 6.0]);
    let b = tbool(&[3], vec![true, true, true]);
    let r = ev(Op::Gather { axis: 0 }, &[&b, &ti32(&[2], vec![5, 0])], &[2], DType::Bool);
    assert_eq!(r.as_bool().unwrap(), &[false, true]);
}

#[test]
fn pad_constant() {
    let x = t32(&[2, 2], vec![1.0, 2.0, 3.0, 4.0]);
    let r = evf(Op::Pad { pads: vec![(1, 0), (0, 2)], value: -1.0 }, &[&x], &[3, 4]);
    assert_eq!(r, vec![-1.0, -1.0, -1.0, -1.0, 1.0, 2.0, -1.0, -1.0, 3.0, 4.0, -1.0, -1.0]);
    let i = ti32(&[1], vec![5]);
    let r = ev(Op::Pad { pads: vec![(2, 1)], value: 7.9 }, &[&i], &[4], DType::I32);
    assert_eq!(r.as_i32().unwrap(), &[7, 7, 5, 7]);
    let e = t32(&[0], vec![]);
    assert_eq!(evf(Op::Pad { pads: vec![(1, 1)], value: 3.0 }, &[&e], &[2]), vec![3.0, 3.0]);
}

#[test]
fn reverse_axes() {
    let x = seq(&[2, 3]);
    assert_eq!(evf(Op::Reverse { axes: vec![1] }, &[&x], &[2, 3]), vec![2.0, 1.0, 0.0, 5.0, 4.0, 3.0]);
    assert_eq!(evf(Op::Reverse { axes: vec![0, 1] }, &[&x], &[2, 3]), vec![5.0, 4.0, 3.0, 2.0, 1.0, 0.0]);
    assert!(evf(Op::Reverse { axes: vec![0] }, &[&t32(&[0, 2], vec![])], &[0, 2]).is_empty());
}

#[test]
fn upsample_nearest() {
    let x = t32(&[1, 1, 2, 2], vec![1.0, 2.0, 3.0, 4.0]);
    let r = evf(Op::Upsample2x, &[&x], &[1, 1, 4, 4]);
    assert_eq!(r, vec![1.0, 1.0, 2.0, 2.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0, 4.0, 3.0, 3.0, 4.0, 4.0]);
    let y = seq(&[2, 3, 1, 1]);
    let r = evf(Op::Upsample2x, &[&y], &[2, 3, 2, 2]);
    let expect: Vec<f32> = (0..6).flat_map(|v| [v as f32; 4]).collect();
    assert_eq!(r, expect);
}
