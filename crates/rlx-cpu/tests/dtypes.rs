//! BF16 and U8 on the CPU: casts between every pair of dtypes at their rounding and saturation
//! points, float ops on bf16 (f32 math rounded once), u8 arithmetic (i32 math saturated back),
//! data movement on both, and whole graphs through `CpuBackend`.
// Test crate: its helpers may unwrap, expect and panic, as the #[test] functions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::*;
use half::{bf16, f16};
use rlx_backend::Backend;
use rlx_cpu::CpuBackend;
use rlx_ir::{BinaryOp, DType, Graph, Op, ReduceOp, Shape, Tensor, TensorData, UnaryOp};

fn cast(x: &Tensor, to: DType) -> Tensor {
    ev(Op::Cast(to), &[x], x.dims(), to)
}

fn tbf16(v: &[f32]) -> Tensor {
    Tensor::from_bf16([v.len()], v.iter().map(|&x| bf16::from_f32(x)).collect()).unwrap()
}

fn tu8(v: &[u8]) -> Tensor {
    Tensor::from_u8([v.len()], v.to_vec()).unwrap()
}

#[test]
fn floats_to_u8_truncate_and_saturate() {
    let x = t32(&[9], vec![f32::NAN, -0.0, -3.7, 0.99, 1.5, 254.9, 255.5, 1e9, f32::INFINITY]);
    assert_eq!(cast(&x, DType::U8).data(), &TensorData::U8(vec![0, 0, 0, 0, 1, 254, 255, 255, 255]));
    let h = Tensor::from_f16([3], vec![f16::NEG_INFINITY, f16::from_f32(300.0), f16::NAN]).unwrap();
    assert_eq!(cast(&h, DType::U8).data(), &TensorData::U8(vec![0, 255, 0]));
}

#[test]
fn ints_to_u8_saturate_and_u8_widens_exactly() {
    let i = ti32(&[5], vec![i32::MIN, -1, 0, 255, 256]);
    assert_eq!(cast(&i, DType::U8).data(), &TensorData::U8(vec![0, 0, 0, 255, 255]));
    let u = tu32(&[3], vec![7, 255, u32::MAX]);
    assert_eq!(cast(&u, DType::U8).data(), &TensorData::U8(vec![7, 255, 255]));
    let b = tbool(&[2], vec![true, false]);
    assert_eq!(cast(&b, DType::U8).data(), &TensorData::U8(vec![1, 0]));
    let x = tu8(&[0, 1, 128, 255]);
    assert_eq!(cast(&x, DType::I32).as_i32().unwrap(), &[0, 1, 128, 255]);
    assert_eq!(cast(&x, DType::F32).as_f32().unwrap(), &[0.0, 1.0, 128.0, 255.0]);
    assert_eq!(cast(&x, DType::Bool).as_bool().unwrap(), &[false, true, true, true]);
    assert_eq!(cast(&x, DType::BF16).to_f32_vec(), [0.0, 1.0, 128.0, 255.0]);
}

#[test]
fn to_bf16_rounds_to_nearest_even_once() {
    // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even is 1. Just above it rounds up. 2^-133 is
    // a bf16 subnormal; f32::MAX rounds to infinity; NaN stays NaN.
    let x = t32(
        &[7],
        vec![
            1.0 + 1.0 / 256.0,
            1.0 + 1.0 / 256.0 + 1e-7,
            1.0 + 3.0 / 256.0,
            -0.0,
            f32::from_bits(0x0001_0000), // 2^-133 (powi would underflow through 2^133 = inf at opt-level 0)
            f32::MAX,
            f32::NAN,
        ],
    );
    let b = cast(&x, DType::BF16);
    let bits: Vec<u16> = match b.data() {
        TensorData::BF16(v) => v.iter().map(|x| x.to_bits()).collect(),
        other => panic!("{other:?}"),
    };
    assert_eq!(&bits[..6], &[0x3f80, 0x3f81, 0x3f82, 0x8000, 0x0001, 0x7f80]);
    assert!(b.to_f32_vec()[6].is_nan());
    // An i32 just past a bf16 tie rounds up (through f32 it would round down).
    let i = ti32(&[1], vec![(1 << 24) + (1 << 16) + 1]);
    assert_eq!(cast(&i, DType::BF16).to_f32_vec(), [((1 << 24) + (1 << 17)) as f32]);
}

#[test]
fn between_the_16_bit_floats() {
    // bf16 → f16: 65504 is f16's largest; 65520 (and bf16's 65536) overflow; subnormals round.
    let b = tbf16(&[65504.0, 65536.0, -1.0 / 3.0, 1e-6, 3e-8]);
    let h = cast(&b, DType::F16);
    let want: Vec<f16> = b.to_f32_vec().into_iter().map(f16::from_f32).collect();
    assert_eq!(h.data(), &TensorData::F16(want));
    assert_eq!(h.to_f32_vec()[1], f32::INFINITY);
    // f16 → bf16 keeps 8 bits of the 11.
    let back = cast(&h, DType::BF16);
    assert_eq!(back.to_f32_vec()[2], bf16::from_f32(f16::from_f32(-1.0 / 3.0).to_f32()).to_f32());
}

