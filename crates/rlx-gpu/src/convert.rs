//! Host ↔ device conversion, per dtype: the one place that knows how each dtype is stored on a
//! GPU. F32, I32 and U32 are stored as they are (native-endian 32-bit words); Bool is a u32
//! word, 0 or 1 (any non-zero word reads back as true). F16, BF16 and U8 are not stored on GPUs
//! yet: both directions refuse them with `Unsupported` (the capabilities leave them out, so
//! rlx-opt normally stops them earlier). A new stored dtype (f16, bf16, packed u8 blocks) is one arm in each of
//! [`stored_size`], [`to_device`] and [`from_device`].

use rlx_backend::BackendError;
use rlx_ir::{DType, Tensor, TensorData, TensorType};
use std::borrow::Cow;

/// Bytes one element of `dtype` takes in device memory.
pub fn stored_size(dtype: DType) -> u64 {
    match dtype {
        DType::F32 | DType::I32 | DType::U32 | DType::Bool => 4,
        DType::F16 | DType::BF16 => 2,
        DType::U8 => 1,
    }
}

/// Device bytes of a tensor of type `ty` (saturating: sizes were checked by the IR builders).
pub fn device_bytes(ty: &TensorType) -> u64 {
    (ty.numel() as u64).saturating_mul(stored_size(ty.dtype))
}

fn refused(dtype: DType, device: &str, what: &str) -> BackendError {
    BackendError::Unsupported {
        op: what.to_string(),
        device: device.to_string(),
        reason: format!("{dtype} tensors are not stored on the GPU yet; cast to f32 in the graph"),
    }
}

/// The device bytes of `t`; borrowed where the host layout already is the device layout.
/// `device` and `what` (the leaf's name) label errors.
pub fn to_device<'a>(t: &'a Tensor, device: &str, what: &str) -> Result<Cow<'a, [u8]>, BackendError> {
    Ok(match t.data() {
        TensorData::F32(v) => Cow::Borrowed(bytemuck::cast_slice::<f32, u8>(v)),
        TensorData::I32(v) => Cow::Borrowed(bytemuck::cast_slice::<i32, u8>(v)),
        TensorData::U32(v) => Cow::Borrowed(bytemuck::cast_slice::<u32, u8>(v)),
        TensorData::Bool(v) => Cow::Owned(v.iter().flat_map(|&b| u32::from(b).to_ne_bytes()).collect()),
        other @ (TensorData::F16(_) | TensorData::BF16(_) | TensorData::U8(_)) => {
            return Err(refused(other.dtype(), device, what))
        }
    })
}

/// Below this many bytes a copy runs on the calling thread.
const PARALLEL_COPY_BYTES: usize = 1 << 20;

/// `dst.copy_from_slice(src)`, spread over threads for large copies: one thread moves about
/// 5-10 GB/s out of mapped staging memory (and faults fresh pages in as it goes), which is what
/// bounds host I/O of large tensors. Lengths must match (a shorter side is copied as far as it
/// goes).
pub fn copy_bytes(dst: &mut [u8], src: &[u8]) {
    use rayon::prelude::*;
    let n = dst.len().min(src.len());
    let (dst, src) = (&mut dst[..n], &src[..n]);
    if n < PARALLEL_COPY_BYTES {
        dst.copy_from_slice(src);
    } else {
        dst.par_chunks_mut(PARALLEL_COPY_BYTES)
            .zip(src.par_chunks(PARALLEL_COPY_BYTES))
            .for_each(|(d, s)| d.copy_from_slice(s));
    }
}

/// 32-bit words of `bytes` (a multiple of 4 long).
fn words<T: bytemuck::Pod>(bytes: &[u8]) -> Vec<T> {
    let mut out = vec![T::zeroed(); bytes.len() / 4];
    copy_bytes(bytemuck::cast_slice_mut(&mut out), bytes);
    out
}

/// The tensor of type `ty` held by `bytes` (exactly [`device_bytes`] of them).
pub fn from_device(bytes: &[u8], ty: &TensorType, device: &str, what: &str) -> Result<Tensor, BackendError> {
    let expected = device_bytes(ty);
    if bytes.len() as u64 != expected {
        return Err(BackendError::Driver {
            device: device.to_string(),
            scope: format!("reading back {what}"),
            reason: format!(
                "got {} bytes for {} elements of {} ({expected} expected)",
                bytes.len(),
                ty.numel(),
                ty.dtype
            ),
        });
    }
    let data = match ty.dtype {
        DType::F32 => TensorData::F32(words(bytes)),
        DType::I32 => TensorData::I32(words(bytes)),
        DType::U32 => TensorData::U32(words(bytes)),
        DType::Bool => TensorData::Bool(words::<u32>(bytes).into_iter().map(|w| w != 0).collect()),
        d @ (DType::F16 | DType::BF16 | DType::U8) => return Err(refused(d, device, what)),
    };
    Ok(Tensor::new(ty.shape.clone(), data)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;

    fn round_trip(t: &Tensor) -> Tensor {
        let bytes = to_device(t, "dev", "x").unwrap();
        assert_eq!(bytes.len() as u64, device_bytes(&TensorType::new(t.shape().clone(), t.dtype())));
        let ty = TensorType::new(t.shape().clone(), t.dtype());
        from_device(&bytes, &ty, "dev", "x").unwrap()
    }

    #[test]
    fn every_stored_dtype_round_trips() {
        let f = Tensor::from_f32([2, 2], vec![1.5, -0.0, f32::NAN, f32::INFINITY]).unwrap();
        let back = round_trip(&f);
        let v = back.as_f32().unwrap();
        assert_eq!((v[0], v[3]), (1.5, f32::INFINITY));
        assert!(v[1] == 0.0 && v[1].is_sign_negative() && v[2].is_nan());
        let i = Tensor::from_i32([3], vec![i32::MIN, -1, 7]).unwrap();
        assert_eq!(round_trip(&i), i);
        let u = Tensor::from_u32([2], vec![u32::MAX, 0]).unwrap();
        assert_eq!(round_trip(&u), u);
        let b = Tensor::from_bool([3], vec![true, false, true]).unwrap();
        assert_eq!(round_trip(&b), b);
        let e = Tensor::from_f32([0, 3], vec![]).unwrap();
        assert_eq!(round_trip(&e), e);
    }

    #[test]
    fn f32_is_borrowed_not_copied() {
        let f = Tensor::from_f32([2], vec![1.0, 2.0]).unwrap();
        assert!(matches!(to_device(&f, "dev", "x").unwrap(), Cow::Borrowed(_)));
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
    fn f16_is_refused_both_ways() {
        let h = Tensor::from_f16([1], vec![f16::ONE]).unwrap();
        let e = to_device(&h, "lavapipe", "w").unwrap_err();
        assert!(matches!(&e, BackendError::Unsupported { op, .. } if op == "w"), "{e}");
        assert!(e.to_string().contains("f16"), "{e}");
        assert!(from_device(&[0; 2], &TensorType::new([1], DType::F16), "lavapipe", "y").is_err());
    }

    #[test]
    fn wrong_byte_count_is_an_error_not_a_panic() {
        let e = from_device(&[0; 7], &TensorType::new([2], DType::F32), "dev", "out 0").unwrap_err();
        assert!(e.to_string().contains("7 bytes"), "{e}");
    }
}
