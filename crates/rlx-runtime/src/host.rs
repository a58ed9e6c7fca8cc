//! Host data accepted at the boundary of an [`Executable`](crate::Executable).
//!
//! A [`Tensor`] is checked exactly (dtype and shape). Flat data (`Vec<T>`, `[T]`, `[T; N]`,
//! `&[T]` for `T` in `f32`, `f16`, `bf16`, `i32`, `u32`, `u8`, `bool`) is checked for dtype and
//! element count
//! and takes the declared shape.

use crate::error::{Error, PortKind};
use half::{bf16, f16};
use rlx_ir::{DType, Tensor, TensorData, TensorType};
use std::borrow::Cow;

/// Borrowed flat host data of one element type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FlatData<'a> {
    /// `f32` values ([`DType::F32`]).
    F32(&'a [f32]),
    /// `half::f16` values ([`DType::F16`]).
    F16(&'a [f16]),
    /// `half::bf16` values ([`DType::BF16`]).
    BF16(&'a [bf16]),
    /// `i32` values ([`DType::I32`]).
    I32(&'a [i32]),
    /// `u32` values ([`DType::U32`]).
    U32(&'a [u32]),
    /// Bytes ([`DType::U8`], also packed quantized blocks).
    U8(&'a [u8]),
    /// Booleans ([`DType::Bool`]).
    Bool(&'a [bool]),
}

impl FlatData<'_> {
    /// The element type of the values.
    pub fn dtype(&self) -> DType {
        match self {
            FlatData::F32(_) => DType::F32,
            FlatData::F16(_) => DType::F16,
            FlatData::BF16(_) => DType::BF16,
            FlatData::I32(_) => DType::I32,
            FlatData::U32(_) => DType::U32,
            FlatData::U8(_) => DType::U8,
            FlatData::Bool(_) => DType::Bool,
        }
    }

    /// The number of values.
    pub fn len(&self) -> usize {
        match self {
            FlatData::F32(v) => v.len(),
            FlatData::F16(v) => v.len(),
            FlatData::BF16(v) => v.len(),
            FlatData::I32(v) => v.len(),
            FlatData::U32(v) => v.len(),
            FlatData::U8(v) => v.len(),
            FlatData::Bool(v) => v.len(),
        }
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn to_data(self) -> TensorData {
        match self {
            FlatData::F32(v) => TensorData::F32(copy(v)),
            FlatData::F16(v) => TensorData::F16(copy(v)),
            FlatData::BF16(v) => TensorData::BF16(copy(v)),
            FlatData::I32(v) => TensorData::I32(copy(v)),
            FlatData::U32(v) => TensorData::U32(copy(v)),
            FlatData::U8(v) => TensorData::U8(copy(v)),
            FlatData::Bool(v) => TensorData::Bool(copy(v)),
        }
    }
}

/// `v.to_vec()`, on all cores for large values: a 64 MB input copied by one thread (with the
/// page faults of its fresh allocation) costs more than the GPU's whole matmul on it.
fn copy<T: Copy + Send + Sync>(v: &[T]) -> Vec<T> {
    use rayon::prelude::*;
    if std::mem::size_of_val(v) < 1 << 20 {
        v.to_vec()
    } else {
        v.par_iter().copied().collect()
    }
}

/// What a [`HostData`] value looks like to the boundary.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HostView<'a> {
    /// A tensor with its own shape, which must equal the declared one.
    Tensor(&'a Tensor),
    /// Row-major values that take the declared shape.
    Flat(FlatData<'a>),
}

/// Host data accepted by `set_param` and `run`. Implemented for [`Tensor`], for `Vec<T>`, `[T]`
/// and `[T; N]` with `T` in `f32`, `half::f16`, `half::bf16`, `i32`, `u32`, `u8`, `bool`, and for
/// references to any of these, so `exe.run(&[("x", &x_vec)])` works with `x_vec: Vec<f32>`.
pub trait HostData {
    /// The value as the boundary checks it: a tensor with its shape, or flat values.
    fn host_view(&self) -> HostView<'_>;
}

impl HostData for Tensor {
    fn host_view(&self) -> HostView<'_> {
        HostView::Tensor(self)
    }
}

impl<H: HostData + ?Sized> HostData for &H {
    fn host_view(&self) -> HostView<'_> {
        (**self).host_view()
    }
}

macro_rules! flat_host_data {
    ($t:ty, $variant:ident) => {
        impl HostData for [$t] {
            fn host_view(&self) -> HostView<'_> {
                HostView::Flat(FlatData::$variant(self))
            }
        }
        impl HostData for Vec<$t> {
            fn host_view(&self) -> HostView<'_> {
                HostView::Flat(FlatData::$variant(self))
            }
        }
        impl<const N: usize> HostData for [$t; N] {
            fn host_view(&self) -> HostView<'_> {
                HostView::Flat(FlatData::$variant(self))
            }
        }
    };
}

flat_host_data!(f32, F32);
flat_host_data!(f16, F16);
flat_host_data!(bf16, BF16);
flat_host_data!(i32, I32);
flat_host_data!(u32, U32);
flat_host_data!(u8, U8);
flat_host_data!(bool, Bool);

/// Checks `value` against the declared type of `kind` `name` and returns a tensor of exactly that
/// type: borrowed for a matching `Tensor`, built from the declared shape for flat data.
pub(crate) fn to_tensor<'a>(
    kind: PortKind,
    name: &str,
    declared: &TensorType,
    value: &'a dyn HostData,
) -> Result<Cow<'a, Tensor>, Error> {
    let view = value.host_view();
    let got_dtype = match view {
        HostView::Tensor(t) => t.dtype(),
        HostView::Flat(f) => f.dtype(),
    };
    if got_dtype != declared.dtype {
        return Err(Error::WrongDType {
            kind,
            name: name.to_string(),
            shape: declared.shape.clone(),
            expected: declared.dtype,
            got: got_dtype,
        });
    }
    match view {
        HostView::Tensor(t) => {
            if t.shape() != &declared.shape {
                return Err(Error::WrongShape {
                    kind,
                    name: name.to_string(),
                    expected: declared.shape.clone(),
                    got: t.shape().clone(),
                });
            }
            Ok(Cow::Borrowed(t))
        }
        HostView::Flat(f) => {
            let expected = declared.numel();
            if f.len() != expected {
                return Err(Error::WrongLength {
                    kind,
                    name: name.to_string(),
                    dtype: declared.dtype,
                    shape: declared.shape.clone(),
                    expected,
                    got: f.len(),
                });
            }
            Ok(Cow::Owned(Tensor::new(declared.shape.clone(), f.to_data())?))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(dims: &[usize], dtype: DType) -> TensorType {
        TensorType::new(dims, dtype)
    }

    #[test]
    fn flat_data_takes_the_declared_shape() {
        let v = vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        let t = to_tensor(PortKind::Input, "x", &ty(&[2, 3], DType::F32), &v).unwrap();
        assert_eq!(t.dims(), &[2, 3]);
        assert_eq!(t.as_f32().unwrap(), &v[..]);
    }

    #[test]
    fn every_flat_type_reports_its_dtype() {
        let f16v = [f16::from_f32(1.5)];
        let bf16v = vec![bf16::from_f32(1.5)];
        let u32_slice: &[u32] = &[1];
        let cases: [(&dyn HostData, DType); 7] = [
            (&[1.0f32], DType::F32),
            (&f16v, DType::F16),
            (&bf16v, DType::BF16),
            (&vec![1i32], DType::I32),
            (&u32_slice, DType::U32),
            (&[7u8], DType::U8),
            (&[true], DType::Bool),
        ];
        for (value, dtype) in cases {
            let t = to_tensor(PortKind::Param, "p", &ty(&[1], dtype), value).unwrap();
            assert_eq!(t.dtype(), dtype);
            assert_eq!(t.dims(), &[1]);
        }
    }

    #[test]
    fn matching_tensor_is_borrowed_not_copied() {
        let t = Tensor::from_i32([2], vec![7, 8]).unwrap();
        let out = to_tensor(PortKind::Input, "ids", &ty(&[2], DType::I32), &t).unwrap();
        assert!(matches!(out, Cow::Borrowed(_)));
        assert_eq!(out.as_i32().unwrap(), &[7, 8]);
    }

    #[test]
    fn scalar_takes_one_value_and_empty_takes_none() {
        let t = to_tensor(PortKind::Input, "s", &ty(&[], DType::F32), &[2.5f32]).unwrap();
        assert_eq!(t.dims(), &[] as &[usize]);
        let empty: Vec<f32> = Vec::new();
        let t = to_tensor(PortKind::Input, "e", &ty(&[0, 3], DType::F32), &empty).unwrap();
        assert_eq!(t.numel(), 0);
    }
}