#[test]
fn bf16_math_is_f32_math_rounded_once() {
    let x = tbf16(&[-2.0, -0.5, 0.25, 3.0]);
    let g = ev(Op::Unary(UnaryOp::Gelu), &[&x], &[4], DType::BF16);
    let wide = evf(Op::Unary(UnaryOp::Gelu), &[&cast(&x, DType::F32)], &[4]);
    let want: Vec<bf16> = wide.iter().map(|&v| bf16::from_f32(v)).collect();
    assert_eq!(g.data(), &TensorData::BF16(want));
    let a = Tensor::from_bf16([2, 2], [1.0f32, 2.0, 3.0, 4.0].map(bf16::from_f32).to_vec()).unwrap();
    let m = ev(Op::MatMul { transpose_a: false, transpose_b: false }, &[&a, &a], &[2, 2], DType::BF16);
    assert_eq!(m.to_f32_vec(), [7.0, 10.0, 15.0, 22.0]);
    let s = ev(Op::Softmax, &[&x], &[4], DType::BF16);
    assert!((s.to_f32_vec().iter().sum::<f32>() - 1.0).abs() < 1e-2);
}

#[test]
fn u8_reductions_compute_in_i32() {
    let x = Tensor::from_u8([2, 3], vec![200, 100, 1, 3, 4, 5]).unwrap();
    let sum = Op::Reduce { op: ReduceOp::Sum, axes: vec![1], keepdim: false };
    assert_eq!(ev(sum, &[&x], &[2], DType::U8).data(), &TensorData::U8(vec![255, 12]));
    let max = Op::Reduce { op: ReduceOp::Max, axes: vec![0], keepdim: false };
    assert_eq!(ev(max, &[&x], &[3], DType::U8).data(), &TensorData::U8(vec![200, 100, 5]));
    let cs = ev(Op::Cumsum { axis: 1 }, &[&x], &[2, 3], DType::U8);
    assert_eq!(cs.data(), &TensorData::U8(vec![200, 255, 255, 3, 7, 12]));
    let mx = ev(Op::Binary(BinaryOp::Maximum), &[&x, &tu8(&[150, 0, 9])], &[2, 3], DType::U8);
    assert_eq!(mx.data(), &TensorData::U8(vec![200, 100, 9, 150, 4, 9]));
}

#[test]
fn data_movement_keeps_bf16_and_u8_bits() {
    let x = Tensor::from_u8([2, 3], vec![1, 2, 3, 4, 5, 6]).unwrap();
    let t = ev(Op::Permute(vec![1, 0]), &[&x], &[3, 2], DType::U8);
    assert_eq!(t.data(), &TensorData::U8(vec![1, 4, 2, 5, 3, 6]));
    let p = ev(Op::Pad { pads: vec![(0, 0), (1, 0)], value: 300.0 }, &[&x], &[2, 4], DType::U8);
    assert_eq!(p.data(), &TensorData::U8(vec![255, 1, 2, 3, 255, 4, 5, 6]));
    let idx = ti32(&[3], vec![2, 0, 7]);
    let g = ev(Op::Gather { axis: 1 }, &[&x, &idx], &[2, 3], DType::U8);
    assert_eq!(g.data(), &TensorData::U8(vec![3, 1, 0, 6, 4, 0]));
    let nan = bf16::from_bits(0x7fc1);
    let b = Tensor::from_bf16([3], vec![bf16::ONE, nan, bf16::NEG_INFINITY]).unwrap();
    let r = ev(Op::Reverse { axes: vec![0] }, &[&b], &[3], DType::BF16);
    let bits = match r.data() {
        TensorData::BF16(v) => v.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    assert_eq!(bits, [0xff80, 0x7fc1, 0x3f80], "the NaN's payload moves with it");
    let e = ev(Op::Expand(Shape::new(&[2, 3])), &[&b], &[2, 3], DType::BF16);
    assert_eq!(e.numel(), 6);
}

#[test]
fn graphs_with_bf16_and_u8_leaves_run() {
    let mut g = Graph::new("mixed");
    let img = g.input("img", &[4], DType::U8).unwrap();
    let w = g.param("w", &[4], DType::BF16).unwrap();
    let f = g.cast(img, DType::BF16).unwrap();
    let y = g.mul(f, w).unwrap();
    let brighter = g.add(img, img).unwrap();
    g.set_outputs(&[y, brighter]).unwrap();
    let mut exe = CpuBackend::new().compile(&g, &Default::default()).unwrap();
    let w_val = tbf16(&[0.5, 0.5, 0.5, 0.5]);
    exe.set_param(g.params()[0].1, &w_val).unwrap();
    let out = exe.run(&[(img, &tu8(&[0, 3, 100, 200]))]).unwrap();
    assert_eq!(out[0].to_f32_vec(), [0.0, 1.5, 50.0, 100.0]);
    assert_eq!(out[1].data(), &TensorData::U8(vec![0, 6, 200, 255]));
}
