//! `rlx serve` as a user runs it: refusals before anything starts, and a server on the tiny
//! Llama fixture that answers /health and stops cleanly on SIGTERM. Binds 127.0.0.1 with a
//! port the OS picks; every wait is bounded.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::process::{Command, Stdio};
use std::time::Duration;

fn rlx() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rlx"));
    cmd.env("XDG_RUNTIME_DIR", "/tmp").env_remove("RLX_API_KEY");
    cmd
}

#[test]
fn serve_refuses_no_model_and_an_unknown_name() {
    let out = rlx().args(["serve", "--device", "cpu", "--port", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("give --model") && stderr.contains("--embedding-model"), "{stderr}");
    let out = rlx().args(["serve", "--model", "no-such-model-anywhere"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no-such-model-anywhere") && stderr.contains("hub repo id"), "{stderr}");
}

/// A GET over a plain TCP connection; returns the status line and body.
fn get(addr: &str, path: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn serve_answers_health_and_stops_on_sigterm() {
    let model =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../rlx-models/tests/fixtures/decoders/llama");
    let tokenizer = model.join("../../gguf_decoders/llama.tokenizer.json");
    let dir = std::env::temp_dir().join(format!("rlx-serve-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["config.json", "generation_config.json", "model.safetensors"] {
        std::fs::copy(model.join(name), dir.join(name)).unwrap();
    }
    std::fs::copy(tokenizer, dir.join("tokenizer.json")).unwrap();
    let mut child = rlx()
        .args(["serve", "--model", dir.to_str().unwrap(), "--device", "cpu", "--port", "0"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut addr = None;
    for line in lines.by_ref().take(50) {
        let line = line.unwrap();
        if let Some(rest) = line.split("listening on http://").nth(1) {
            addr = rest.split_whitespace().next().map(String::from);
        }
        if line.contains("ready on") {
            break;
        }
    }
    let addr = addr.expect("the address line");
    let health = get(&addr, "/health");
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    let models = get(&addr, "/v1/models");
    assert!(
        models.contains(&format!("\"id\":\"{}\"", dir.file_name().unwrap().to_str().unwrap())),
        "{models}"
    );
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let rest: Vec<String> = lines.take(50).map(|l| l.unwrap()).collect();
    assert!(rest.iter().any(|l| l.contains("serve: stopped")), "{rest:?}");
    assert!(child.wait().unwrap().success());
}
