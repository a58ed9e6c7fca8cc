//! Host ↔ device conversion, per dtype: the one place that knows how each dtype is stored on a
//! GPU. Every dtype is stored at its own size, native-endian: F32, I32 and U32 as 32-bit words,
//! F16 and BF16 as 2 bytes (two to a word, the lower index in the low half on the little-endian
//! machines rlx runs on), U8 as 1 byte (four to a word). Bool is a u32 word, 0 or 1 (any
//! non-zero word reads back as true): the compare and where kernels write and read it whole.
//!
//! A buffer always holds whole 32-bit words ([`device_bytes`] rounds up to 4): kernels bind
//! storage as `array<u32>` and the cast kernels write a whole word per invocation (WGSL has no
//! 8- or 16-bit stores that would not race with a neighbour), and wgpu copies only multiples of
//! 4 bytes. The bytes past the last element are padding: written as zeros on upload, whatever a
//! kernel leaves there on the device, ignored on readback.

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

/// Device bytes of a tensor of type `ty`: its elements at [`stored_size`], rounded up to whole
/// 32-bit words (saturating: sizes were checked by the IR builders).
pub fn device_bytes(ty: &TensorType) -> u64 {
    let bytes = (ty.numel() as u64).saturating_mul(stored_size(ty.dtype));
    bytes.div_ceil(4).saturating_mul(4)
}

/// The device bytes of `t` ([`device_bytes`] of them); borrowed where the host layout already
/// is the device layout (every dtype but Bool, when its bytes fill whole words), otherwise a
/// copy padded with zeros. `device` and `what` (the leaf's name) label errors.
pub fn to_device<'a>(t: &'a Tensor, device: &str, what: &str) -> Result<Cow<'a, [u8]>, BackendError> {
    let bytes: &[u8] = match t.data() {
        TensorData::F32(v) => bytemuck::cast_slice(v),
        TensorData::F16(v) => bytemuck::cast_slice(v),
        TensorData::BF16(v) => bytemuck::cast_slice(v),
        TensorData::I32(v) => bytemuck::cast_slice(v),
        TensorData::U32(v) => bytemuck::cast_slice(v),
        TensorData::U8(v) => v,
        TensorData::Bool(v) => {
            return Ok(Cow::Owned(v.iter().flat_map(|&b| u32::from(b).to_ne_bytes()).collect()));
        }
    };
    let size = device_bytes(&TensorType::new(t.shape().clone(), t.dtype()));
    let padded = usize::try_from(size).map_err(|_| BackendError::Driver {
        device: device.to_string(),
        scope: format!("uploading {what}"),
        reason: format!("{size} bytes do not fit this host's address space"),
    })?;
    if padded == bytes.len() {
        return Ok(Cow::Borrowed(bytes));
    }
    let mut out = vec![0u8; padded];
    copy_bytes(&mut out, bytes);
    Ok(Cow::Owned(out))
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

/// The first `n` elements of type `T` held by `bytes` (at least `n · size_of::<T>()` long;
/// any alignment).
fn elements<T: bytemuck::Pod>(bytes: &[u8], n: usize) -> Vec<T> {
    let mut out = vec![T::zeroed(); n];
    copy_bytes(bytemuck::cast_slice_mut(&mut out), bytes);
    out
}

/// The tensor of type `ty` held by `bytes` (exactly [`device_bytes`] of them; the padding after
/// the last element is ignored).
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
    let n = ty.numel();
    let data = match ty.dtype {
        DType::F32 => TensorData::F32(elements(bytes, n)),
        DType::F16 => TensorData::F16(elements(bytes, n)),
        DType::BF16 => TensorData::BF16(elements(bytes, n)),
        DType::I32 => TensorData::I32(elements(bytes, n)),
        DType::U32 => TensorData::U32(elements(bytes, n)),
        DType::U8 => TensorData::U8(elements(bytes, n)),
        DType::Bool => TensorData::Bool(elements::<u32>(bytes, n).into_iter().map(|w| w != 0).collect()),
    };
    Ok(Tensor::new(ty.shape.clone(), data)?)
}
