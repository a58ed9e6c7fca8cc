//! Every `rlx` command that prints treats a failed write to stdout as an error: with stdout on
//! a full device (/dev/full) or a pipe whose reader is gone, the command exits 1 with one line
//! on stderr naming stdout and the cause, and never panics.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Stdio};

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../rlx-models/tests/fixtures")
}

/// The commands under test: each prints its result on stdout and runs in well under a second
/// on the CPU (embed and similarity need the cached all-MiniLM model, so they are absent).
fn commands() -> Vec<Vec<String>> {
    let llama = fixtures().join("decoders/llama");
    let llama = llama.to_str().unwrap();
    let gguf = fixtures().join("gguf_decoders/llama.f32.gguf");
    let gguf = gguf.to_str().unwrap();
    let words = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
    vec![
        words("devices"),
        words("demo --device cpu"),
        words("demo --device cpu --dump"),
        words("bench --device cpu --iters 1 --tiny-iters 1 --warmup 0 tiny"),
        words(&format!("generate --model {llama} --device cpu --prompt-ids 1,2 --max-tokens 3")),
        words(&format!("generate --model {gguf} --device cpu --max-tokens 2 hello")),
    ]
}

/// Runs `rlx args` with `stdout`; asserts exit code 1 and the one-line error containing `says`.
fn fails_cleanly(args: &[String], stdout: Stdio, says: &str) {
    let cache = std::env::temp_dir().join(format!("rlx-stdout-cli-cache-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_rlx"))
        .args(args)
        .env_remove("RLX_DEVICE")
        .env("XDG_CACHE_HOME", cache)
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "rlx {}: {stderr}", args.join(" "));
    assert!(!stderr.contains("panicked"), "rlx {}: {stderr}", args.join(" "));
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors, [format!("error: writing to stdout: {says}")], "rlx {}: {stderr}", args.join(" "));
}

#[test]
fn a_full_stdout_is_an_error() {
    if !Path::new("/dev/full").exists() {
        eprintln!("no /dev/full here: nothing to test");
        return;
    }
    for args in commands() {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        fails_cleanly(&args, Stdio::from(full), "no space left on the device (disk full)");
    }
}

#[test]
fn a_closed_pipe_is_an_error() {
    for args in commands() {
        // The reading end is closed before the command starts: its first write fails.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        fails_cleanly(&args, Stdio::from(writer), "the reader closed it (broken pipe)");
    }
}
