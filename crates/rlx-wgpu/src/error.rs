//! wgpu failures as rlx errors. wgpu reports most failures asynchronously, through error scopes
//! or the device's uncaptured-error handler (which panics when none is installed); device loss
//! comes through a callback. [`ErrorLog`] is what those handlers write into, and the
//! conversions here turn every report into a [`BackendError`] naming the device and the scope.

use rlx_backend::BackendError;
use rlx_gpu::driver::{lock, Failure, LossState};
use std::sync::Mutex;

/// How many uncaptured errors are kept; later ones only count.
const KEEP: usize = 16;

/// Errors reported outside any error scope, and device loss.
#[derive(Debug, Default)]
pub(crate) struct ErrorLog {
    uncaptured: Mutex<Recorded>,
    pub(crate) loss: LossState,
}

#[derive(Debug, Default)]
struct Recorded {
    errors: Vec<(Kind, String)>,
    dropped: usize,
}

/// The kind of a wgpu error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    OutOfMemory,
    Validation,
    Internal,
}

/// Kind and full message of a wgpu error (description plus its source chain).
pub(crate) fn describe(e: &wgpu::Error) -> (Kind, String) {
    let kind = match e {
        wgpu::Error::OutOfMemory { .. } => Kind::OutOfMemory,
        wgpu::Error::Validation { .. } => Kind::Validation,
        wgpu::Error::Internal { .. } => Kind::Internal,
    };
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let s = c.to_string();
        // wgpu's descriptions often already contain their sources.
        if !text.contains(&s) {
            text.push_str(": ");
            text.push_str(&s);
        }
        cause = c.source();
    }
    (kind, text)
}

impl ErrorLog {
    /// Called by the uncaptured-error handler.
    pub(crate) fn record(&self, e: &wgpu::Error) {
        let mut r = lock(&self.uncaptured);
        if r.errors.len() < KEEP {
            r.errors.push(describe(e));
        } else {
            r.dropped += 1;
        }
    }

    /// Called by the device-lost callback.
    pub(crate) fn lose(&self, reason: String) {
        self.loss.record(|| reason);
    }

    /// Takes the uncaptured errors recorded so far: the most severe kind and every message.
    pub(crate) fn take(&self) -> Option<(Kind, String)> {
        let mut r = lock(&self.uncaptured);
        let recorded = std::mem::take(&mut *r);
        let kind = [Kind::OutOfMemory, Kind::Validation, Kind::Internal]
            .into_iter()
            .find(|k| recorded.errors.iter().any(|(e, _)| e == k))?;
        let mut text = recorded.errors.iter().map(|(_, m)| m.as_str()).collect::<Vec<_>>().join("; ");
        if recorded.dropped > 0 {
            text.push_str(&format!("; and {} more", recorded.dropped));
        }
        Some((kind, text))
    }
}

/// A wgpu error of `kind` during `scope` as a [`BackendError`]. `requested` is the number of
/// bytes the scope allocates (for out-of-memory reports).
pub(crate) fn to_backend(
    device: &str,
    scope: &str,
    requested: u64,
    kind: Kind,
    message: String,
) -> BackendError {
    let failure = match kind {
        Kind::OutOfMemory => Failure::OutOfMemory,
        Kind::Validation | Kind::Internal => Failure::Other(message),
    };
    failure.error(device, scope, requested)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn validation(msg: &str) -> wgpu::Error {
        wgpu::Error::Validation { source: msg.to_string().into(), description: msg.to_string() }
    }

    #[test]
    fn log_keeps_messages_and_reports_the_worst_kind() {
        let log = ErrorLog::default();
        assert!(log.take().is_none());
        log.record(&validation("binding 2 is too small"));
        log.record(&wgpu::Error::OutOfMemory { source: "no memory".to_string().into() });
        let (kind, text) = log.take().unwrap();
        assert_eq!(kind, Kind::OutOfMemory);
        assert!(text.contains("binding 2 is too small") && text.contains("no memory"), "{text}");
        // Taken means cleared.
        assert!(log.take().is_none());
        for i in 0..KEEP + 3 {
            log.record(&validation(&format!("e{i}")));
        }
        let (kind, text) = log.take().unwrap();
        assert_eq!(kind, Kind::Validation);
        assert!(text.ends_with("and 3 more"), "{text}");
    }

    #[test]
    fn loss_is_sticky_and_keeps_the_first_reason() {
        let log = ErrorLog::default();
        assert_eq!(log.loss.lost(), None);
        log.lose("Unknown: driver reset".into());
        log.lose("Destroyed".into());
        assert_eq!(log.loss.lost().as_deref(), Some("Unknown: driver reset"));
    }

    #[test]
    fn conversions_name_device_and_scope() {
        let e = to_backend("gpu0", "compiling", 64, Kind::OutOfMemory, String::new());
        assert!(matches!(e, BackendError::OutOfMemory { requested: 64, .. }));
        let e = to_backend("gpu0", "running", 0, Kind::Validation, "bad bind group".into());
        assert_eq!(e.to_string(), "gpu0: running failed: bad bind group");
    }
}
