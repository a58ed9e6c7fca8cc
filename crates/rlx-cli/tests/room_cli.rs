//! Huge requests are errors or run sized by what they use, never an allocation abort:
//! `rlx generate --max-tokens 100000000` on a GGUF file whose context is 2³¹, and
//! `rlx bench --matmul-size 100000000`.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output};

fn rlx(args: &[&str]) -> Output {
    let cache = std::env::temp_dir().join(format!("rlx-room-cli-cache-{}", std::process::id()));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rlx"));
    cmd.args(args).env_remove("RLX_DEVICE").env("XDG_CACHE_HOME", cache);
    cmd.output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Sets the u32 metadata value of `key` in GGUF bytes.
fn set_u32(bytes: &mut [u8], key: &str, value: u32) {
    let key = key.as_bytes();
    let at = bytes.windows(key.len()).position(|w| w == key).unwrap() + key.len();
    assert_eq!(bytes[at..at + 4], 4u32.to_le_bytes(), "{} is a u32", String::from_utf8_lossy(key));
    bytes[at + 4..at + 8].copy_from_slice(&value.to_le_bytes());
}

/// 10⁸ tokens asked of a model whose context is 2³¹: nothing is sized for 10⁸ positions up
/// front. The end-of-sequence id is made the first greedy token, so the run stops after one
/// token, having reserved a small cache, and succeeds.
#[test]
fn max_tokens_far_past_what_is_used_reserves_what_is_used() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../rlx-models/tests/fixtures/gguf_decoders/llama.f32.gguf");
    let mut bytes = std::fs::read(src).unwrap();
    set_u32(&mut bytes, "llama.context_length", 1 << 31);
    let path = std::env::temp_dir().join(format!("rlx-room-cli-{}.gguf", std::process::id()));
    std::fs::write(&path, &bytes).unwrap();
    let m = path.to_str().unwrap();
    let out = rlx(&["generate", "--model", m, "--device", "cpu", "--max-tokens", "1", "--prompt-ids", "1,2"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let first: u32 = text(&out.stdout).trim().parse().unwrap();
    set_u32(&mut bytes, "tokenizer.ggml.eos_token_id", first);
    std::fs::write(&path, &bytes).unwrap();
    let out = rlx(&[
        "generate",
        "--model",
        m,
        "--device",
        "cpu",
        "--max-tokens",
        "100000000",
        "--prompt-ids",
        "1,2",
    ]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("1 generated") && stderr.contains("stopped at end-of-sequence"), "{stderr}");
    // Past the context: an error before the model runs.
    set_u32(&mut bytes, "llama.context_length", 64);
    std::fs::write(&path, &bytes).unwrap();
    let out = rlx(&[
        "generate",
        "--model",
        m,
        "--device",
        "cpu",
        "--max-tokens",
        "100000000",
        "--prompt-ids",
        "1,2",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("leaves room for 63 new ones within max_position_embeddings 64"), "{stderr}");
    std::fs::remove_file(&path).unwrap();
}

/// A matmul of 10⁸ × 10⁸ is refused before its inputs are made, naming the flag to lower.
#[test]
fn a_matmul_larger_than_the_machine_is_an_error() {
    for extra in [&["--matmul-size", "100000000"][..], &["--matmul-size", "100000000", "--quant", "q8_0"]] {
        let mut args = vec!["bench", "--device", "cpu", "--iters", "1", "--warmup", "0"];
        args.extend(extra);
        args.push("matmul");
        let out = rlx(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("GiB of memory: lower --matmul-size"), "{stderr}");
        assert!(!stderr.contains("memory allocation") && !stderr.contains("panicked"), "{stderr}");
    }
}
