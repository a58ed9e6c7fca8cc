//! Host ↔ device conversion round trips and refusals ([`crate::convert`]).

use crate::convert::*;
use half::{bf16, f16};
use rlx_ir::{DType, Tensor, TensorData, TensorType};
use std::borrow::Cow;

fn ty_of(t: &Tensor) -> TensorType {
    TensorType::new(t.shape().clone(), t.dtype())
}

fn round_trip(t: &Tensor) -> Tensor {
    let bytes = to_device(t, "dev", "x").unwrap();
    assert_eq!(bytes.len() as u64, device_bytes(&ty_of(t)));
    assert_eq!(bytes.len() % 4, 0);
    from_device(&bytes, &ty_of(t), "dev", "x").unwrap()
}

/// A tensor of `dtype` with `n` distinct elements (specials among the floats).
fn sample(dtype: DType, n: usize) -> Tensor {
    let specials = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, 6e-8, 65504.0, 1e-40];
    let v: Vec<f64> = (0..n)
        .map(|i| match (dtype.is_float(), i % 5) {
            (true, 4) => specials[(i / 5) % specials.len()],
            _ => (i as f64) * 7.0 - 3.0,
        })
        .collect();
    Tensor::from_f64([n], dtype, &v).unwrap()
}

/// Equal element for element, NaN matching NaN by bits.
fn same_bits(a: &Tensor, b: &Tensor) -> bool {
    let bits = |t: &Tensor| -> Vec<u64> {
        match t.data() {
            TensorData::F32(v) => v.iter().map(|x| u64::from(x.to_bits())).collect(),
            TensorData::F16(v) => v.iter().map(|x| u64::from(x.to_bits())).collect(),
            TensorData::BF16(v) => v.iter().map(|x| u64::from(x.to_bits())).collect(),
            other => other.to_f64_vec().iter().map(|x| x.to_bits()).collect(),
        }
    };
    a.dtype() == b.dtype() && a.shape() == b.shape() && bits(a) == bits(b)
}

#[test]
fn every_dtype_round_trips_at_awkward_lengths() {
    for dtype in DType::ALL {
        for n in [0, 1, 2, 3, 4, 5, 7, 1025] {
            let t = sample(dtype, n);
            assert!(same_bits(&round_trip(&t), &t), "{dtype} × {n}");
        }
    }
    let i = Tensor::from_i32([3], vec![i32::MIN, -1, 7]).unwrap();
    assert_eq!(round_trip(&i), i);
    let u = Tensor::from_u8([5], vec![0, 1, 127, 128, 255]).unwrap();
    assert_eq!(round_trip(&u), u);
    let e = Tensor::from_f32([0, 3], vec![]).unwrap();
    assert_eq!(round_trip(&e), e);
}

#[test]
fn each_dtype_has_its_own_size_in_whole_words() {
    let bytes = |dtype, n: usize| device_bytes(&TensorType::new([n], dtype));
    assert_eq!([bytes(DType::F32, 3), bytes(DType::I32, 3), bytes(DType::Bool, 3)], [12, 12, 12]);
    assert_eq!([bytes(DType::F16, 3), bytes(DType::BF16, 4), bytes(DType::F16, 1)], [8, 8, 4]);
    assert_eq!([bytes(DType::U8, 1), bytes(DType::U8, 4), bytes(DType::U8, 5)], [4, 4, 8]);
    assert_eq!(bytes(DType::U8, 0), 0);
    assert_eq!(stored_size(DType::BF16), 2);
    assert_eq!(stored_size(DType::U8), 1);
}

