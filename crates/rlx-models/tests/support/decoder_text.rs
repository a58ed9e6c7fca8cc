//! The tiny decoder fixtures trained on a text, shared by `decoder_train.rs` and
//! `decoder_lora.rs`: scratch folders, a word-level tokenizer over `t0` … `t{VOCAB-1}`, a copy
//! of a fixture with it, a learnable text, and the next-token loss computed on the host.

use rlx_models::Decoder;
use std::path::{Path, PathBuf};

pub const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/decoders");
pub const VOCAB: usize = 256;
pub const SEQ: usize = 16;
pub const BATCH: usize = 4;

/// An empty scratch folder for the test tagged `tag` (per process).
pub fn tmp(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rlx-decoder-text-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A word-level tokenizer.json over the words `t0` … `t{VOCAB-1}`.
pub fn write_tokenizer(dir: &Path) {
    let vocab: serde_json::Map<String, serde_json::Value> =
        (0..VOCAB).map(|i| (format!("t{i}"), serde_json::json!(i))).collect();
    let tokenizer = serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
        "normalizer": null, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": null,
        "decoder": null, "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "t0"}
    });
    std::fs::write(dir.join("tokenizer.json"), tokenizer.to_string()).unwrap();
}

/// A copy of the fixture `name` (config and weights) with the word-level tokenizer.
pub fn model_dir(name: &str, tag: &str) -> PathBuf {
    let dir = tmp(tag);
    for entry in std::fs::read_dir(Path::new(FIXTURE).join(name)).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
    }
    write_tokenizer(&dir);
    dir
}

/// `n` tokens of a pattern of period 23 (a text the model can learn), as text.
pub fn text(n: usize) -> String {
    (0..n).map(|i| format!("t{}", (i * 7 + 3) % 23 + 10)).collect::<Vec<_>>().join(" ")
}

/// The mean next-token cross-entropy of `batch`'s windows, from `model`'s logits (f64 host
/// log-softmax).
pub fn host_loss(model: &mut Decoder, batch: &[i32]) -> f64 {
    let (mut total, mut count) = (0.0, 0);
    for w in batch.chunks_exact(SEQ + 1) {
        let logits = model.logits(&w[..SEQ]).unwrap();
        for (row, &target) in logits.chunks_exact(VOCAB).zip(&w[1..]) {
            let m = row.iter().map(|&x| x as f64).fold(f64::NEG_INFINITY, f64::max);
            let lse = m + row.iter().map(|&x| (x as f64 - m).exp()).sum::<f64>().ln();
            total += lse - row[target as usize] as f64;
            count += 1;
        }
    }
    total / count as f64
}
