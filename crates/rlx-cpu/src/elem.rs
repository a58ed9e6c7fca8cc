//! Element types as Rust types, and the conversions every kernel shares: dtype dispatch,
//! widening of floats to f32, rounding results back, and the crate's error constructors.

use half::{bf16, f16};
use rlx_backend::BackendError;
use rlx_ir::{DType, Shape, Tensor, TensorData};
use std::borrow::Cow;

/// A host element type: how to find it in, and put it back into, [`TensorData`].
pub(crate) trait Elem: Copy + Send + Sync + 'static {
    fn slice(d: &TensorData) -> Option<&[Self]>;
    fn wrap(v: Vec<Self>) -> TensorData;
    /// Converts with the rules of a cast (see `TensorData::from_f64`).
    fn from_f64(x: f64) -> Self;
}

macro_rules! impl_elem {
    ($t:ty, $variant:ident, |$x:ident| $conv:expr) => {
        impl Elem for $t {
            fn slice(d: &TensorData) -> Option<&[Self]> {
                match d {
                    TensorData::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn wrap(v: Vec<Self>) -> TensorData {
                TensorData::$variant(v)
            }
            fn from_f64($x: f64) -> Self {
                $conv
            }
        }
    };
}

impl_elem!(f32, F32, |x| x as f32);
impl_elem!(f16, F16, |x| rlx_ir::f16_from_f64(x));
impl_elem!(bf16, BF16, |x| rlx_ir::bf16_from_f64(x));
impl_elem!(i32, I32, |x| x as i32);
impl_elem!(u32, U32, |x| x as u32);
impl_elem!(u8, U8, |x| x as u8);
impl_elem!(bool, Bool, |x| x != 0.0);

/// Runs `$body` with `$T` bound to the Rust type of `$dtype`. Lets dtype-agnostic kernels (shape
/// ops, gather, where) be written once as generic functions.
macro_rules! with_elem {
    ($dtype:expr, $T:ident => $body:expr) => {
        $crate::elem::with_elem!(@arms $dtype, $T => $body;
            F32 f32, F16 half::f16, BF16 half::bf16, I32 i32, U32 u32, U8 u8, Bool bool)
    };
    (@arms $dtype:expr, $T:ident => $body:expr; $($v:ident $ty:ty),*) => {
        match $dtype {
            $(rlx_ir::DType::$v => {
                type $T = $ty;
                $body
            })*
        }
    };
}
pub(crate) use with_elem;

/// The elements of `t` as `T`, or an error naming `op` if `t` holds another dtype.
pub(crate) fn elems<'a, T: Elem>(t: &'a Tensor, op: &str) -> Result<&'a [T], BackendError> {
    T::slice(t.data()).ok_or_else(|| invalid(op, format!("operand has unexpected dtype {}", t.dtype())))
}

/// A float tensor's elements as f32 (F16 and BF16 widened exactly), or an error for other
/// dtypes.
pub(crate) fn floats<'a>(t: &'a Tensor, op: &str) -> Result<Cow<'a, [f32]>, BackendError> {
    match t.data() {
        TensorData::F32(v) => Ok(Cow::Borrowed(v)),
        TensorData::F16(v) => Ok(Cow::Owned(v.iter().map(|x| x.to_f32()).collect())),
        TensorData::BF16(v) => Ok(Cow::Owned(v.iter().map(|x| x.to_f32()).collect())),
        other => Err(unsupported(op, format!("dtype {} (this op needs f32, f16 or bf16)", other.dtype()))),
    }
}

/// Packs f32 results as `dtype`: F32 as is, F16 and BF16 rounded to nearest even.
pub(crate) fn float_tensor(shape: &Shape, dtype: DType, v: Vec<f32>) -> Result<Tensor, BackendError> {
    let data = match dtype {
        DType::F32 => TensorData::F32(v),
        DType::F16 => TensorData::F16(v.into_iter().map(f16::from_f32).collect()),
        DType::BF16 => TensorData::BF16(v.into_iter().map(bf16::from_f32).collect()),
        other => return Err(unsupported("float op", format!("output dtype {other}"))),
    };
    tensor(shape, data)
}

/// A tensor of `shape`, checking the element count.
pub(crate) fn tensor(shape: &Shape, data: TensorData) -> Result<Tensor, BackendError> {
    Ok(Tensor::new(shape.clone(), data)?)
}

/// An op/dtype combination the CPU backend does not run.
pub(crate) fn unsupported(op: &str, reason: impl Into<String>) -> BackendError {
    BackendError::Unsupported { op: op.to_string(), device: "cpu".into(), reason: reason.into() }
}

/// A request that contradicts itself (operands that do not fit the op). Graphs built with the
/// builder never produce one; a hand-made call to `eval` can.
pub(crate) fn invalid(op: &str, reason: impl Into<String>) -> BackendError {
    BackendError::Driver { device: "cpu".into(), scope: format!("evaluating {op}"), reason: reason.into() }
}
