//! Host tensors: typed data plus a shape. Used for constants in the graph, for parameters and
//! inputs handed to an executable, and for outputs read back from it.

use crate::round::{bf16_from_f64, f16_from_f64};
use crate::{DType, IrError, Shape};
use half::{bf16, f16};

/// Typed host storage, row-major.
#[derive(Clone, Debug, PartialEq)]
pub enum TensorData {
    /// [`DType::F32`] values.
    F32(Vec<f32>),
    /// [`DType::F16`] values.
    F16(Vec<f16>),
    /// [`DType::BF16`] values.
    BF16(Vec<bf16>),
    /// [`DType::I32`] values.
    I32(Vec<i32>),
    /// [`DType::U32`] values.
    U32(Vec<u32>),
    /// [`DType::U8`] values (also packed quantized blocks).
    U8(Vec<u8>),
    /// [`DType::Bool`] values.
    Bool(Vec<bool>),
}

impl TensorData {
    /// The element type held.
    pub fn dtype(&self) -> DType {
        match self {
            TensorData::F32(_) => DType::F32,
            TensorData::F16(_) => DType::F16,
            TensorData::BF16(_) => DType::BF16,
            TensorData::I32(_) => DType::I32,
            TensorData::U32(_) => DType::U32,
            TensorData::U8(_) => DType::U8,
            TensorData::Bool(_) => DType::Bool,
        }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        match self {
            TensorData::F32(v) => v.len(),
            TensorData::F16(v) => v.len(),
            TensorData::BF16(v) => v.len(),
            TensorData::I32(v) => v.len(),
            TensorData::U32(v) => v.len(),
            TensorData::U8(v) => v.len(),
            TensorData::Bool(v) => v.len(),
        }
    }

    /// Whether there is no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Zero-filled storage of `n` elements.
    pub fn zeros(dtype: DType, n: usize) -> Self {
        match dtype {
            DType::F32 => TensorData::F32(vec![0.0; n]),
            DType::F16 => TensorData::F16(vec![f16::ZERO; n]),
            DType::BF16 => TensorData::BF16(vec![bf16::ZERO; n]),
            DType::I32 => TensorData::I32(vec![0; n]),
            DType::U32 => TensorData::U32(vec![0; n]),
            DType::U8 => TensorData::U8(vec![0; n]),
            DType::Bool => TensorData::Bool(vec![false; n]),
        }
    }

    /// Every element widened to f64 (bool: 0/1). Exact for all dtypes rlx has.
    pub fn to_f64_vec(&self) -> Vec<f64> {
        match self {
            TensorData::F32(v) => v.iter().map(|&x| x as f64).collect(),
            TensorData::F16(v) => v.iter().map(|&x| x.to_f64()).collect(),
            TensorData::BF16(v) => v.iter().map(|&x| x.to_f64()).collect(),
            TensorData::I32(v) => v.iter().map(|&x| x as f64).collect(),
            TensorData::U32(v) => v.iter().map(|&x| x as f64).collect(),
            TensorData::U8(v) => v.iter().map(|&x| f64::from(x)).collect(),
            TensorData::Bool(v) => v.iter().map(|&x| if x { 1.0 } else { 0.0 }).collect(),
        }
    }

    /// Builds storage of `dtype` from f64 values with the same rounding as a cast:
    /// floats round once to nearest, ties to even (see `round.rs` for the 16-bit ones),
    /// integers truncate toward zero and saturate (U8 to 0..=255), bool is `!= 0`.
    /// NaN becomes 0 for integer types (as Rust's `as` does).
    pub fn from_f64(dtype: DType, v: &[f64]) -> Self {
        match dtype {
            DType::F32 => TensorData::F32(v.iter().map(|&x| x as f32).collect()),
            DType::F16 => TensorData::F16(v.iter().map(|&x| f16_from_f64(x)).collect()),
            DType::BF16 => TensorData::BF16(v.iter().map(|&x| bf16_from_f64(x)).collect()),
            DType::I32 => TensorData::I32(v.iter().map(|&x| x as i32).collect()),
            DType::U32 => TensorData::U32(v.iter().map(|&x| x as u32).collect()),
            DType::U8 => TensorData::U8(v.iter().map(|&x| x as u8).collect()),
            DType::Bool => TensorData::Bool(v.iter().map(|&x| x != 0.0).collect()),
        }
    }
}

