//! Host tensors ↔ device words.
//!
//! Every GPU element is one 32-bit word (rlx-gpu's convention): f32, i32 and u32 as they are,
//! Bool as a u32 0 or 1. F16 is not stored on the GPU yet, so both directions refuse it with
//! `Unsupported` (the capabilities leave it out, so rlx-opt normally stops it earlier).

use rlx_backend::BackendError;
use rlx_ir::{DType, Tensor, TensorData, TensorType};

fn f16_refused(device: &str, what: &str) -> BackendError {
    BackendError::Unsupported {
        op: what.to_string(),
        device: device.to_string(),
        reason: "f16 tensors are not stored on the GPU yet; cast to f32 in the graph".into(),
    }
}

/// The device bytes of `t` (native-endian 32-bit words). `device` and `what` (the leaf's name)
/// only label the error for F16.
pub fn tensor_to_words(t: &Tensor, device: &str, what: &str) -> Result<Vec<u8>, BackendError> {
    Ok(match t.data() {
        TensorData::F32(v) => bytemuck::cast_slice::<f32, u8>(v).to_vec(),
        TensorData::I32(v) => bytemuck::cast_slice::<i32, u8>(v).to_vec(),
        TensorData::U32(v) => bytemuck::cast_slice::<u32, u8>(v).to_vec(),
        TensorData::Bool(v) => v.iter().flat_map(|&b| u32::from(b).to_ne_bytes()).collect(),
        TensorData::F16(_) => return Err(f16_refused(device, what)),
    })
}

/// The tensor of type `ty` held by `bytes` (native-endian 32-bit words, `ty.numel()` of them).
/// A Bool word is true when it is not zero.
pub fn tensor_from_words(
    bytes: &[u8],
    ty: &TensorType,
    device: &str,
    what: &str,
) -> Result<Tensor, BackendError> {
    let n = ty.numel();
    if bytes.len() != n * 4 {
        return Err(BackendError::Driver {
            device: device.to_string(),
            scope: format!("reading back {what}"),
            reason: format!("got {} bytes for {} elements of {}", bytes.len(), n, ty.dtype),
        });
    }
    // `bytes` may be unaligned for u32, so go through arrays rather than casting the slice.
    let words = bytes.chunks_exact(4).map(|c| [c[0], c[1], c[2], c[3]]);
    let data = match ty.dtype {
        DType::F32 => TensorData::F32(words.map(f32::from_ne_bytes).collect()),
        DType::I32 => TensorData::I32(words.map(i32::from_ne_bytes).collect()),
        DType::U32 => TensorData::U32(words.map(u32::from_ne_bytes).collect()),
        DType::Bool => TensorData::Bool(words.map(|w| u32::from_ne_bytes(w) != 0).collect()),
        DType::F16 => return Err(f16_refused(device, what)),
    };
    Ok(Tensor::new(ty.shape.clone(), data)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;

    fn round_trip(t: &Tensor) -> Tensor {
        let bytes = tensor_to_words(t, "dev", "x").unwrap();
        assert_eq!(bytes.len(), t.numel() * 4, "one word per element");
        let ty = TensorType::new(t.shape().clone(), t.dtype());
        tensor_from_words(&bytes, &ty, "dev", "x").unwrap()
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
    fn bool_is_a_zero_or_one_word_and_any_nonzero_reads_true() {
        let b = Tensor::from_bool([2], vec![true, false]).unwrap();
        let bytes = tensor_to_words(&b, "dev", "m").unwrap();
        assert_eq!(bytes, [1u32.to_ne_bytes(), 0u32.to_ne_bytes()].concat());
        let words: Vec<u8> = [0u32, 5, u32::MAX].iter().flat_map(|w| w.to_ne_bytes()).collect();
        let ty = TensorType::new([3], DType::Bool);
        let t = tensor_from_words(&words, &ty, "dev", "m").unwrap();
        assert_eq!(t.as_bool().unwrap(), &[false, true, true]);
    }

    #[test]
    fn f16_is_refused_both_ways() {
        let h = Tensor::from_f16([1], vec![f16::ONE]).unwrap();
        let e = tensor_to_words(&h, "lavapipe", "w").unwrap_err();
        assert!(matches!(&e, BackendError::Unsupported { op, .. } if op == "w"), "{e}");
        assert!(e.to_string().contains("f16"), "{e}");
        let ty = TensorType::new([1], DType::F16);
        assert!(tensor_from_words(&[0; 4], &ty, "lavapipe", "y").is_err());
    }

    #[test]
    fn wrong_byte_count_is_an_error_not_a_panic() {
        let ty = TensorType::new([2], DType::F32);
        let e = tensor_from_words(&[0; 7], &ty, "dev", "out 0").unwrap_err();
        assert!(e.to_string().contains("7 bytes"), "{e}");
    }
}
