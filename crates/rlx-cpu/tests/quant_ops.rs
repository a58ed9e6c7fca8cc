//! QuantMatMul and QuantGather on the CPU against the reference decoder followed by the plain
//! f32 ops: the same values, whatever the slab size or the batch dims.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{ev, t32, ti32};
use rlx_cpu::quant::dequantize;
use rlx_ir::{DType, Op, QuantType, Tensor};
use rlx_test_support::{quant_blocks, Rng};

fn packed(rows: usize, row_bytes: usize, bytes: Vec<u8>) -> Tensor {
    Tensor::from_u8([rows, row_bytes], bytes).unwrap()
}

#[test]
fn quant_matmul_is_x_times_the_decoded_weight_transposed() {
    let mut rng = Rng::new(11);
    for q in QuantType::ALL {
        let (n, k) = (5, 2 * q.block_elems());
        let row = q.byte_len(k).unwrap();
        let bytes = quant_blocks(&mut rng, q, n * k / q.block_elems(), 0.1);
        let mut w = vec![0f32; n * k];
        dequantize(q, &bytes, &mut w).unwrap();
        let x = rng.uniform(2 * 3 * k, -1.0, 1.0);
        let got = ev(
            Op::QuantMatMul { quant: q },
            &[&t32(&[2, 3, k], x.clone()), &packed(n, row, bytes)],
            &[2, 3, n],
            DType::F32,
        );
        let got = got.to_f32_vec();
        for r in 0..6 {
            for c in 0..n {
                let want: f64 = (0..k).map(|i| f64::from(x[r * k + i]) * f64::from(w[c * k + i])).sum();
                let g = f64::from(got[r * n + c]);
                assert!((g - want).abs() <= 1e-4 * (1.0 + want.abs()), "{q} [{r}, {c}]: {g} vs {want}");
            }
        }
    }
}

#[test]
fn quant_matmul_takes_f16_x_and_empty_k() {
    let q = QuantType::Q8_0;
    let mut rng = Rng::new(3);
    let bytes = quant_blocks(&mut rng, q, 2, 0.1);
    let x = Tensor::from_f64([1, 32], DType::F16, &vec![0.5; 32]).unwrap();
    let y = ev(Op::QuantMatMul { quant: q }, &[&x, &packed(2, 34, bytes.clone())], &[1, 2], DType::F32);
    let mut w = vec![0f32; 64];
    dequantize(q, &bytes, &mut w).unwrap();
    let want0: f32 = w[..32].iter().map(|v| v * 0.5).sum();
    assert!((y.to_f32_vec()[0] - want0).abs() < 1e-4, "{:?} vs {want0}", y.to_f32_vec());
    let empty = ev(
        Op::QuantMatMul { quant: q },
        &[&t32(&[3, 0], vec![]), &packed(2, 0, vec![])],
        &[3, 2],
        DType::F32,
    );
    assert_eq!(empty.to_f32_vec(), vec![0.0; 6]);
}

#[test]
fn quant_gather_decodes_rows_and_zeroes_bad_ids() {
    let mut rng = Rng::new(5);
    for q in QuantType::ALL {
        let (v, k) = (4, q.block_elems());
        let bytes = quant_blocks(&mut rng, q, v, 1.0);
        let mut table = vec![0f32; v * k];
        dequantize(q, &bytes, &mut table).unwrap();
        let ids = ti32(&[2, 2], vec![3, -1, 0, 4]);
        let got = ev(
            Op::QuantGather { quant: q },
            &[&packed(v, q.block_bytes(), bytes), &ids],
            &[2, 2, k],
            DType::F32,
        );
        let got = got.to_f32_vec();
        assert_eq!(&got[..k], &table[3 * k..4 * k], "{q}");
        assert!(got[k..2 * k].iter().all(|&x| x == 0.0), "{q}");
        assert_eq!(&got[2 * k..3 * k], &table[..k], "{q}");
        assert!(got[3 * k..].iter().all(|&x| x == 0.0), "{q}");
    }
}

#[test]
fn a_nan_scale_gives_nan_outputs_in_its_row_only() {
    let q = QuantType::Q4_0;
    let mut rng = Rng::new(8);
    let mut bytes = quant_blocks(&mut rng, q, 2, 0.1);
    bytes[18..20].copy_from_slice(&0x7e00u16.to_le_bytes());
    let x = t32(&[1, 32], vec![1.0; 32]);
    let y = ev(Op::QuantMatMul { quant: q }, &[&x, &packed(2, 18, bytes)], &[1, 2], DType::F32).to_f32_vec();
    assert!(y[0].is_finite() && y[1].is_nan(), "{y:?}");
}
