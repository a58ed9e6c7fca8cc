//! Unary, binary, compare, where, cast and fused elementwise ops against hand-computed values.
// Test crate: its helpers may unwrap, expect and panic, as the #[test] functions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::*;
use half::f16;
use rlx_ir::{BinaryOp, CompareOp, DType, EwProgram, EwStep, Op, Tensor, UnaryOp};

fn un(op: UnaryOp, v: Vec<f32>) -> Vec<f32> {
    let n = v.len();
    evf(Op::Unary(op), &[&t32(&[n], v)], &[n])
}

const XS: [f32; 4] = [-2.0, -1.0, 0.5, 3.0];

#[test]
fn gelu_both_forms() {
    let x = XS.to_vec();
    close64(
        &un(UnaryOp::Gelu, x.clone()),
        &[-0.04550026389635842, -0.15865525393145707, 0.34573123063700656, 2.99595030590511],
        1e-6,
    );
    close64(
        &un(UnaryOp::GeluTanh, x),
        &[-0.04540230591222494, -0.15880800939172324, 0.34571400982514394, 2.996362607918227],
        1e-6,
    );
}

#[test]
fn silu_sigmoid_tanh() {
    let x = XS.to_vec();
    close64(
        &un(UnaryOp::Silu, x.clone()),
        &[-0.2384058440442351, -0.2689414213699951, 0.3112296656009273, 2.8577223804673],
        1e-6,
    );
    close64(
        &un(UnaryOp::Sigmoid, x.clone()),
        &[0.11920292202211755, 0.2689414213699951, 0.6224593312018546, 0.9525741268224334],
        1e-6,
    );
    close64(
        &un(UnaryOp::Tanh, x),
        &[-0.9640275800758169, -0.7615941559557649, 0.46211715726000974, 0.9950547536867305],
        1e-6,
    );
}

#[test]
fn sigmoid_and_silu_are_stable_for_large_inputs() {
    let s = un(UnaryOp::Sigmoid, vec![1000.0, -1000.0, 88.0, -88.0]);
    assert_eq!(s[0], 1.0);
    assert_eq!(s[1], 0.0);
    assert_eq!(s[2], 1.0);
    assert!(s[3] > 0.0 && s[3] < 1e-37);
    let y = un(UnaryOp::Silu, vec![1000.0, -1000.0]);
    assert_eq!(y, vec![1000.0, -0.0]);
}

#[test]
fn simple_unaries() {
    let x = vec![4.0f32, 0.25, 1.0];
    assert_close(&un(UnaryOp::Sqrt, x.clone()), &[2.0, 0.5, 1.0], 0.0);
    assert_close(&un(UnaryOp::Rsqrt, x.clone()), &[0.5, 2.0, 1.0], 0.0);
    assert_close(&un(UnaryOp::Recip, x.clone()), &[0.25, 4.0, 1.0], 0.0);
    assert_close(&un(UnaryOp::Square, x.clone()), &[16.0, 0.0625, 1.0], 0.0);
    assert_close(&un(UnaryOp::Log, x.clone()), &[4f32.ln(), 0.25f32.ln(), 0.0], 1e-7);
    assert_close(
        &un(UnaryOp::Exp, vec![0.0, 1.0, -1.0]),
        &[1.0, std::f32::consts::E, 1.0 / std::f32::consts::E],
        1e-7,
    );
    assert_close(&un(UnaryOp::Sin, vec![0.0, std::f32::consts::FRAC_PI_2]), &[0.0, 1.0], 1e-7);
    assert_close(&un(UnaryOp::Cos, vec![0.0, std::f32::consts::PI]), &[1.0, -1.0], 1e-7);
    assert_close(&un(UnaryOp::Neg, vec![1.5, -2.0]), &[-1.5, 2.0], 0.0);
    assert_close(&un(UnaryOp::Abs, vec![1.5, -2.0]), &[1.5, 2.0], 0.0);
    assert_close(&un(UnaryOp::Relu, vec![1.5, -2.0, 0.0]), &[1.5, 0.0, 0.0], 0.0);
    // Out-of-domain inputs give NaN/inf, not a crash.
    let r = un(UnaryOp::Log, vec![-1.0, 0.0]);
    assert!(r[0].is_nan() && r[1] == f32::NEG_INFINITY);
    assert_eq!(un(UnaryOp::Recip, vec![0.0]), vec![f32::INFINITY]);
}

