//! What crosses the Python boundary: device, precision and dtype names; numpy arrays in (borrowed
//! without a copy when C-contiguous, checked for dtype and shape against the declared port) and
//! tensors out (their Rust buffer handed to numpy without a copy).

use crate::errors::{DTypeError, DeviceUnavailable, InvalidInput, LayoutError, ShapeError};
use half::f16;
use numpy::{
    PyArray1, PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use rlx_ir::{DType, Tensor, TensorData};
use rlx_runtime::{Device, FlatData, HostData, HostView, Precision};

/// A device name as Python gives it ("cpu", "gpu", "vulkan", "auto", any case).
pub fn device(name: &str) -> PyResult<Device> {
    name.parse::<Device>().map_err(|e| DeviceUnavailable::new_err(e.to_string()))
}

/// A precision name ("f32", "mixed", "f16", any case).
pub fn precision(name: &str) -> PyResult<Precision> {
    name.parse::<Precision>().map_err(InvalidInput::new_err)
}

/// A dtype name: rlx's ("f32", "i32", …) or numpy's ("float32", "int32", "uint8", "bool", …).
pub fn dtype(name: &str) -> PyResult<DType> {
    let n = name.trim().to_ascii_lowercase();
    let found = DType::ALL.into_iter().find(|d| d.name() == n).or(match n.as_str() {
        "float32" => Some(DType::F32),
        "float16" => Some(DType::F16),
        "bfloat16" => Some(DType::BF16),
        "int32" => Some(DType::I32),
        "uint32" => Some(DType::U32),
        "uint8" => Some(DType::U8),
        "bool_" => Some(DType::Bool),
        _ => None,
    });
    found.ok_or_else(|| {
        DTypeError::new_err(format!(
            "unknown dtype '{name}'; rlx dtypes are f32, f16, bf16, i32, u32, u8, bool (numpy spellings such as 'float32' work too)"
        ))
    })
}

/// Flat host data borrowed from a numpy array, as the runtime takes it.
#[derive(Clone, Copy)]
pub struct Flat<'a>(pub FlatData<'a>);

impl HostData for Flat<'_> {
    fn host_view(&self) -> HostView<'_> {
        HostView::Flat(self.0)
    }
}

