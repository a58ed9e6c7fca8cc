//! Helpers shared by the rlx-cpu integration tests.
#![allow(dead_code)]

use rlx_ir::{DType, Op, Tensor, TensorType};

pub fn t32(dims: &[usize], v: Vec<f32>) -> Tensor {
    Tensor::from_f32(dims, v).unwrap()
}

pub fn ti32(dims: &[usize], v: Vec<i32>) -> Tensor {
    Tensor::from_i32(dims, v).unwrap()
}

pub fn tu32(dims: &[usize], v: Vec<u32>) -> Tensor {
    Tensor::from_u32(dims, v).unwrap()
}

pub fn tbool(dims: &[usize], v: Vec<bool>) -> Tensor {
    Tensor::from_bool(dims, v).unwrap()
}

pub fn ty(dims: &[usize], dtype: DType) -> TensorType {
    TensorType::new(dims, dtype)
}

/// `eval` with a hand-written output type; panics (test failure) on error.
pub fn ev(op: Op, inputs: &[&Tensor], dims: &[usize], dtype: DType) -> Tensor {
    rlx_cpu::eval(&op, inputs, &ty(dims, dtype)).unwrap()
}

/// `eval` producing f32 values.
pub fn evf(op: Op, inputs: &[&Tensor], dims: &[usize]) -> Vec<f32> {
    let t = ev(op, inputs, dims, DType::F32);
    assert_eq!(t.dims(), dims);
    t.as_f32().unwrap().to_vec()
}

/// A deterministic pseudo-random sequence in [-1, 1), for inputs of larger tests.
pub fn rand_vec(n: usize, seed: u64) -> Vec<f32> {
    rlx_test_support::uniform(n, seed, 1.0)
}

/// Elementwise closeness: |a−b| ≤ tol·(1 + |b|); NaN only matches NaN.
pub fn assert_close(a: &[f32], b: &[f32], tol: f32) {
    assert_eq!(a.len(), b.len(), "lengths differ: {a:?} vs {b:?}");
    for (i, (&x, &y)) in a.iter().zip(b).enumerate() {
        if x.is_nan() || y.is_nan() {
            assert!(x.is_nan() && y.is_nan(), "element {i}: {x} vs {y}");
        } else {
            assert!(
                (x - y).abs() <= tol * (1.0 + y.abs()),
                "element {i}: {x} vs {y} (tol {tol})\n{a:?}\n{b:?}"
            );
        }
    }
}

pub fn close64(a: &[f32], b: &[f64], tol: f64) {
    let b: Vec<f32> = b.iter().map(|&x| x as f32).collect();
    assert_close(a, &b, tol as f32);
}