#[test]
fn nan_propagates_through_every_unary() {
    for op in UnaryOp::ALL {
        let r = un(op, vec![f32::NAN]);
        assert!(r[0].is_nan(), "{} of NaN gave {}", op.name(), r[0]);
    }
}

#[test]
fn i32_neg_abs_wrap() {
    let x = ti32(&[3], vec![5, -7, i32::MIN]);
    let n = ev(Op::Unary(UnaryOp::Neg), &[&x], &[3], DType::I32);
    assert_eq!(n.as_i32().unwrap(), &[-5, 7, i32::MIN]);
    let a = ev(Op::Unary(UnaryOp::Abs), &[&x], &[3], DType::I32);
    assert_eq!(a.as_i32().unwrap(), &[5, 7, i32::MIN]);
}

#[test]
fn f16_unary_rounds_through_f32() {
    let x = Tensor::from_f16([2], vec![f16::from_f32(1.0), f16::from_f32(-3.0)]).unwrap();
    let y = ev(Op::Unary(UnaryOp::Exp), &[&x], &[2], DType::F16);
    let expect: Vec<f16> = [1f32.exp(), (-3f32).exp()].iter().map(|&v| f16::from_f32(v)).collect();
    assert_eq!(y.data(), &rlx_ir::TensorData::F16(expect));
}

fn bin(op: BinaryOp, a: &Tensor, b: &Tensor, dims: &[usize]) -> Vec<f32> {
    evf(Op::Binary(op), &[a, b], dims)
}

#[test]
fn binary_broadcast_column_plus_row() {
    let a = t32(&[3, 1], vec![1.0, 2.0, 3.0]);
    let b = t32(&[1, 4], vec![10.0, 20.0, 30.0, 40.0]);
    let r = bin(BinaryOp::Add, &a, &b, &[3, 4]);
    assert_eq!(r, vec![11.0, 21.0, 31.0, 41.0, 12.0, 22.0, 32.0, 42.0, 13.0, 23.0, 33.0, 43.0]);
    let r = bin(BinaryOp::Sub, &a, &b, &[3, 4]);
    assert_eq!(r[..4], [-9.0, -19.0, -29.0, -39.0]);
}

