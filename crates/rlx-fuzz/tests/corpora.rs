//! Runs every seed corpus file (`fuzz/corpus/<target>/`) and every saved crash
//! (`fuzz/regressions/<target>/`) through the entry points the cargo-fuzz targets call, so the
//! ordinary test run (stable, no cargo-fuzz) keeps them passing. A panic fails the test.

// Test code: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut v: Vec<PathBuf> =
        entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect();
    v.sort();
    v
}

fn run_target(name: &str) {
    let (_, entry) = rlx_fuzz::TARGETS.iter().find(|(n, _)| *n == name).unwrap();
    let corpus = files(&fuzz_dir().join("corpus").join(name));
    assert!(!corpus.is_empty(), "fuzz/corpus/{name} has no seeds");
    for path in corpus.iter().chain(&files(&fuzz_dir().join("regressions").join(name))) {
        let data = std::fs::read(path).unwrap();
        eprintln!("{name}: {}", path.display());
        entry(&data);
    }
    // A few hundred deterministic pseudo-random inputs too, built on each seed.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    for seed in &corpus {
        let base = std::fs::read(seed).unwrap();
        for _ in 0..20 {
            let mut data = base.clone();
            for _ in 0..4 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                if let Some(b) = data.get_mut((state as usize) % base.len().max(1)) {
                    *b = (state >> 32) as u8;
                }
            }
            entry(&data);
        }
    }
}

#[test]
fn graph_build() {
    run_target("graph_build");
}

#[test]
fn optimize_plan() {
    run_target("optimize_plan");
}

#[test]
fn model_dir() {
    run_target("model_dir");
}

#[test]
fn gguf() {
    run_target("gguf");
}

#[test]
fn schedule() {
    run_target("schedule");
}

#[test]
fn every_target_has_a_fuzz_target_file() {
    for (name, _) in rlx_fuzz::TARGETS {
        let file = fuzz_dir().join("fuzz_targets").join(format!("{name}.rs"));
        assert!(file.is_file(), "{} is missing", file.display());
    }
}

/// The seeds reach deep: graph seeds build graphs that verify and lower for lavapipe, model
/// seeds load. A seed that stops doing so after a decoder change is stale (fuzz/seeds.py).
#[test]
fn seeds_reach_deep() {
    let limits = rlx_gpu::GpuLimits::lavapipe();
    for path in files(&fuzz_dir().join("corpus/graph_build")) {
        let data = std::fs::read(&path).unwrap();
        let g =
            rlx_fuzz::graph_gen::build(&data).unwrap_or_else(|| panic!("{} builds nothing", path.display()));
        assert!(g.len() >= 3, "{}: {} nodes", path.display(), g.len());
        rlx_ir::verify(&g).unwrap();
        assert!(rlx_fuzz::pipeline::lowered(&data, &limits).is_some(), "{} does not lower", path.display());
    }
    for path in files(&fuzz_dir().join("corpus/model_dir")) {
        assert!(
            rlx_fuzz::models::model_dir(&std::fs::read(&path).unwrap()),
            "{} does not load",
            path.display()
        );
    }
    // Every GGUF seed parses and its tensors are read; the tiny models' decoder configs map
    // (the weights of these parser fixtures do not make a full decoder; model_dir's llama seed
    // covers the decoder loader).
    for path in files(&fuzz_dir().join("corpus/gguf")) {
        let file = rlx_models::GgufFile::open(&path).unwrap();
        assert!(!file.tensors().is_empty(), "{}", path.display());
        if path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("tiny_")) {
            rlx_models::gguf_config(&file).unwrap();
        }
        rlx_fuzz::gguf(&std::fs::read(&path).unwrap());
    }
}
