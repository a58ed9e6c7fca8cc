//! Corrupt GGUF files: the fixtures with bytes cut off or overwritten. Each must give its own
//! specific `GgufError` naming the key or tensor, never a panic; random damage must give an
//! error or a file whose every tensor still reads.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rlx_models::gguf::GgufError;
use rlx_models::{GgufFile, ModelError};
use rlx_test_support::Rng;
use std::path::PathBuf;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gguf").join(name)).unwrap()
}

/// A scratch file per test (tests run in parallel threads), removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir(dir); // only once the last test's file is gone
        }
    }
}

impl std::ops::Deref for Scratch {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

fn scratch(test: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("rlx-gguf-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir.join(format!("{test}.gguf")))
}

/// Opens `bytes` written to `path`; on success reads every tensor too (which must not fail).
fn open(path: &PathBuf, bytes: &[u8]) -> Result<GgufFile, GgufError> {
    std::fs::write(path, bytes).unwrap();
    match GgufFile::open(path) {
        Ok(f) => {
            for t in f.tensors() {
                let values = f.tensor(&t.name).unwrap().to_f32().unwrap();
                assert_eq!(values.len(), t.n_elems());
            }
            Ok(f)
        }
        Err(ModelError::Gguf { path: p, source }) => {
            assert_eq!(&p, path);
            let msg = ModelError::Gguf { path: p, source: source.clone() }.to_string();
            assert!(msg.starts_with(&path.display().to_string()), "the message names the file: {msg}");
            Err(source)
        }
        Err(other) => panic!("not a GGUF error: {other}"),
    }
}

/// Where `needle` starts in `bytes` (it must be there once).
fn find(bytes: &[u8], needle: &str) -> usize {
    let n = needle.as_bytes();
    let at: Vec<usize> =
        bytes.windows(n.len()).enumerate().filter(|(_, w)| *w == n).map(|(i, _)| i).collect();
    assert_eq!(at.len(), 1, "'{needle}' occurs {} times", at.len());
    at[0]
}

/// `bytes` with `value` written little-endian at `at`.
fn with(bytes: &[u8], at: usize, value: &[u8]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    b[at..at + value.len()].copy_from_slice(value);
    b
}

/// Offsets of a tensor info's fields: (n_dims, first dim, type, offset), for a tensor of `rank`.
fn tensor_fields(bytes: &[u8], name: &str, rank: usize) -> (usize, usize, usize, usize) {
    let n_dims = find(bytes, name) + name.len();
    (n_dims, n_dims + 4, n_dims + 4 + 8 * rank, n_dims + 8 + 8 * rank)
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = fixture("tiny_llama.gguf");
    let path = scratch("truncation");
    let whole = open(&path, &bytes).unwrap();
    let data_start = whole.data_offset();
    let data_end = whole.tensors().iter().map(|t| data_start + t.offset as usize + t.n_bytes).max().unwrap();
    drop(whole);
    for cut in 0..bytes.len() {
        match open(&path, &bytes[..cut]) {
            Err(GgufError::Truncated { at, len, .. }) if cut < data_start => {
                assert_eq!(len, cut);
                assert!(at <= cut, "cut {cut}: read at {at}");
            }
            // A count checked against the bytes left finds the file short before reading on.
            Err(GgufError::TooMany { left, .. }) if cut < data_start => assert!(left <= cut),
            Err(GgufError::DataPastEnd { len, .. }) if cut >= data_start && cut < data_end => {
                assert_eq!(len, cut)
            }
            Ok(_) if cut >= data_end => {} // only the padding after the last tensor is gone
            other => panic!("cut at {cut} of {} (data {data_start}..{data_end}): {other:?}", bytes.len()),
        }
    }
}

#[test]
fn header_damage() {
    let bytes = fixture("tiny_llama.gguf");
    let path = scratch("header");
    let e = |b: Vec<u8>| open(&path, &b).unwrap_err();
    assert!(matches!(e(with(&bytes, 0, b"GGML")), GgufError::BadMagic { .. }));
    assert_eq!(e(with(&bytes, 4, &1u32.to_le_bytes())), GgufError::Version { version: 1 });
    assert_eq!(e(with(&bytes, 4, &4u32.to_le_bytes())), GgufError::Version { version: 4 });
    assert_eq!(e(with(&bytes, 4, &3u32.to_be_bytes())), GgufError::BigEndian { version: 3 });
    let huge = (1u64 << 60).to_le_bytes();
    assert!(
        matches!(e(with(&bytes, 8, &huge)), GgufError::TooMany { ref what, .. } if what == "the tensor count")
    );
    assert!(
        matches!(e(with(&bytes, 16, &huge)), GgufError::TooMany { ref what, .. } if what == "the metadata count")
    );
    // The first key's length.
    let e1 = e(with(&bytes, 24, &(1u64 << 62).to_le_bytes()));
    assert!(matches!(e1, GgufError::Truncated { need, at: 32, .. } if need == 1 << 62), "{e1}");
    // More tensors than listed: the reader runs into the padding and data as tensor infos.
    let e2 = e(with(&bytes, 8, &9u64.to_le_bytes()));
    assert!(matches!(e2, GgufError::Truncated { ref what, .. } if what == "the name of tensor 8"), "{e2}");
}

#[test]
fn metadata_damage() {
    let bytes = fixture("tiny_llama.gguf");
    let path = scratch("metadata");
    let e = |b: Vec<u8>| open(&path, &b).unwrap_err();
    let huge = (1u64 << 60).to_le_bytes();

    // The value of tokenizer.ggml.model: type u32, then a string whose length we enlarge.
    let model = find(&bytes, "tokenizer.ggml.model") + "tokenizer.ggml.model".len();
    let e1 = e(with(&bytes, model + 4, &huge));
    assert!(
        matches!(e1, GgufError::Truncated { ref what, .. } if what.contains("'tokenizer.ggml.model'")),
        "{e1}"
    );
    assert_eq!(
        e(with(&bytes, model, &99u32.to_le_bytes())),
        GgufError::ValueType { key: "tokenizer.ggml.model".into(), id: 99 }
    );

    // tokenizer.ggml.tokens: type 9, element type 8, count.
    let tokens = find(&bytes, "tokenizer.ggml.tokens") + "tokenizer.ggml.tokens".len();
    let e2 = e(with(&bytes, tokens + 8, &huge));
    assert!(
        matches!(e2, GgufError::TooMany { ref what, count, .. } if what.contains("tokens") && count == 1 << 60),
        "{e2}"
    );
    assert_eq!(
        e(with(&bytes, tokens + 4, &77u32.to_le_bytes())),
        GgufError::ValueType { key: "tokenizer.ggml.tokens".into(), id: 77 }
    );
    // The first token's length.
    let e3 = e(with(&bytes, tokens + 16, &u64::MAX.to_le_bytes()));
    assert!(
        matches!(e3, GgufError::Truncated { ref what, .. } if what.contains("string 0 of metadata key 'tokenizer.ggml.tokens'")),
        "{e3}"
    );
    // A token that is not UTF-8.
    let e4 = e(with(&bytes, tokens + 24, &[0xff]));
    assert!(matches!(e4, GgufError::NotUtf8 { ref what, .. } if what.contains("string 0")), "{e4}");

    // rlx.test.false: type 7, then the byte.
    let flag = find(&bytes, "rlx.test.false") + "rlx.test.false".len();
    assert_eq!(e(with(&bytes, flag + 4, &[2])), GgufError::Bool { key: "rlx.test.false".into(), byte: 2 });
    // rlx.test.nested: type 9, element type 9, count 3, then the first inner array's type and count.
    let nested = find(&bytes, "rlx.test.nested") + "rlx.test.nested".len();
    let e5 = e(with(&bytes, nested + 20, &huge));
    assert!(matches!(e5, GgufError::TooMany { ref what, .. } if what.contains("rlx.test.nested")), "{e5}");
    // A key renamed to another key's name.
    let u8_key = find(&bytes, "rlx.test.u8");
    assert_eq!(
        e(with(&bytes, u8_key, b"rlx.test.i8")),
        GgufError::DuplicateKey { key: "rlx.test.i8".into() }
    );
    // A key that is not UTF-8.
    assert!(matches!(e(with(&bytes, u8_key, &[0xc3])), GgufError::NotUtf8 { .. }));
}

#[test]
fn tensor_info_damage() {
    let bytes = fixture("tiny_llama.gguf");
    let path = scratch("tensors");
    let e = |b: Vec<u8>| open(&path, &b).unwrap_err();
    let (n_dims, dim0, ty, offset) = tensor_fields(&bytes, "test.q4_k", 2);

    let e1 = e(with(&bytes, ty, &15u32.to_le_bytes()));
    assert_eq!(e1, GgufError::TensorType { tensor: "test.q4_k".into(), id: 15 });
    assert!(e1.to_string().contains("type 15 (ggml's Q8_K)"), "{e1}");
    let msg = ModelError::Gguf { path: path.clone(), source: e(with(&bytes, ty, &99u32.to_le_bytes())) }
        .to_string();
    assert_eq!(
        msg,
        format!(
            "{}: unknown GGUF tensor type 99 for tensor 'test.q4_k'; rlx reads F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M, IQ4_NL and IQ4_XS",
            path.display()
        )
    );
    assert_eq!(
        e(with(&bytes, n_dims, &7u32.to_le_bytes())),
        GgufError::Rank { tensor: "test.q4_k".into(), n_dims: 7, max: 4 }
    );
    // Rows of 100 elements are not whole Q4_K blocks.
    let e2 = e(with(&bytes, dim0, &100u64.to_le_bytes()));
    assert!(matches!(e2, GgufError::PartialBlock { row: 100, block: 256, .. }), "{e2}");
    // Dims whose product overflows, and a product that fits but whose data is not there.
    let big = (1u64 << 40).to_le_bytes();
    let e3 = e(with(&with(&bytes, dim0, &(1u64 << 40 << 8).to_le_bytes()), dim0 + 8, &big));
    assert!(matches!(e3, GgufError::ShapeOverflow { ref tensor, .. } if tensor == "test.q4_k"), "{e3}");
    let e4 = e(with(&bytes, dim0 + 8, &big));
    assert!(matches!(e4, GgufError::DataPastEnd { ref tensor, .. } if tensor == "test.q4_k"), "{e4}");

    // Offsets: misaligned, past the end, and onto the neighbour's data.
    let at = u64::from_le_bytes(bytes[offset..offset + 8].try_into().unwrap());
    let e5 = e(with(&bytes, offset, &(at + 4).to_le_bytes()));
    assert_eq!(e5, GgufError::Misaligned { tensor: "test.q4_k".into(), offset: at + 4, alignment: 32 });
    let e6 = e(with(&bytes, offset, &(1u64 << 40).to_le_bytes()));
    assert!(matches!(e6, GgufError::DataPastEnd { offset, .. } if offset == 1 << 40), "{e6}");
    let e7 = e(with(&bytes, offset, &(u64::MAX - 31).to_le_bytes()));
    assert!(matches!(e7, GgufError::DataPastEnd { .. }), "{e7}");
    let e8 = e(with(&bytes, offset, &(at + 32).to_le_bytes()));
    assert!(matches!(e8, GgufError::Overlap { .. }), "{e8}");
    // A tensor renamed to another's name.
    assert_eq!(
        e(with(&bytes, find(&bytes, "test.q4_k"), b"test.q5_k")),
        GgufError::DuplicateTensor { name: "test.q5_k".into() }
    );
}

#[test]
fn alignment_damage() {
    let bytes = fixture("tiny_qwen3.gguf");
    let path = scratch("alignment");
    let value = find(&bytes, "general.alignment") + "general.alignment".len() + 4;
    for bad in [0u32, 48, 3] {
        let e = open(&path, &with(&bytes, value, &bad.to_le_bytes())).unwrap_err();
        assert_eq!(e, GgufError::Alignment { found: format!("u32 {bad}") });
    }
    // A smaller power of two moves the data section: the tensors no longer lie where they were
    // written, which the reader cannot tell, but it must still read in bounds or refuse.
    let _ = open(&path, &with(&bytes, value, &16u32.to_le_bytes()));
}

#[test]
fn random_damage_never_panics() {
    let bytes = fixture("tiny_llama.gguf");
    let path = scratch("random");
    let header_end = open(&path, &bytes).unwrap().data_offset();
    let mut rng = Rng::new(0x6767_7566);
    let (mut ok, mut refused) = (0, 0);
    for _ in 0..3000 {
        let mut b = bytes.clone();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(header_end as u64) as usize;
            b[at] = match rng.below(4) {
                0 => 0xff,
                1 => 0,
                2 => b[at] ^ (1 << rng.below(8)),
                _ => rng.below(256) as u8,
            };
        }
        match open(&path, &b) {
            Ok(_) => ok += 1,
            Err(_) => refused += 1,
        }
    }
    assert!(refused > 0 && ok > 0, "{ok} opened, {refused} refused");
}

#[test]
fn config_damage() {
    let bytes = fixture("tiny_llama.gguf");
    let path = scratch("config");
    let config_err = |b: Vec<u8>| match rlx_models::gguf_config(&open(&path, &b).unwrap()) {
        Err(ModelError::Gguf { source, .. }) => source,
        other => panic!("expected a GGUF error, got {other:?}"),
    };
    let arch = find(&bytes, "llama\x0c"); // the value of general.architecture, before general.name's length
    let e = config_err(with(&bytes, arch, b"mamba"));
    assert_eq!(
        e,
        GgufError::Architecture { arch: "mamba".into(), known: "llama, qwen2, qwen3, qwen3moe".into() }
    );
    let eps = find(&bytes, "layer_norm_rms_epsilon");
    let e = config_err(with(&bytes, eps, b"layer_norm_rms_epsilom"));
    assert_eq!(e, GgufError::MissingKey { key: "llama.attention.layer_norm_rms_epsilon".into() });
    let kv = find(&bytes, "head_count_kv") + "head_count_kv".len() + 4;
    let e = config_err(with(&bytes, kv, &3u32.to_le_bytes()));
    assert!(
        matches!(e, GgufError::BadValue { ref key, ref reason, .. }
        if key == "llama.attention.head_count_kv" && reason == "must divide the head count 4"),
        "{e}"
    );
    let blocks = find(&bytes, "llama.block_count") + "llama.block_count".len() + 4;
    let e = config_err(with(&bytes, blocks, &0u32.to_le_bytes()));
    assert!(matches!(e, GgufError::BadValue { ref key, .. } if key == "llama.block_count"), "{e}");
    // Found by fuzzing (fuzz/regressions/gguf): a huge block count made the loader build a graph
    // and per-layer tables for hours; it is refused past MAX_LAYERS.
    let e = config_err(with(&bytes, blocks, &u32::MAX.to_le_bytes()));
    assert!(
        matches!(e, GgufError::BadValue { ref key, ref reason, .. }
        if key == "llama.block_count" && reason.contains("4096")),
        "{e}"
    );
    let theta = find(&bytes, "rope.freq_base") + "rope.freq_base".len() + 4;
    let e = config_err(with(&bytes, theta, &f32::NAN.to_le_bytes()));
    assert!(matches!(e, GgufError::BadValue { ref key, .. } if key == "llama.rope.freq_base"), "{e}");
    // An f32 where an integer belongs: the type found is named.
    let ctx = find(&bytes, "llama.context_length") + "llama.context_length".len();
    let e = config_err(with(&bytes, ctx, &6u32.to_le_bytes()));
    assert!(
        matches!(e, GgufError::WrongType { expected: "usize", ref found, .. } if found.starts_with("f32")),
        "{e}"
    );
}
