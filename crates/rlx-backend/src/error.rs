//! Errors a backend can report.

use rlx_ir::IrError;

#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The device cannot be used at all on this machine.
    #[error("device {device} is unavailable: {reason}")]
    DeviceUnavailable { device: &'static str, reason: String },

    /// An op (after legalization) that this backend cannot run.
    #[error("{op} is not supported on {device}: {reason}")]
    Unsupported { op: String, device: String, reason: String },

    /// A tensor or dispatch larger than a device limit allows.
    #[error("{device}: {what} of node {node} needs {requested} but the device limit is {limit}; {hint}")]
    LimitExceeded {
        device: String,
        what: &'static str,
        node: String,
        requested: u64,
        limit: u64,
        hint: String,
    },

    #[error("{device}: out of memory allocating {requested} bytes for {scope}")]
    OutOfMemory { device: String, scope: String, requested: u64 },

    #[error("{device}: device lost during {scope}: {reason}")]
    DeviceLost { device: String, scope: String, reason: String },

    /// The driver refused something it was asked; `scope` says what, `reason` what it said.
    #[error("{device}: {scope} failed: {reason}")]
    Driver { device: String, scope: String, reason: String },

    #[error(transparent)]
    Ir(#[from] IrError),
}