#[test]
fn binary_scalar_and_rank_extension() {
    let s = Tensor::scalar_f32(2.0);
    let x = t32(&[2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!(bin(BinaryOp::Mul, &x, &s, &[2, 3]), vec![2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
    assert_eq!(bin(BinaryOp::Div, &s, &x, &[2, 3])[..3], [2.0, 1.0, 2.0 / 3.0]);
    assert_eq!(bin(BinaryOp::Pow, &x, &s, &[2, 3]), vec![1.0, 4.0, 9.0, 16.0, 25.0, 36.0]);
    // [3] against [2, 3]: rank extension on the left.
    let row = t32(&[3], vec![0.5, 5.0, 3.0]);
    assert_eq!(bin(BinaryOp::Maximum, &x, &row, &[2, 3]), vec![1.0, 5.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!(bin(BinaryOp::Minimum, &x, &row, &[2, 3]), vec![0.5, 2.0, 3.0, 0.5, 5.0, 3.0]);
}

#[test]
fn maximum_minimum_propagate_nan() {
    let a = t32(&[3], vec![f32::NAN, 1.0, 2.0]);
    let b = t32(&[3], vec![0.0, f32::NAN, 1.0]);
    let r = bin(BinaryOp::Maximum, &a, &b, &[3]);
    assert!(r[0].is_nan() && r[1].is_nan() && r[2] == 2.0);
    let r = bin(BinaryOp::Minimum, &a, &b, &[3]);
    assert!(r[0].is_nan() && r[1].is_nan() && r[2] == 1.0);
    let r = bin(BinaryOp::Add, &a, &b, &[3]);
    assert!(r[0].is_nan() && r[1].is_nan() && r[2] == 3.0);
}

#[test]
fn binary_on_empty_and_prime_shapes() {
    let a = t32(&[0, 3], vec![]);
    let b = t32(&[1, 3], vec![1.0, 2.0, 3.0]);
    assert!(bin(BinaryOp::Add, &a, &b, &[0, 3]).is_empty());
    let x = rand_vec(7 * 13, 1);
    let y = rand_vec(13, 2);
    let r = bin(BinaryOp::Mul, &t32(&[7, 13], x.clone()), &t32(&[13], y.clone()), &[7, 13]);
    let expect: Vec<f32> = (0..7 * 13).map(|i| x[i] * y[i % 13]).collect();
    assert_eq!(r, expect);
}

#[test]
fn integer_binary_semantics() {
    let a = ti32(&[6], vec![7, -7, 5, i32::MAX, i32::MIN, 2]);
    let b = ti32(&[6], vec![2, 2, 0, 1, -1, -1]);
    let r = |op| ev(Op::Binary(op), &[&a, &b], &[6], DType::I32).as_i32().unwrap().to_vec();
    assert_eq!(r(BinaryOp::Div), vec![3, -3, 0, i32::MAX, i32::MIN, -2]);
    assert_eq!(r(BinaryOp::Add), vec![9, -5, 5, i32::MIN, i32::MAX, 1]);
    assert_eq!(r(BinaryOp::Sub), vec![5, -9, 5, i32::MAX - 1, i32::MIN + 1, 3]);
    assert_eq!(r(BinaryOp::Mul), vec![14, -14, 0, i32::MAX, i32::MIN, -2]);
    assert_eq!(r(BinaryOp::Maximum), vec![7, 2, 5, i32::MAX, -1, 2]);
    assert_eq!(r(BinaryOp::Minimum), vec![2, -7, 0, 1, i32::MIN, -1]);
    let p = ti32(&[5], vec![3, -2, 2, 1, -1]);
    let e = ti32(&[5], vec![3, 3, -1, -5, -3]);
    let r = ev(Op::Binary(BinaryOp::Pow), &[&p, &e], &[5], DType::I32);
    assert_eq!(r.as_i32().unwrap(), &[27, -8, 0, 1, -1]);
}

#[test]
fn u32_binary_wraps() {
    let a = tu32(&[3], vec![1, 10, u32::MAX]);
    let b = tu32(&[3], vec![2, 0, 1]);
    let r = ev(Op::Binary(BinaryOp::Sub), &[&a, &b], &[3], DType::U32);
    assert_eq!(r.data(), &rlx_ir::TensorData::U32(vec![u32::MAX, 10, u32::MAX - 1]));
    let r = ev(Op::Binary(BinaryOp::Div), &[&a, &b], &[3], DType::U32);
    assert_eq!(r.data(), &rlx_ir::TensorData::U32(vec![0, 0, u32::MAX]));
}

#[test]
fn compare_with_broadcast_and_nan() {
    let a = t32(&[2, 1], vec![1.0, f32::NAN]);
    let b = t32(&[3], vec![0.0, 1.0, 2.0]);
    let r = |op| ev(Op::Compare(op), &[&a, &b], &[2, 3], DType::Bool).as_bool().unwrap().to_vec();
    let f = false;
    assert_eq!(r(CompareOp::Lt), vec![f, f, true, f, f, f]);
    assert_eq!(r(CompareOp::Le), vec![f, true, true, f, f, f]);
    assert_eq!(r(CompareOp::Gt), vec![true, f, f, f, f, f]);
    assert_eq!(r(CompareOp::Ge), vec![true, true, f, f, f, f]);
    assert_eq!(r(CompareOp::Eq), vec![f, true, f, f, f, f]);
    assert_eq!(r(CompareOp::Ne), vec![true, f, true, true, true, true]);
    let x = ti32(&[2], vec![-1, 3]);
    let y = ti32(&[1], vec![3]);
    let r = ev(Op::Compare(CompareOp::Eq), &[&x, &y], &[2], DType::Bool);
    assert_eq!(r.as_bool().unwrap(), &[false, true]);
    // Bool operands: false < true.
    let p = tbool(&[2], vec![false, true]);
    let q = tbool(&[1], vec![true]);
    let r = ev(Op::Compare(CompareOp::Lt), &[&p, &q], &[2], DType::Bool);
    assert_eq!(r.as_bool().unwrap(), &[true, false]);
    let r = ev(Op::Compare(CompareOp::Eq), &[&p, &q], &[2], DType::Bool);
    assert_eq!(r.as_bool().unwrap(), &[false, true]);
}

#[test]
fn where_broadcasts_all_three() {
    let c = tbool(&[2, 1], vec![true, false]);
    let a = t32(&[1, 3], vec![1.0, 2.0, 3.0]);
    let b = Tensor::scalar_f32(-1.0);
    let r = evf(Op::Where, &[&c, &a, &b], &[2, 3]);
    assert_eq!(r, vec![1.0, 2.0, 3.0, -1.0, -1.0, -1.0]);
    let ai = ti32(&[2], vec![5, 6]);
    let bi = ti32(&[2], vec![7, 8]);
    let c2 = tbool(&[2], vec![false, true]);
    let r = ev(Op::Where, &[&c2, &ai, &bi], &[2], DType::I32);
    assert_eq!(r.as_i32().unwrap(), &[7, 6]);
}

#[test]
fn cast_rules() {
    let x = t32(&[6], vec![1.7, -1.7, f32::NAN, 3e10, -3e10, 0.0]);
    let i = ev(Op::Cast(DType::I32), &[&x], &[6], DType::I32);
    assert_eq!(i.as_i32().unwrap(), &[1, -1, 0, i32::MAX, i32::MIN, 0]);
    let u = ev(Op::Cast(DType::U32), &[&x], &[6], DType::U32);
    assert_eq!(u.data(), &rlx_ir::TensorData::U32(vec![1, 0, 0, u32::MAX, 0, 0]));
    let b = ev(Op::Cast(DType::Bool), &[&x], &[6], DType::Bool);
    assert_eq!(b.as_bool().unwrap(), &[true, true, true, true, true, false]);
    let back = evf(Op::Cast(DType::F32), &[&b], &[6]);
    assert_eq!(back, vec![1.0, 1.0, 1.0, 1.0, 1.0, 0.0]);
    let h = ev(Op::Cast(DType::F16), &[&t32(&[2], vec![1.0 / 3.0, 70000.0])], &[2], DType::F16);
    assert_eq!(h.data(), &rlx_ir::TensorData::F16(vec![f16::from_f32(1.0 / 3.0), f16::INFINITY]));
    let neg = ev(Op::Cast(DType::U32), &[&ti32(&[2], vec![-5, 5])], &[2], DType::U32);
    assert_eq!(neg.data(), &rlx_ir::TensorData::U32(vec![0, 5]));
}

#[test]
fn fused_program_matches_unfused_ops() {
    // out = gelu(a * b + 0.5) with a [2,3], b [3].
    let a = t32(&[2, 3], rand_vec(6, 3));
    let b = t32(&[3], rand_vec(3, 4));
    let prog = EwProgram {
        steps: vec![
            EwStep::Input(0),
            EwStep::Input(1),
            EwStep::Binary(BinaryOp::Mul, 0, 1),
            EwStep::Scalar(0.5),
            EwStep::Binary(BinaryOp::Add, 2, 3),
            EwStep::Unary(UnaryOp::Gelu, 4),
        ],
    };
    let fused = evf(Op::FusedElementwise(prog), &[&a, &b], &[2, 3]);
    let m = t32(&[2, 3], bin(BinaryOp::Mul, &a, &b, &[2, 3]));
    let s = t32(&[2, 3], bin(BinaryOp::Add, &m, &Tensor::scalar_f32(0.5), &[2, 3]));
    let g = evf(Op::Unary(UnaryOp::Gelu), &[&s], &[2, 3]);
    assert_eq!(fused, g);
}

#[test]
fn fused_program_with_a_bad_register_is_an_error() {
    let a = t32(&[2], vec![1.0, 2.0]);
    let prog = EwProgram { steps: vec![EwStep::Input(0), EwStep::Unary(UnaryOp::Exp, 3)] };
    let r = rlx_cpu::eval(&Op::FusedElementwise(prog), &[&a], &ty(&[2], DType::F32));
    assert!(r.is_err());
}

#[test]
fn eval_rejects_a_wrong_output_type_and_leaves() {
    let a = t32(&[2], vec![1.0, 2.0]);
    let err = rlx_cpu::eval(&Op::Unary(UnaryOp::Exp), &[&a], &ty(&[3], DType::F32)).unwrap_err();
    assert!(err.to_string().contains("exp"), "{err}");
    assert!(rlx_cpu::eval(&Op::Binary(BinaryOp::Add), &[&a], &ty(&[2], DType::F32)).is_err());
    assert!(rlx_cpu::eval(&Op::Input { name: "x".into() }, &[], &ty(&[2], DType::F32)).is_err());
    let c = rlx_cpu::eval(&Op::Constant(a.clone()), &[], &ty(&[2], DType::F32)).unwrap();
    assert_eq!(c, a);
}