/// A host tensor: a shape and data whose length matches it.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    shape: Shape,
    data: TensorData,
}

impl Tensor {
    /// Checks that `shape` passes [`Shape::check_size`] (`TooLarge` otherwise) and that `data`
    /// has exactly `shape.numel()` elements.
    pub fn new(shape: impl Into<Shape>, data: TensorData) -> Result<Self, IrError> {
        let shape = shape.into();
        let expected = shape.check_size("tensor", data.dtype())?;
        if expected != data.len() {
            return Err(IrError::DataLength { shape, expected, got: data.len() });
        }
        Ok(Tensor { shape, data })
    }

    /// A rank-0 f32 tensor.
    pub fn scalar_f32(x: f32) -> Self {
        Tensor { shape: Shape::scalar(), data: TensorData::F32(vec![x]) }
    }

    /// Zeros of a shape already checked (a graph node's type, see the `shape` module doc); for a
    /// shape from elsewhere use [`Tensor::try_zeros`]. An unchecked overflowing shape saturates
    /// to `usize::MAX` elements, which fails in the allocator rather than wrapping.
    pub fn zeros(shape: impl Into<Shape>, dtype: DType) -> Self {
        let shape = shape.into();
        let data = TensorData::zeros(dtype, shape.numel());
        Tensor { shape, data }
    }

    /// Zeros of any shape: `TooLarge` when the shape fails [`Shape::check_size`].
    pub fn try_zeros(shape: impl Into<Shape>, dtype: DType) -> Result<Self, IrError> {
        let shape = shape.into();
        let n = shape.check_size("tensor", dtype)?;
        Ok(Tensor { shape, data: TensorData::zeros(dtype, n) })
    }

    /// From f64 values, converted to `dtype` (see [`TensorData::from_f64`]).
    pub fn from_f64(shape: impl Into<Shape>, dtype: DType, v: &[f64]) -> Result<Self, IrError> {
        Tensor::new(shape, TensorData::from_f64(dtype, v))
    }

    /// The shape.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// The dims, outermost first.
    pub fn dims(&self) -> &[usize] {
        self.shape.dims()
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }

    /// The values, row-major.
    pub fn data(&self) -> &TensorData {
        &self.data
    }

    /// The values, row-major, without the shape.
    pub fn into_data(self) -> TensorData {
        self.data
    }

    /// The number of elements.
    pub fn numel(&self) -> usize {
        self.data.len()
    }

    /// Same data, new shape with the same element count.
    pub fn reshape(self, shape: impl Into<Shape>) -> Result<Self, IrError> {
        Tensor::new(shape, self.data)
    }

    /// Every element as f32 (converting from the stored dtype).
    pub fn to_f32_vec(&self) -> Vec<f32> {
        match &self.data {
            TensorData::F32(v) => v.clone(),
            other => other.to_f64_vec().into_iter().map(|x| x as f32).collect(),
        }
    }

    /// Every element as f64 (exact for every dtype rlx stores).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        self.data.to_f64_vec()
    }
}

/// Per element type: `from_<t>(shape, Vec<t>)` (checked like [`Tensor::new`]) and, where listed,
/// `as_<t>()`, the data as a slice when the tensor holds that type.
macro_rules! typed_access {
    (from: $($from:ident($ty:ty) => $variant:ident),+; as: $($as:ident($aty:ty) => $avariant:ident),+) => {
        impl Tensor {
            $(
                #[doc = concat!("A tensor of `shape` holding `v` (", stringify!($variant), "); the length must match the shape.")]
                pub fn $from(shape: impl Into<Shape>, v: Vec<$ty>) -> Result<Self, IrError> {
                    Tensor::new(shape, TensorData::$variant(v))
                }
            )+
            $(
                #[doc = concat!("The values as a slice when the tensor holds ", stringify!($avariant), ", else `None`.")]
                pub fn $as(&self) -> Option<&[$aty]> {
                    match &self.data {
                        TensorData::$avariant(v) => Some(v),
                        _ => None,
                    }
                }
            )+
        }
    };
}

typed_access!(
    from: from_f32(f32) => F32, from_f16(f16) => F16, from_bf16(bf16) => BF16, from_i32(i32) => I32,
        from_u32(u32) => U32, from_u8(u8) => U8, from_bool(bool) => Bool;
    as: as_f32(f32) => F32, as_i32(i32) => I32, as_bool(bool) => Bool
);
