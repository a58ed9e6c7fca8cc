//! What the `parity` and `diff` binaries share besides their options: opening a device with a
//! message that names it, and the exit status (0 every case passed, 1 some failed, 2 bad usage
//! or a device that cannot be opened; clap itself exits 2 on bad usage).

use rlx_runtime::{Device, Session};
use std::process::ExitCode;

/// Bad usage, an unreadable spec, or a device that cannot be opened.
pub fn usage_error() -> ExitCode {
    ExitCode::from(2)
}

/// 0 when nothing failed, else 1.
pub fn exit_status(failed: usize) -> ExitCode {
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// A session on `device`, or the message `<bin>: cannot open <device>: <why>`.
pub fn open(bin: &str, device: Device) -> Result<Session, String> {
    Session::new(device).map_err(|e| format!("{bin}: cannot open {device}: {e}"))
}
