//! rlx tokenizes as llama.cpp does: for each `tokenizer.ggml.pre` that rlx accepts, and for
//! SentencePiece (`llama`), the ids of a corpus of digits, punctuation, whitespace runs, CJK,
//! emoji and mixed scripts equal those that llama.cpp's `llama-tokenize` printed for the same
//! vocabulary-only GGUF file. The files and ids are in `fixtures/tokenizers/`, written by its
//! `generate.py` (which runs `llama-tokenize`); CI has no llama.cpp, so the fixture is the oracle.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rlx_models::{gguf_tokenizer, GgufFile};
use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tokenizers")
}

#[derive(serde::Deserialize)]
struct Expected {
    corpus: Vec<String>,
    files: std::collections::BTreeMap<String, Vec<Vec<u32>>>,
}

fn expected() -> Expected {
    let text = std::fs::read_to_string(dir().join("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn ids_equal_llama_tokenize() {
    let expected = expected();
    let mut failures = Vec::new();
    for (name, all_ids) in &expected.files {
        let tok = gguf_tokenizer(&GgufFile::open(dir().join(name)).unwrap()).unwrap();
        assert_eq!(all_ids.len(), expected.corpus.len(), "{name}");
        let mut matches = 0;
        for (text, ids) in expected.corpus.iter().zip(all_ids) {
            let ours = tok.encode(text.as_str(), true).unwrap();
            if ours.get_ids() == ids.as_slice() {
                matches += 1;
            } else {
                failures
                    .push(format!("{name}: {text:?}\n  llama.cpp {ids:?}\n  rlx       {:?}", ours.get_ids()));
            }
        }
        eprintln!("{name}: {matches} of {} strings as llama-tokenize", expected.corpus.len());
    }
    assert!(failures.is_empty(), "{} strings differ:\n{}", failures.len(), failures.join("\n"));
}

/// Every accepted BPE pre-tokenizer has a fixture file.
#[test]
fn every_accepted_pre_tokenizer_is_covered() {
    let expected = expected();
    for pre in &rlx_models::gguf::pretokenize::PRE_TOKENIZERS {
        let name = format!("bpe-{}.gguf", pre.name);
        assert!(expected.files.contains_key(&name), "no fixture for {}", pre.name);
    }
    assert!(expected.files.contains_key("spm-llama.gguf"));
}

/// The example: `default` splits digits and punctuation first.
#[test]
fn default_splits_digits_first() {
    let tok = gguf_tokenizer(&GgufFile::open(dir().join("bpe-default.gguf")).unwrap()).unwrap();
    let gpt2 = gguf_tokenizer(&GgufFile::open(dir().join("bpe-gpt-2.gguf")).unwrap()).unwrap();
    let text = "0123 hello world";
    let a = tok.encode(text, true).unwrap();
    let b = gpt2.encode(text, true).unwrap();
    assert_ne!(a.get_ids(), b.get_ids());
    assert_eq!(tok.decode(a.get_ids(), false).unwrap(), text);
}
