//! Philox4x32-10 against the Random123 known-answer vectors, and the recipe of `Op::Random`:
//! moments of large draws, independence from the shape, distinct streams per offset.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::*;
use rlx_cpu::{philox4x32_10, philox_block, uniform_from_word};
use rlx_ir::{DType, Op, RandomDist, Shape, Tensor};

/// Random123's `tests/kat_vectors`, the three "philox4x32 10" lines: counter, key, expected.
#[test]
fn philox_matches_the_random123_known_answers() {
    let kat: [([u32; 4], [u32; 2], [u32; 4]); 3] = [
        ([0; 4], [0; 2], [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]),
        ([u32::MAX; 4], [u32::MAX; 2], [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]),
        (
            [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
            [0xa4093822, 0x299f31d0],
            [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1],
        ),
    ];
    for (ctr, key, want) in kat {
        assert_eq!(philox4x32_10(ctr, key), want, "counter {ctr:08x?} key {key:08x?}");
    }
}

fn draw(dist: RandomDist, seed: u32, offset: u32, dims: &[usize]) -> Vec<f32> {
    let key = tu32(&[2], vec![seed, offset]);
    evf(Op::Random { dist, shape: Shape::new(dims) }, &[&key], dims)
}

#[test]
fn uniform_is_the_top_24_bits_of_the_documented_counter() {
    let v = draw(RandomDist::Uniform, 7, 3, &[2, 5]);
    for (i, &x) in v.iter().enumerate() {
        let w = philox_block(7, 3, (i / 4) as u64)[i % 4];
        assert_eq!(x, (w >> 8) as f32 / 16_777_216.0, "element {i}");
        assert_eq!(x, uniform_from_word(w));
    }
    // Block 0 of (seed 0, offset 0) is the all-zero KAT.
    assert_eq!(draw(RandomDist::Uniform, 0, 0, &[1])[0], (0x6627e8d5u32 >> 8) as f32 / 16_777_216.0);
    assert_eq!(uniform_from_word(u32::MAX), 1.0 - 1.0 / 16_777_216.0);
    assert_eq!(uniform_from_word(0), 0.0);
}

#[test]
fn element_i_depends_only_on_seed_offset_and_i() {
    for dist in RandomDist::ALL {
        let long = draw(dist, 11, 0, &[3, 7]);
        let short = draw(dist, 11, 0, &[5]);
        assert_eq!(&long[..5], &short[..], "{dist:?}: a prefix must not depend on the shape");
        let other_offset = draw(dist, 11, 1, &[3, 7]);
        let other_seed = draw(dist, 12, 0, &[3, 7]);
        let same = |a: &[f32], b: &[f32]| a.iter().zip(b).filter(|(x, y)| x == y).count();
        assert!(same(&long, &other_offset) <= 1, "{dist:?}: offsets 0 and 1 overlap");
        assert!(same(&long, &other_seed) <= 1, "{dist:?}: seeds 11 and 12 overlap");
    }
}

fn moments(v: &[f32]) -> (f64, f64, f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n;
    let c = |p: i32| v.iter().map(|&x| (x as f64 - mean).powi(p)).sum::<f64>() / n;
    let var = c(2);
    (mean, var, c(3) / var.powf(1.5), c(4) / (var * var))
}

#[test]
fn uniform_moments_on_a_million_draws() {
    let n = 1 << 20;
    let v = draw(RandomDist::Uniform, 2024, 5, &[n]);
    assert!(v.iter().all(|&x| (0.0..1.0).contains(&x)));
    let (mean, var, skew, _) = moments(&v);
    // Standard errors at n = 2^20: mean 2.8e-4, variance 8.7e-5; bounds are > 5 sigma.
    assert!((mean - 0.5).abs() < 2e-3, "mean {mean}");
    assert!((var - 1.0 / 12.0).abs() < 6e-4, "variance {var}");
    assert!(skew.abs() < 1e-2, "skewness {skew}");
    // Ten equal bins, chi-square with 9 degrees of freedom: 40 is far past p = 1e-5.
    let mut bins = [0f64; 10];
    for &x in &v {
        bins[(x * 10.0) as usize] += 1.0;
    }
    let e = n as f64 / 10.0;
    let chi2: f64 = bins.iter().map(|&o| (o - e) * (o - e) / e).sum();
    assert!(chi2 < 40.0, "chi-square {chi2} over {bins:?}");
}

#[test]
fn normal_moments_on_a_million_draws() {
    let n = 1 << 20;
    let v = draw(RandomDist::Normal, 99, 0, &[n]);
    assert!(v.iter().all(|x| x.is_finite()));
    let (mean, var, skew, kurt) = moments(&v);
    // Standard errors: mean 1e-3, variance 1.4e-3, skewness 2.4e-3, kurtosis 4.8e-3.
    assert!(mean.abs() < 6e-3, "mean {mean}");
    assert!((var - 1.0).abs() < 8e-3, "variance {var}");
    assert!(skew.abs() < 1.5e-2, "skewness {skew}");
    assert!((kurt - 3.0).abs() < 3e-2, "kurtosis {kurt}");
    // The largest |z| Box–Muller can give: u1 = 2^-24 → sqrt(48 ln 2) ≈ 5.77.
    assert!(v.iter().all(|x| x.abs() <= 5.8));
}

#[test]
fn a_bad_key_is_an_error_not_a_panic() {
    let op = Op::Random { dist: RandomDist::Uniform, shape: Shape::new(&[4]) };
    let wrong_len = tu32(&[3], vec![1, 2, 3]);
    assert!(rlx_cpu::eval(&op, &[&wrong_len], &ty(&[4], DType::F32)).is_err());
    let wrong_dtype = Tensor::from_i32([2], vec![1, 2]).unwrap();
    assert!(rlx_cpu::eval(&op, &[&wrong_dtype], &ty(&[4], DType::F32)).is_err());
    let ok = tu32(&[2], vec![1, 2]);
    assert!(rlx_cpu::eval(&op, &[&ok], &ty(&[0], DType::F32)).is_err(), "type mismatch with the op shape");
    let empty = Op::Random { dist: RandomDist::Normal, shape: Shape::new(&[0, 3]) };
    assert_eq!(rlx_cpu::eval(&empty, &[&ok], &ty(&[0, 3], DType::F32)).unwrap().numel(), 0);
}