/// A numpy array kept borrowed (read-only) for as long as the runtime reads it.
pub enum Borrowed<'py> {
    F32(PyReadonlyArrayDyn<'py, f32>),
    F16(PyReadonlyArrayDyn<'py, f16>),
    I32(PyReadonlyArrayDyn<'py, i32>),
    U32(PyReadonlyArrayDyn<'py, u32>),
    U8(PyReadonlyArrayDyn<'py, u8>),
    Bool(PyReadonlyArrayDyn<'py, bool>),
}

/// The numpy dtype name of `a` (for messages).
fn numpy_dtype_name(a: &Bound<'_, PyUntypedArray>) -> String {
    a.dtype().to_string()
}

impl<'py> Borrowed<'py> {
    /// Borrows `value` (a numpy array) for the `kind` named `name`, declared `dtype` `dims`.
    /// `None`, a non-array, another dtype, another shape or a non-contiguous layout are each an
    /// exception naming the port and what to pass instead.
    pub fn new(
        value: &Bound<'py, PyAny>,
        kind: &str,
        name: &str,
        dtype: DType,
        dims: &[usize],
    ) -> PyResult<Borrowed<'py>> {
        let Ok(array) = value.cast::<PyUntypedArray>() else {
            let ty = value.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "{kind} '{name}' must be a numpy array of {dtype} {dims:?}, got {ty}; wrap it with numpy.asarray(..., dtype=...)"
            )));
        };
        if array.shape() != dims {
            return Err(ShapeError::new_err(format!(
                "{kind} '{name}' is declared {dtype}{dims:?} but the array has shape {:?}; reshape it to {dims:?}",
                array.shape()
            )));
        }
        if !array.is_c_contiguous() {
            return Err(LayoutError::new_err(format!(
                "{kind} '{name}' (shape {dims:?}) is not C-contiguous (a transposed or strided view); pass numpy.ascontiguousarray(...) of it"
            )));
        }
        let wrong = || {
            DTypeError::new_err(format!(
                "{kind} '{name}' is declared {dtype}{dims:?} but the array's dtype is {}; convert it with .astype(numpy.{})",
                numpy_dtype_name(array),
                numpy_name(dtype)
            ))
        };
        macro_rules! borrow {
            ($t:ty, $v:ident) => {{
                let typed = value.cast::<PyArrayDyn<$t>>().map_err(|_| wrong())?;
                let ro = typed.try_readonly().map_err(|e| {
                    InvalidInput::new_err(format!("{kind} '{name}': the array cannot be read now: {e}"))
                })?;
                Borrowed::$v(ro)
            }};
        }
        Ok(match dtype {
            DType::F32 => borrow!(f32, F32),
            DType::F16 => borrow!(f16, F16),
            DType::I32 => borrow!(i32, I32),
            DType::U32 => borrow!(u32, U32),
            DType::U8 => borrow!(u8, U8),
            DType::Bool => borrow!(bool, Bool),
            DType::BF16 => {
                return Err(DTypeError::new_err(format!(
                    "{kind} '{name}' is declared bf16, which numpy has no dtype for; declare it f32 or f16"
                )))
            }
        })
    }

    /// The array's values, row-major, without a copy.
    pub fn flat(&self) -> PyResult<Flat<'_>> {
        let layout =
            |e: numpy::AsSliceError| LayoutError::new_err(format!("the array is not contiguous: {e}"));
        Ok(Flat(match self {
            Borrowed::F32(a) => FlatData::F32(a.as_slice().map_err(layout)?),
            Borrowed::F16(a) => FlatData::F16(a.as_slice().map_err(layout)?),
            Borrowed::I32(a) => FlatData::I32(a.as_slice().map_err(layout)?),
            Borrowed::U32(a) => FlatData::U32(a.as_slice().map_err(layout)?),
            Borrowed::U8(a) => FlatData::U8(a.as_slice().map_err(layout)?),
            Borrowed::Bool(a) => FlatData::Bool(a.as_slice().map_err(layout)?),
        }))
    }
}

/// numpy's name of an rlx dtype (bf16 has none: it is returned as float32).
pub fn numpy_name(d: DType) -> &'static str {
    match d {
        DType::F32 | DType::BF16 => "float32",
        DType::F16 => "float16",
        DType::I32 => "int32",
        DType::U32 => "uint32",
        DType::U8 => "uint8",
        DType::Bool => "bool_",
    }
}

/// `v` as a numpy array of shape `dims`: the Vec becomes the array's buffer (no copy).
fn shaped<'py, T: numpy::Element>(py: Python<'py>, v: Vec<T>, dims: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    let flat = PyArray1::from_vec(py, v);
    Ok(flat.reshape(dims.to_vec())?.into_any())
}

/// An output tensor as a numpy array, its buffer moved (bf16, which numpy lacks, is widened to
/// float32).
pub fn tensor_to_numpy<'py>(py: Python<'py>, t: Tensor) -> PyResult<Bound<'py, PyAny>> {
    let dims = t.dims().to_vec();
    match t.into_data() {
        TensorData::F32(v) => shaped(py, v, &dims),
        TensorData::F16(v) => shaped(py, v, &dims),
        TensorData::BF16(v) => shaped(py, v.into_iter().map(f32::from).collect::<Vec<f32>>(), &dims),
        TensorData::I32(v) => shaped(py, v, &dims),
        TensorData::U32(v) => shaped(py, v, &dims),
        TensorData::U8(v) => shaped(py, v, &dims),
        TensorData::Bool(v) => shaped(py, v, &dims),
    }
}

/// Rows of equal length as one float32 [n, dim] array (one copy: the rows are separate Vecs).
pub fn rows_to_numpy<'py>(py: Python<'py>, rows: Vec<Vec<f32>>, dim: usize) -> PyResult<Bound<'py, PyAny>> {
    let n = rows.len();
    let mut flat = Vec::with_capacity(n * dim);
    for r in rows {
        flat.extend_from_slice(&r);
    }
    shaped(py, flat, &[n, dim])
}
