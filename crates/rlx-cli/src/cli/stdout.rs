//! The checked stdout every `rlx` command prints its results through: a write that fails (a
//! closed pipe, a full disk) is an error naming stdout and the cause, which the command returns
//! (non-zero exit, one line on stderr), never a panic as `println!` gives.

use std::io::{self, Write};

/// stdout, locked, with every write and flush error given the context "writing to stdout".
pub struct Stdout(io::StdoutLock<'static>);

/// The process's stdout for checked writes (`writeln!(out, …)?`).
pub fn stdout() -> Stdout {
    Stdout(io::stdout().lock())
}

/// `e` with what failed said first; the two causes users meet are named in words.
pub fn context(e: io::Error) -> io::Error {
    let why = match e.kind() {
        io::ErrorKind::BrokenPipe => "the reader closed it (broken pipe)".to_string(),
        io::ErrorKind::StorageFull => "no space left on the device (disk full)".to_string(),
        _ => e.to_string(),
    };
    io::Error::new(e.kind(), format!("writing to stdout: {why}"))
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf).map_err(context)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.write_all(buf).map_err(context)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush().map_err(context)
    }
}

#[cfg(test)]
mod tests {
    // Test helpers unwrap and panic: a failure is the point.
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::context;
    use std::io;

    #[test]
    fn errors_name_stdout_and_the_cause() {
        let e = context(io::Error::from_raw_os_error(28));
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        assert_eq!(e.to_string(), "writing to stdout: no space left on the device (disk full)");
        let e = context(io::Error::from(io::ErrorKind::BrokenPipe));
        assert_eq!(e.to_string(), "writing to stdout: the reader closed it (broken pipe)");
    }
}