#[test]
fn whole_words_are_borrowed_and_partial_ones_padded_with_zeros() {
    let f = Tensor::from_f32([2], vec![1.0, 2.0]).unwrap();
    assert!(matches!(to_device(&f, "dev", "x").unwrap(), Cow::Borrowed(_)));
    let h = Tensor::from_f16([2], vec![f16::ONE, f16::NEG_ONE]).unwrap();
    assert!(matches!(to_device(&h, "dev", "x").unwrap(), Cow::Borrowed(_)));
    let b = Tensor::from_bf16([3], vec![bf16::ONE; 3]).unwrap();
    let bytes = to_device(&b, "dev", "x").unwrap();
    assert!(matches!(bytes, Cow::Owned(_)));
    assert_eq!(&*bytes, &[0x80, 0x3f, 0x80, 0x3f, 0x80, 0x3f, 0, 0]);
    let u = Tensor::from_u8([5], vec![1, 2, 3, 4, 5]).unwrap();
    assert_eq!(&*to_device(&u, "dev", "x").unwrap(), &[1, 2, 3, 4, 5, 0, 0, 0]);
    let u4 = Tensor::from_u8([4], vec![1, 2, 3, 4]).unwrap();
    assert!(matches!(to_device(&u4, "dev", "x").unwrap(), Cow::Borrowed(_)));
}

#[test]
fn packed_elements_fill_words_from_the_low_end() {
    // The cast kernels read element i of a 2-byte dtype from bits 16·(i % 2) of word i / 2, and
    // of a 1-byte dtype from bits 8·(i % 4) of word i / 4: native order on little-endian hosts.
    let h = Tensor::from_f16([2], vec![f16::from_bits(0x1234), f16::from_bits(0xabcd)]).unwrap();
    let word = u32::from_ne_bytes(to_device(&h, "dev", "x").unwrap()[..4].try_into().unwrap());
    assert_eq!(word, 0xabcd_1234);
    let u = Tensor::from_u8([3], vec![0x11, 0x22, 0x33]).unwrap();
    let word = u32::from_ne_bytes(to_device(&u, "dev", "x").unwrap()[..4].try_into().unwrap());
    assert_eq!(word, 0x0033_2211);
}

#[test]
fn padding_is_ignored_on_readback() {
    let words: Vec<u8> = [0x3c00_u32 | 0xdead_0000, 0].iter().flat_map(|w| w.to_ne_bytes()).collect();
    let t = from_device(&words[..4], &TensorType::new([1], DType::F16), "dev", "y").unwrap();
    assert_eq!(t.data(), &TensorData::F16(vec![f16::ONE]));
    let t = from_device(&[7, 8, 9, 0xff], &TensorType::new([3], DType::U8), "dev", "y").unwrap();
    assert_eq!(t.data(), &TensorData::U8(vec![7, 8, 9]));
}

#[test]
fn unaligned_bytes_read_back() {
    let words: Vec<u8> = [0u8].iter().chain(&1.5f32.to_ne_bytes()).copied().collect();
    let t = from_device(&words[1..], &TensorType::new([1], DType::F32), "dev", "y").unwrap();
    assert_eq!(t.as_f32().unwrap(), &[1.5]);
}

#[test]
fn large_copies_are_exact() {
    let v: Vec<f32> = (0..(3 << 20) + 7).map(|i| i as f32 * 0.5).collect();
    let t = Tensor::from_f32([v.len()], v.clone()).unwrap();
    let back = round_trip(&t);
    assert_eq!(back.as_f32().unwrap(), &v[..]);
    let mut dst = vec![0u8; 5];
    copy_bytes(&mut dst, &[1, 2, 3]);
    assert_eq!(dst, [1, 2, 3, 0, 0]);
}

#[test]
fn bool_is_a_zero_or_one_word_and_any_nonzero_reads_true() {
    let b = Tensor::from_bool([2], vec![true, false]).unwrap();
    let bytes = to_device(&b, "dev", "m").unwrap();
    assert_eq!(&*bytes, [1u32.to_ne_bytes(), 0u32.to_ne_bytes()].concat().as_slice());
    let words: Vec<u8> = [0u32, 5, u32::MAX].iter().flat_map(|w| w.to_ne_bytes()).collect();
    let t = from_device(&words, &TensorType::new([3], DType::Bool), "dev", "m").unwrap();
    assert_eq!(t.as_bool().unwrap(), &[false, true, true]);
}

#[test]
fn wrong_byte_count_is_an_error_not_a_panic() {
    let e = from_device(&[0; 7], &TensorType::new([2], DType::F32), "dev", "out 0").unwrap_err();
    assert!(e.to_string().contains("7 bytes"), "{e}");
    // Two f16 need one whole word, not two bytes.
    assert!(from_device(&[0; 2], &TensorType::new([1], DType::F16), "dev", "y").is_err());
}
