//! The CPU reference of `Op::ScatterAdd` (gather's transpose) against a host loop written from
//! the op's definition: repeated ids, ids out of range on both sides, axis 0 and a middle
//! axis, ids of rank 0, 1 and 2, f32, f16 and bf16 sources, and the summation order that the
//! determinism contract fixes.
// Test crate: its helpers may unwrap, expect and panic, as the #[test] functions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::*;
use half::{bf16, f16};
use rlx_ir::{DType, Op, Tensor, TensorData};

/// `out[o, v, j] = Σ_{i : ids[i] == v} src[o, i, j]`, src seen as [outer, n, inner], summed in
/// f32 from +0.0 in increasing i: the definition, loop by loop.
fn host(src: &[f32], ids: &[i32], outer: usize, inner: usize, len: usize) -> Vec<f32> {
    let n = ids.len();
    let mut out = vec![0f32; outer * len * inner];
    for o in 0..outer {
        for v in 0..len {
            for j in 0..inner {
                let mut acc = 0f32;
                for (i, &id) in ids.iter().enumerate() {
                    if id >= 0 && id as usize == v {
                        acc += src[(o * n + i) * inner + j];
                    }
                }
                out[(o * len + v) * inner + j] = acc;
            }
        }
    }
    out
}

/// Runs the op on f32 `src` of `dims` and compares with [`host`] bit for bit.
fn check(dims: &[usize], id_dims: &[usize], ids: Vec<i32>, axis: usize, len: usize, seed: u64) {
    let n: usize = dims.iter().product();
    let src = rand_vec(n, seed);
    let outer: usize = dims[..axis].iter().product();
    let inner: usize = dims[axis + id_dims.len()..].iter().product();
    let mut od = dims[..axis].to_vec();
    od.push(len);
    od.extend_from_slice(&dims[axis + id_dims.len()..]);
    let want = host(&src, &ids, outer, inner, len);
    let got = evf(Op::ScatterAdd { axis, len }, &[&ti32(id_dims, ids), &t32(dims, src)], &od);
    assert_eq!(
        got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        want.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
    );
}

#[test]
fn embedding_gradient_with_repeats_and_out_of_range_ids() {
    // ids [2, 4] into V = 6, rows of 5: id 1 three times, -1 and 6 (both out of range) add nothing.
    let ids = vec![1, 3, 1, -1, 6, 0, 1, 5];
    check(&[2, 4, 5], &[2, 4], ids, 0, 6, 1);
    // Many repeats: 300 ids over 7 rows, a tenth of them out of range.
    let ids: Vec<i32> = (0..300).map(|i: i32| (i * 37) % 8 - i32::from(i % 10 == 0) * 20).collect();
    check(&[300, 9], &[300], ids, 0, 7, 2);
}

#[test]
fn middle_axis_and_rank_0_ids() {
    check(&[3, 5, 4], &[5], vec![2, 0, 2, 7, 2], 1, 4, 3);
    check(&[2, 2, 3, 4], &[2, 3], vec![0, 2, 2, -5, 1, 0], 1, 3, 4);
    // Rank-0 ids: the output gains the axis; every other row is zero.
    let src = t32(&[2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let got =
        evf(Op::ScatterAdd { axis: 1, len: 3 }, &[&Tensor::from_i32([], vec![2]).unwrap(), &src], &[2, 3, 3]);
    let mut want = vec![0f32; 18];
    want[6..9].copy_from_slice(&[1.0, 2.0, 3.0]);
    want[15..18].copy_from_slice(&[4.0, 5.0, 6.0]);
    assert_eq!(got, want);
}

#[test]
fn sums_run_in_increasing_index_order() {
    // In f32, (1e8 + 1) − 1e8 = 0 but (1e8 − 1e8) + 1 = 1: the contract's order gives 0.
    let ids = ti32(&[3], vec![0, 0, 0]);
    let src = t32(&[3, 1], vec![1e8, 1.0, -1e8]);
    assert_eq!(evf(Op::ScatterAdd { axis: 0, len: 1 }, &[&ids, &src], &[1, 1]), vec![0.0]);
    let src = t32(&[3, 1], vec![1e8, -1e8, 1.0]);
    assert_eq!(evf(Op::ScatterAdd { axis: 0, len: 1 }, &[&ids, &src], &[1, 1]), vec![1.0]);
    // An untouched row is +0.0, and so is a sum of −0.0s (it starts from +0.0).
    let src = t32(&[3, 1], vec![-0.0, -0.0, -0.0]);
    let r = evf(Op::ScatterAdd { axis: 0, len: 2 }, &[&ids, &src], &[2, 1]);
    assert!(r.iter().all(|x| x.to_bits() == 0), "{r:?}");
}

#[test]
fn f16_and_bf16_sum_in_f32_and_round_once() {
    // 2048 + 1 + 1 in f16 steps would stay 2048 (its spacing there is 2); in f32 it is 2050.
    let ids = ti32(&[3], vec![1, 1, 1]);
    let v = [2048.0f32, 1.0, 1.0];
    let h = Tensor::from_f16([3, 1], v.iter().map(|&x| f16::from_f32(x)).collect()).unwrap();
    let r = ev(Op::ScatterAdd { axis: 0, len: 2 }, &[&ids, &h], &[2, 1], DType::F16);
    assert_eq!(r.data(), &TensorData::F16(vec![f16::ZERO, f16::from_f32(2050.0)]));
    let b =
        Tensor::from_bf16([3, 1], [256.0f32, 1.0, 1.0].iter().map(|&x| bf16::from_f32(x)).collect()).unwrap();
    let r = ev(Op::ScatterAdd { axis: 0, len: 2 }, &[&ids, &b], &[2, 1], DType::BF16);
    assert_eq!(r.data(), &TensorData::BF16(vec![bf16::ZERO, bf16::from_f32(258.0)]));
    // A random f16 case against the host loop on the widened values, rounded once.
    let ids: Vec<i32> = (0..40).map(|i: i32| i * 7 % 11 - 2).collect();
    let src = rand_vec(40 * 6, 5);
    let h: Vec<f16> = src.iter().map(|&x| f16::from_f32(x)).collect();
    let wide: Vec<f32> = h.iter().map(|x| x.to_f32()).collect();
    let want: Vec<f16> = host(&wide, &ids, 1, 6, 9).into_iter().map(f16::from_f32).collect();
    let r = ev(
        Op::ScatterAdd { axis: 0, len: 9 },
        &[&ti32(&[40], ids), &Tensor::from_f16([40, 6], h).unwrap()],
        &[9, 6],
        DType::F16,
    );
    assert_eq!(r.data(), &TensorData::F16(want));
}

#[test]
fn no_ids_give_zeros_and_bad_operands_are_errors() {
    let r = evf(Op::ScatterAdd { axis: 0, len: 3 }, &[&ti32(&[0], vec![]), &t32(&[0, 2], vec![])], &[3, 2]);
    assert_eq!(r, vec![0.0; 6]);
    // Operands that do not give the asked-for type are an error, not a panic.
    let e = rlx_cpu::eval(
        &Op::ScatterAdd { axis: 0, len: 3 },
        &[&ti32(&[2], vec![0, 1]), &t32(&[3, 2], vec![0.0; 6])],
        &ty(&[3, 2], DType::F32),
    )
    .unwrap_err();
    assert!(e.to_string().contains("scatter_add"), "{e}");
}
