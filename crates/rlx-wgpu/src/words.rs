//! Host tensors ↔ device words. Device data is 32-bit words: f32, i32 and u32 as they are,
//! Bool as a u32 0/1 word. F16 is not stored on the GPU (the capabilities refuse it).

use rlx_backend::BackendError;
use rlx_ir::{DType, Tensor, TensorData, TensorType};
use std::borrow::Cow;

/// The device bytes of `t`, native-endian words.
pub(crate) fn to_words<'a>(device: &str, what: &str, t: &'a Tensor) -> Result<Cow<'a, [u8]>, BackendError> {
    Ok(match t.data() {
        TensorData::F32(v) => Cow::Borrowed(bytemuck::cast_slice(v)),
        TensorData::I32(v) => Cow::Borrowed(bytemuck::cast_slice(v)),
        TensorData::U32(v) => Cow::Borrowed(bytemuck::cast_slice(v)),
        TensorData::Bool(v) => Cow::Owned(v.iter().flat_map(|&b| u32::from(b).to_ne_bytes()).collect()),
        TensorData::F16(_) => return Err(f16_unsupported(device, what)),
    })
}

pub(crate) fn f16_unsupported(device: &str, what: &str) -> BackendError {
    BackendError::Unsupported {
        op: what.to_string(),
        device: device.to_string(),
        reason: "f16 tensors are not stored on the GPU yet; cast to f32 first".into(),
    }
}

fn word(c: &[u8]) -> [u8; 4] {
    [c[0], c[1], c[2], c[3]]
}

/// A tensor of type `ty` from its device bytes (`numel` words; any alignment).
pub(crate) fn from_words(
    device: &str,
    what: &str,
    bytes: &[u8],
    ty: &TensorType,
) -> Result<Tensor, BackendError> {
    let n = ty.numel();
    if bytes.len() != n * 4 {
        return Err(BackendError::Driver {
            device: device.to_string(),
            scope: format!("reading back {what}"),
            reason: format!("expected {} bytes for {n} elements, got {}", n * 4, bytes.len()),
        });
    }
    let words = bytes.chunks_exact(4).map(word);
    let data = match ty.dtype {
        DType::F32 => TensorData::F32(words.map(f32::from_ne_bytes).collect()),
        DType::I32 => TensorData::I32(words.map(i32::from_ne_bytes).collect()),
        DType::U32 => TensorData::U32(words.map(u32::from_ne_bytes).collect()),
        DType::Bool => TensorData::Bool(words.map(|w| u32::from_ne_bytes(w) != 0).collect()),
        DType::F16 => return Err(f16_unsupported(device, what)),
    };
    Ok(Tensor::new(ty.shape.clone(), data)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(t: &Tensor) -> Tensor {
        let bytes = to_words("d", "x", t).unwrap().into_owned();
        assert_eq!(bytes.len(), t.numel() * 4);
        let ty = TensorType::new(t.dims(), t.dtype());
        from_words("d", "x", &bytes, &ty).unwrap()
    }

    #[test]
    fn every_word_dtype_round_trips() {
        let f = Tensor::from_f32(vec![2, 2], vec![1.5, -0.0, f32::NAN, f32::INFINITY]).unwrap();
        let back = round_trip(&f).to_f32_vec();
        assert_eq!(back[0], 1.5);
        assert!(back[1] == 0.0 && back[1].is_sign_negative());
        assert!(back[2].is_nan() && back[3] == f32::INFINITY);
        let i = Tensor::from_i32(vec![3], vec![-7, 0, i32::MAX]).unwrap();
        assert_eq!(round_trip(&i), i);
        let u = Tensor::from_u32(vec![2], vec![u32::MAX, 3]).unwrap();
        assert_eq!(round_trip(&u), u);
        let b = Tensor::from_bool(vec![3], vec![true, false, true]).unwrap();
        assert_eq!(round_trip(&b), b);
        let e = Tensor::from_f32(vec![0, 3], vec![]).unwrap();
        assert_eq!(round_trip(&e), e);
    }

    #[test]
    fn bool_is_a_zero_or_one_word_and_any_nonzero_word_is_true() {
        let b = Tensor::from_bool(vec![2], vec![true, false]).unwrap();
        let bytes = to_words("d", "x", &b).unwrap();
        assert_eq!(&bytes[..], [1u32.to_ne_bytes(), 0u32.to_ne_bytes()].concat());
        let ty = TensorType::new(vec![2], DType::Bool);
        let t = from_words("d", "x", &[7u32.to_ne_bytes(), 0u32.to_ne_bytes()].concat(), &ty).unwrap();
        assert_eq!(t.as_bool().unwrap(), &[true, false]);
    }

    #[test]
    fn f16_and_wrong_lengths_are_errors() {
        let h = Tensor::zeros(vec![2], DType::F16);
        assert!(matches!(to_words("d", "x", &h), Err(BackendError::Unsupported { .. })));
        let ty = TensorType::new(vec![2], DType::F32);
        assert!(matches!(from_words("d", "x", &[0u8; 4], &ty), Err(BackendError::Driver { .. })));
    }
}
