//! The runtime's error type, which gathers every lower crate's errors (`rlx::Error`).
//!
//! Boundary variants name the input or param, what was expected, what was given, and the fix.

use crate::device::{Device, ParseDeviceError};
use rlx_backend::BackendError;
use rlx_ir::{DType, IrError, Shape};
use rlx_opt::OptError;
use std::fmt;

/// Which side of the boundary a value was handed to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortKind {
    /// Fed on every `run`.
    Input,
    /// Set once with `set_param`.
    Param,
    /// Device-resident state: zeros at compile time, written by runs, set with `set_state`.
    State,
}

impl fmt::Display for PortKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PortKind::Input => "input",
            PortKind::Param => "param",
            PortKind::State => "state",
        })
    }
}

/// Names joined for a message: `'a', 'b'`, or `(none)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameList(pub Vec<String>);

impl fmt::Display for NameList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("(none)");
        }
        for (i, n) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "'{n}'")?;
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The device cannot be used on this machine or in this build.
    #[error("device {device} is unavailable: {reason}")]
    DeviceUnavailable { device: Device, reason: String },

    /// An environment variable holds a value rlx cannot use.
    #[error("environment variable {var}='{value}' is invalid: {source}; fix or unset it")]
    InvalidEnv {
        var: &'static str,
        value: String,
        #[source]
        source: ParseDeviceError,
    },

    /// A device name that does not parse.
    #[error(transparent)]
    ParseDevice(#[from] ParseDeviceError),

    /// A name the compiled graph has no input or param for.
    #[error("unknown {kind} '{name}'; the graph's {kind}s are: {known}{hint}")]
    UnknownName { kind: PortKind, name: String, known: NameList, hint: String },

    /// `run` was called without a value for some inputs.
    #[error("missing input(s) {missing}: run needs a value for every input; expected {expected}")]
    MissingInputs { missing: NameList, expected: String },

    /// One input named twice in one `run` call.
    #[error("input '{name}' is given {count} times in one run call; pass each input once")]
    DuplicateInput { name: String, count: usize },

    /// Flat data whose element count does not match the declared shape.
    #[error(
        "{kind} '{name}' is declared {dtype}{shape} ({expected} elements) but got {got} elements; \
         pass exactly {expected} values in row-major order"
    )]
    WrongLength { kind: PortKind, name: String, dtype: DType, shape: Shape, expected: usize, got: usize },

    /// Data of another element type than declared.
    #[error(
        "{kind} '{name}' is declared {expected}{shape} but got {got} data; convert the values to \
         {expected} (or declare the {kind} as {got} in the graph)"
    )]
    WrongDType { kind: PortKind, name: String, shape: Shape, expected: DType, got: DType },

    /// A `Tensor` whose shape differs from the declared one (tensors are checked exactly).
    #[error(
        "{kind} '{name}' is declared with shape {expected} but got a tensor of shape {got}; \
         reshape it with Tensor::reshape or pass its flat data (a Vec or slice) instead"
    )]
    WrongShape { kind: PortKind, name: String, expected: Shape, got: Shape },

    /// `run` before every param was set.
    #[error("params not set: {unset}; call set_param for each of them before run")]
    ParamsNotSet { unset: NameList },

    /// The optimizer lost or retyped an input or param (a bug in rlx-opt, not in the caller's
    /// graph: every pass must keep leaves by name and type).
    #[error("the optimizer dropped or retyped {kind} '{name}' (declared {declared}); this is an rlx-opt bug, compile with CompileOptions {{ passes: PassOptions::none() }} to work around it")]
    LostPort { kind: PortKind, name: String, declared: String },

    /// The backend returned something other than the graph's declared outputs (a backend bug).
    #[error("backend {backend} returned {got} for output {index}, but the graph declares {expected}")]
    OutputMismatch { backend: &'static str, index: usize, expected: String, got: String },

    /// Building or verifying the graph failed.
    #[error(transparent)]
    Ir(#[from] IrError),

    /// The optimizer could not prepare the graph for the device (for example `Unsupported`).
    #[error(transparent)]
    Opt(#[from] OptError),

    /// The backend failed while compiling or running.
    #[error(transparent)]
    Backend(#[from] BackendError),
}
