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

/// Everything that can go wrong between opening a device and reading a run's outputs. Each
/// message names what is wrong and what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The device cannot be used on this machine or in this build.
    #[error("device {device} is unavailable: {reason}")]
    DeviceUnavailable {
        /// The device asked for.
        device: Device,
        /// Why it cannot be used (the driver's or the probe's words, or the cargo feature
        /// this build lacks).
        reason: String,
    },

    /// An environment variable holds a value rlx cannot use.
    #[error("environment variable {var}='{value}' is invalid: {source}; fix or unset it")]
    InvalidEnv {
        /// The variable's name (`RLX_DEVICE`, ...).
        var: &'static str,
        /// Its value.
        value: String,
        /// Why the value does not parse.
        #[source]
        source: ParseDeviceError,
    },

    /// A device name that does not parse.
    #[error(transparent)]
    ParseDevice(#[from] ParseDeviceError),

    /// A name the compiled graph has no input or param for.
    #[error("unknown {kind} '{name}'; the graph's {kind}s are: {known}{hint}")]
    UnknownName {
        /// Input or param.
        kind: PortKind,
        /// The name given.
        name: String,
        /// The names the graph has of that kind.
        known: NameList,
        /// A suggestion (the closest name, or where the name is of the other kind), possibly
        /// empty.
        hint: String,
    },

    /// `run` was called without a value for some inputs.
    #[error("missing input(s) {missing}: run needs a value for every input; expected {expected}")]
    MissingInputs {
        /// The inputs without a value.
        missing: NameList,
        /// Every input with its type.
        expected: String,
    },

    /// One input named twice in one `run` call.
    #[error("input '{name}' is given {count} times in one run call; pass each input once")]
    DuplicateInput {
        /// The input's name.
        name: String,
        /// How often it was given.
        count: usize,
    },

    /// Flat data whose element count does not match the declared shape.
    #[error(
        "{kind} '{name}' is declared {dtype}{shape} ({expected} elements) but got {got} elements; \
         pass exactly {expected} values in row-major order"
    )]
    WrongLength {
        /// Input or param.
        kind: PortKind,
        /// Its name.
        name: String,
        /// Its declared element type.
        dtype: DType,
        /// Its declared shape.
        shape: Shape,
        /// The element count of the declared shape.
        expected: usize,
        /// The element count given.
        got: usize,
    },

    /// Data of another element type than declared.
    #[error(
        "{kind} '{name}' is declared {expected}{shape} but got {got} data; convert the values to \
         {expected} (or declare the {kind} as {got} in the graph)"
    )]
    WrongDType {
        /// Input or param.
        kind: PortKind,
        /// Its name.
        name: String,
        /// Its declared shape.
        shape: Shape,
        /// Its declared element type.
        expected: DType,
        /// The element type given.
        got: DType,
    },

    /// A `Tensor` whose shape differs from the declared one (tensors are checked exactly).
    #[error(
        "{kind} '{name}' is declared with shape {expected} but got a tensor of shape {got}; \
         reshape it with Tensor::reshape or pass its flat data (a Vec or slice) instead"
    )]
    WrongShape {
        /// Input or param.
        kind: PortKind,
        /// Its name.
        name: String,
        /// Its declared shape.
        expected: Shape,
        /// The shape of the tensor given.
        got: Shape,
    },

    /// `run` before every param was set.
    #[error("params not set: {unset}; call set_param for each of them before run")]
    ParamsNotSet {
        /// The params without a value.
        unset: NameList,
    },

    /// The optimizer lost or retyped an input or param (a bug in rlx-opt, not in the caller's
    /// graph: every pass must keep leaves by name and type).
    #[error("the optimizer dropped or retyped {kind} '{name}' (declared {declared}); this is an rlx-opt bug, compile with CompileOptions {{ passes: PassOptions::none() }} to work around it")]
    LostPort {
        /// Input or param.
        kind: PortKind,
        /// Its name.
        name: String,
        /// Its declared type.
        declared: String,
    },

    /// The backend returned something other than the graph's declared outputs (a backend bug).
    #[error("backend {backend} returned {got} for output {index}, but the graph declares {expected}")]
    OutputMismatch {
        /// The backend's name.
        backend: &'static str,
        /// Which output (from 0).
        index: usize,
        /// The declared type.
        expected: String,
        /// What the backend returned.
        got: String,
    },

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
