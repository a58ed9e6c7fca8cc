//! The Python exceptions of the `rlx` module and the mapping from every rlx error to one of
//! them.
//!
//! Every class derives from `rlx.RlxError`; the message is the Rust error's own text, which
//! names the op, file, shape or device at fault and the fix. Nothing of rlx reaches Python as
//! a panic: each fallible call returns a `PyResult` built here.

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use rlx_ir::IrError;
use rlx_models::ModelError as RsModelError;
use rlx_opt::OptError;
use rlx_runtime::{BackendError as RsBackendError, Error as RuntimeError};

pyo3::create_exception!(rlx, RlxError, PyException, "Base class of every error rlx raises.");
pyo3::create_exception!(
    rlx,
    DeviceUnavailable,
    RlxError,
    "The device asked for cannot be used here (or its name is unknown); the message says why."
);
pyo3::create_exception!(
    rlx,
    ShapeError,
    RlxError,
    "A shape that does not fit: an input or param of the wrong shape, or operands of a graph op \
     whose shapes do not combine."
);
pyo3::create_exception!(rlx, DTypeError, RlxError, "An array or operand of the wrong element type.");
pyo3::create_exception!(
    rlx,
    LayoutError,
    RlxError,
    "A numpy array that is not C-contiguous: pass numpy.ascontiguousarray(a)."
);
pyo3::create_exception!(
    rlx,
    ModelError,
    RlxError,
    "A model that cannot be loaded or run: missing or malformed files, tokenizer, chat template."
);
pyo3::create_exception!(
    rlx,
    InvalidInput,
    RlxError,
    "An argument rlx cannot use: an unknown name, a missing input, a bad token id or option."
);
pyo3::create_exception!(rlx, GraphError, RlxError, "A graph that cannot be built or compiled.");
pyo3::create_exception!(
    rlx,
    UnsupportedError,
    RlxError,
    "An op or size the chosen device does not support; the message names the op and device."
);
pyo3::create_exception!(
    rlx,
    BackendError,
    RlxError,
    "The device failed while compiling or running (out of memory, device lost, driver error)."
);
pyo3::create_exception!(
    rlx,
    ClosedError,
    RlxError,
    "A method called on a session, executable or model after close()."
);

/// Registers every exception class on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("RlxError", py.get_type::<RlxError>())?;
    m.add("DeviceUnavailable", py.get_type::<DeviceUnavailable>())?;
    m.add("ShapeError", py.get_type::<ShapeError>())?;
    m.add("DTypeError", py.get_type::<DTypeError>())?;
    m.add("LayoutError", py.get_type::<LayoutError>())?;
    m.add("ModelError", py.get_type::<ModelError>())?;
    m.add("InvalidInput", py.get_type::<InvalidInput>())?;
    m.add("GraphError", py.get_type::<GraphError>())?;
    m.add("UnsupportedError", py.get_type::<UnsupportedError>())?;
    m.add("BackendError", py.get_type::<BackendError>())?;
    m.add("ClosedError", py.get_type::<ClosedError>())?;
    Ok(())
}

/// The exception for a graph-building error.
pub fn ir(e: &IrError) -> PyErr {
    let msg = e.to_string();
    match e {
        IrError::ShapeMismatch { .. } | IrError::DataLength { .. } | IrError::Attribute { .. } => {
            ShapeError::new_err(msg)
        }
        IrError::DType { .. } => DTypeError::new_err(msg),
        IrError::TooLarge { .. } => UnsupportedError::new_err(msg),
        _ => GraphError::new_err(msg),
    }
}

fn backend(e: &RsBackendError) -> PyErr {
    let msg = e.to_string();
    match e {
        RsBackendError::DeviceUnavailable { .. } => DeviceUnavailable::new_err(msg),
        RsBackendError::Unsupported { .. } | RsBackendError::LimitExceeded { .. } => {
            UnsupportedError::new_err(msg)
        }
        RsBackendError::Ir(ir_err) => ir(ir_err),
        _ => BackendError::new_err(msg),
    }
}

/// The exception for a runtime (session, compile, run) error.
pub fn runtime(e: &RuntimeError) -> PyErr {
    let msg = e.to_string();
    match e {
        RuntimeError::DeviceUnavailable { .. }
        | RuntimeError::InvalidEnv { .. }
        | RuntimeError::ParseDevice(_) => DeviceUnavailable::new_err(msg),
        RuntimeError::WrongLength { .. } | RuntimeError::WrongShape { .. } => ShapeError::new_err(msg),
        RuntimeError::WrongDType { .. } => DTypeError::new_err(msg),
        RuntimeError::UnknownName { .. }
        | RuntimeError::MissingInputs { .. }
        | RuntimeError::DuplicateInput { .. }
        | RuntimeError::ParamsNotSet { .. } => InvalidInput::new_err(msg),
        RuntimeError::Ir(ir_err) => ir(ir_err),
        RuntimeError::Opt(OptError::Unsupported { .. } | OptError::TooLarge { .. }) => {
            UnsupportedError::new_err(msg)
        }
        RuntimeError::Opt(_) => GraphError::new_err(msg),
        RuntimeError::Backend(b) => backend(b),
        _ => BackendError::new_err(msg),
    }
}

/// The exception for a model error.
pub fn model(e: &RsModelError) -> PyErr {
    match e {
        RsModelError::Runtime(r) => runtime(r),
        RsModelError::Ir(i) => ir(i),
        RsModelError::InvalidInput { .. } | RsModelError::ZeroBatch | RsModelError::Tokenize { .. } => {
            InvalidInput::new_err(e.to_string())
        }
        _ => ModelError::new_err(e.to_string()),
    }
}

/// `.map_err` helpers: `result.map_err(errors::from_model)`.
pub fn from_model(e: RsModelError) -> PyErr {
    model(&e)
}

pub fn from_runtime(e: RuntimeError) -> PyErr {
    runtime(&e)
}

pub fn from_ir(e: IrError) -> PyErr {
    ir(&e)
}

/// The error for a method called after `close()`.
pub fn closed(what: &str) -> PyErr {
    ClosedError::new_err(format!("this {what} is closed: create a new one"))
}
