//! `rlx generate`'s sampling defaults: generation_config.json's do_sample, temperature, top_k,
//! top_p and repetition_penalty apply unless a flag overrides them, as in transformers; a GGUF
//! file is greedy unless the flags sample. Each run says on stderr what is in effect.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn rlx(args: &[&str]) -> Output {
    let cache = std::env::temp_dir().join(format!("rlx-sampling-cli-cache-{}", std::process::id()));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rlx"));
    cmd.args(args).env_remove("RLX_DEVICE").env("XDG_CACHE_HOME", cache);
    cmd.output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../rlx-models/tests/fixtures")
}

/// A copy of the tiny llama fixture whose generation_config.json is `config`.
fn llama_with(test: &str, config: &str) -> PathBuf {
    let src = fixtures().join("decoders/llama");
    let dir = std::env::temp_dir().join(format!("rlx-sampling-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["config.json", "model.safetensors"] {
        std::fs::copy(src.join(name), dir.join(name)).unwrap();
    }
    std::fs::write(dir.join("generation_config.json"), config).unwrap();
    dir
}

/// Runs `rlx generate` of 10 tokens after ids 5,9,2 on the CPU with `extra` flags; asserts
/// success and returns (stdout, stderr).
fn generate(model: &Path, extra: &[&str]) -> (String, String) {
    let mut args = vec!["generate", "--model", model.to_str().unwrap(), "--device", "cpu", "--ignore-eos"];
    args.extend(["--max-tokens", "10", "--prompt-ids", "5,9,2"]);
    args.extend(extra);
    let out = rlx(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    (text(&out.stdout).trim().to_string(), text(&out.stderr))
}

/// A generation_config.json that samples gives exactly the tokens of the same values given
/// as flags, and says where they came from.
#[test]
fn a_generation_config_that_samples_applies_without_flags() {
    let plain = llama_with("plain", r#"{"eos_token_id": 2}"#);
    let (want, stderr) =
        generate(&plain, &["--temperature", "0.9", "--top-k", "40", "--top-p", "0.95", "--seed", "3"]);
    assert!(
        stderr.contains("temperature 0.9 (--temperature), top_k 40 (--top-k), top_p 0.95 (--top-p)"),
        "{stderr}"
    );
    let sampling = llama_with(
        "samples",
        r#"{"eos_token_id": 2, "do_sample": true, "temperature": 0.9, "top_k": 40, "top_p": 0.95}"#,
    );
    let (got, stderr) = generate(&sampling, &["--seed", "3"]);
    assert_eq!(got, want);
    assert!(stderr.contains("sampling (do_sample true in"), "{stderr}");
    assert!(
        stderr.contains("temperature 0.9 (generation_config.json), top_k 40 (generation_config.json)"),
        "{stderr}"
    );
    assert!(stderr.contains("sampled, seed 3"), "{stderr}");
    // --top-k alone is fine when the file samples, and it overrides the file's.
    let (got, stderr) = generate(&sampling, &["--seed", "3", "--top-k", "1"]);
    assert!(stderr.contains("top_k 1 (--top-k)"), "{stderr}");
    // top_k 1 is the argmax: the greedy tokens.
    let (greedy, _) = generate(&plain, &[]);
    assert_eq!(got, greedy);
    // --temperature 0 overrides do_sample: greedy.
    let (got, stderr) = generate(&sampling, &["--temperature", "0"]);
    assert_eq!(got, greedy);
    assert!(stderr.contains("greedy (--temperature 0)"), "{stderr}");
}

/// do_sample false (or absent) is greedy whatever the file's temperature says, as in
/// transformers; sampling flags are then refused with the reason.
#[test]
fn do_sample_false_is_greedy_whatever_the_temperature() {
    let plain = llama_with("plain2", r#"{"eos_token_id": 2}"#);
    let (greedy, stderr) = generate(&plain, &[]);
    assert!(stderr.contains("greedy (no do_sample in"), "{stderr}");
    let off = llama_with("off", r#"{"do_sample": false, "temperature": 0.6, "top_p": 0.9}"#);
    let (got, stderr) = generate(&off, &[]);
    assert_eq!(got, greedy);
    assert!(stderr.contains("greedy (do_sample false in"), "{stderr}");
    let m = off.to_str().unwrap();
    let out = rlx(&["generate", "--model", m, "--device", "cpu", "--prompt-ids", "1,2", "--top-k", "5"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("do_sample false") && stderr.contains("--temperature T"), "{stderr}");
    // The file's repetition penalty applies to greedy decoding too: another continuation.
    let penalised = llama_with("penalty", r#"{"do_sample": false, "repetition_penalty": 5.0}"#);
    let (got, stderr) = generate(&penalised, &[]);
    assert!(stderr.contains("repetition_penalty 5 (generation_config.json)"), "{stderr}");
    assert_ne!(got, greedy, "a penalty of 5 changes the greedy tokens of this fixture");
    let (got, _) = generate(&penalised, &["--repetition-penalty", "1"]);
    assert_eq!(got, greedy);
}

/// A file that samples at temperature 0 is an error that says how to choose.
#[test]
fn a_file_sampling_at_temperature_zero_is_an_error() {
    let bad = llama_with("t0", r#"{"do_sample": true, "temperature": 0.0}"#);
    let out = rlx(&["generate", "--model", bad.to_str().unwrap(), "--device", "cpu", "--prompt-ids", "1,2"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("generation_config.json") && stderr.contains("must be > 0"), "{stderr}");
    let bad = llama_with("badtype", r#"{"do_sample": "yes"}"#);
    let out = rlx(&["generate", "--model", bad.to_str().unwrap(), "--device", "cpu", "--prompt-ids", "1,2"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("do_sample is \"yes\""), "{}", text(&out.stderr));
}

/// A GGUF file has no generation config: greedy, and the flags still sample.
#[test]
fn a_gguf_file_is_greedy_unless_the_flags_sample() {
    let model = fixtures().join("gguf_decoders/llama.f32.gguf");
    let (_, stderr) = generate(&model, &[]);
    assert!(stderr.contains("greedy (a GGUF file has no generation_config.json)"), "{stderr}");
    let (_, stderr) = generate(&model, &["--temperature", "0.8"]);
    assert!(
        stderr.contains("sampling (--temperature 0.8)") && stderr.contains("top_k 50 (default)"),
        "{stderr}"
    );
}

/// `rlx generate --help` says what the command does: greedy or sampled, from checkpoints
/// (MoE included) or GGUF files, and where the sampling defaults come from.
#[test]
fn the_help_of_generate_says_what_it_does() {
    let out = rlx(&["generate", "--help"]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    for needle in ["GGUF", "MoE", "greedy", "sampled", "generation_config.json", "--temperature"] {
        assert!(help.contains(needle), "no '{needle}' in:\n{help}");
    }
    assert!(!help.contains("greedily,"), "{help}");
    let out = rlx(&["--help"]);
    assert!(text(&out.stdout).contains("Continue a prompt with a causal LM"), "{}", text(&out.stdout));
}
