//! Smoke tests of the built `rlx` binary.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Output};

/// A cache directory of this test process's own: `devices --calibrate` and `Auto` write
/// calibrations there, never to the user's ~/.cache.
fn cache_dir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("rlx-cli-test-cache-{}", std::process::id()))
}

fn rlx(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rlx"));
    cmd.args(args).env_remove("RLX_DEVICE").env("XDG_CACHE_HOME", cache_dir());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn devices_calibrate_writes_the_cache_it_is_given() {
    let out = rlx(&["devices", "--calibrate"], &[]);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let file = cache_dir().join("rlx").join("calibration.json");
    let json = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    assert!(json.contains("\"cpu\""), "{json}");
    // The listing after calibrating shows the measurement.
    let stdout = text(&out.stdout);
    assert!(stdout.contains("GFLOP/s"), "{stdout}");
    assert!(stdout.contains(&format!("calibration cache: {}", file.display())), "{stdout}");
    // stderr is not a terminal here: no progress bar redraws in the captured text.
    assert!(!text(&out.stderr).contains('\r'), "{}", text(&out.stderr));
}

#[test]
fn devices_lists_every_backend() {
    let out = rlx(&["devices"], &[]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    for needle in ["cpu", "gpu (wgpu)", "vulkan", "logical threads", "native ops"] {
        assert!(stdout.contains(needle), "missing '{needle}' in:\n{stdout}");
    }
    let cpu_row = stdout.lines().find(|l| l.starts_with("cpu ")).unwrap();
    assert!(cpu_row.contains("yes"), "{cpu_row}");
    let vulkan_row = stdout.lines().find(|l| l.starts_with("vulkan ")).unwrap();
    // Whether Vulkan is available depends on the machine (lavapipe counts); either way the
    // output must say what it found.
    if vulkan_row.contains(" yes ") {
        for needle in [
            "adapter",
            "driver",
            "Vulkan API",
            "maxStorageBufferRange",
            "subgroup size",
            "cooperative matrix",
        ] {
            assert!(stdout.contains(needle), "missing '{needle}' in:\n{stdout}");
        }
        // Auto takes a real GPU, never a CPU implementation such as lavapipe.
        let cpu_adapter = stdout.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["type", "Cpu"]);
        if cpu_adapter {
            assert!(stdout.contains("auto selects: cpu"), "{stdout}");
        }
    } else {
        assert!(vulkan_row.contains(" no "), "{vulkan_row}");
        assert!(stdout.contains("auto selects: cpu"), "{stdout}");
    }
}

#[test]
fn demo_prints_probabilities_that_sum_to_one() {
    let out = rlx(&["demo"], &[]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    // Auto: a Vulkan GPU where there is one, else the CPU.
    assert!(stdout.contains("on cpu") || stdout.contains("on vulkan"), "{stdout}");
    assert!(stdout.contains("class 0") && stdout.contains("class 2"), "{stdout}");
    // Rows 0 and 1: three probabilities, then their sum.
    for r in ["0", "1"] {
        let row = stdout.lines().find(|l| l.split_whitespace().next() == Some(r)).unwrap();
        let nums: Vec<f64> = row.split_whitespace().skip(1).map(|v| v.parse().unwrap()).collect();
        assert_eq!(nums.len(), 4, "{row}");
        assert!(nums[..3].iter().all(|p| *p > 0.0 && *p < 1.0), "{row}");
        assert!((nums[3] - 1.0).abs() < 1e-5, "{row}");
    }
    let check = stdout.lines().find(|l| l.starts_with("check:")).unwrap();
    let diff: f64 = check.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(diff < 1e-5, "{check}");
    assert!(!stdout.contains("optimized graph:"), "{stdout}");
}

#[test]
fn demo_dump_prints_the_optimized_graph() {
    let out = rlx(&["demo", "--device", "cpu", "--dump"], &[]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert!(stdout.contains("optimized graph:") && stdout.contains("outputs:"), "{stdout}");
    assert!(stdout.contains("w1") && stdout.contains("softmax"), "{stdout}");
}

#[test]
fn unknown_device_is_a_readable_error() {
    let out = rlx(&["demo", "--device", "tpu"], &[]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("tpu") && stderr.contains("cpu, gpu, vulkan, auto"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn unavailable_device_exits_1_with_the_reason() {
    // WGPU_BACKEND=dx12 leaves wgpu no adapter on Linux: a device that cannot open.
    let out = rlx(&["demo", "--device", "gpu"], &[("WGPU_BACKEND", "dx12")]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.starts_with("error: device gpu is unavailable"), "{stderr}");
    assert!(stderr.len() > "error: device gpu is unavailable: ".len() + 10, "a reason follows: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn bad_rlx_device_is_reported_not_ignored() {
    let out = rlx(&["demo"], &[("RLX_DEVICE", "quantum")]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("RLX_DEVICE='quantum'"), "{stderr}");
    let out = rlx(&["demo"], &[("RLX_DEVICE", "gpu"), ("WGPU_BACKEND", "dx12")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("device gpu is unavailable"));
}

#[test]
fn bench_prints_a_table_and_writes_json() {
    let json = std::env::temp_dir().join(format!("rlx-bench-{}.json", std::process::id()));
    let path = json.to_str().unwrap();
    let args = ["bench", "--device", "cpu", "--iters", "2", "--tiny-iters", "3", "--warmup", "1"];
    let out = rlx(&[&args[..], &["--matmul-size", "8", "--json", path, "tiny", "matmul"]].concat(), &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "stderr: {stderr}");
    assert!(stdout.contains("compute ms") && stdout.contains("TFLOP/s"), "{stdout}");
    let tiny = stdout.lines().find(|l| l.starts_with("tiny")).unwrap();
    assert!(tiny.contains("cpu") && tiny.contains("1.00x"), "{tiny}");
    assert!(stdout.lines().any(|l| l.starts_with("matmul 8³ f32")), "{stdout}");
    assert!(!stdout.contains("bert"), "only the workloads asked for: {stdout}");
    assert!(stderr.contains("bench: tiny x[4]+1 on cpu"), "progress goes to stderr: {stderr}");
    let written = std::fs::read_to_string(&json).unwrap();
    let _ = std::fs::remove_file(&json);
    assert!(
        written.contains("\"workload\": \"tiny x[4]+1\"") && written.contains("\"iters\": 3"),
        "{written}"
    );
    assert!(written.contains("\"flops\": 1024") && written.contains("\"skipped\": ["), "{written}");
}

#[test]
fn bench_runs_a_quantized_matmul_and_reports_weight_bandwidth() {
    let json = std::env::temp_dir().join(format!("rlx-bench-quant-{}.json", std::process::id()));
    let path = json.to_str().unwrap();
    let args = ["bench", "--device", "cpu", "--iters", "2", "--warmup", "1", "--quant", "q4_k"];
    let out = rlx(&[&args[..], &["--matmul-shape", "2x512x8", "--json", path, "matmul"]].concat(), &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "stderr: {stderr}");
    let row =
        stdout.lines().find(|l| l.starts_with("matmul 2×512×8 Q4_K")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(row.contains("cpu") && stdout.contains("weight GB/s"), "{stdout}");
    let written = std::fs::read_to_string(&json).unwrap();
    let _ = std::fs::remove_file(&json);
    let doc: serde_json::Value = serde_json::from_str(&written).unwrap();
    let gbps = doc["rows"][0]["weight_gbps"].as_f64().unwrap_or_else(|| panic!("{written}"));
    assert!(gbps > 0.0, "{written}");
    let out = rlx(&["bench", "--device", "cpu", "--quant", "q7_k", "matmul"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("'q7_k'"), "{}", text(&out.stderr));
    let out =
        rlx(&["bench", "--device", "cpu", "--quant", "q4_k", "--matmul-shape", "1x100x8", "matmul"], &[]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("K = 100"), "{}", text(&out.stderr));
}

#[test]
fn bench_reports_a_device_it_cannot_use_and_goes_on() {
    let out = rlx(
        &["bench", "--device", "gpu", "--device", "cpu", "--iters", "1", "--tiny-iters", "1", "tiny"],
        &[("WGPU_BACKEND", "dx12")],
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert!(stdout.contains("skipped tiny on gpu: device gpu is unavailable"), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("tiny") && l.contains("cpu")), "{stdout}");
}

/// `--streams` takes 1 to 4096 sequences; anything else is refused before a model is built.
#[test]
fn bench_streams_out_of_range_is_refused() {
    for bad in ["0", "4097", "two"] {
        let out = rlx(&["bench", "--device", "cpu", "--streams", bad, "generate"], &[]);
        assert_eq!(out.status.code(), Some(2), "--streams {bad}");
        let stderr = text(&out.stderr);
        assert!(stderr.contains("--streams") && stderr.contains(bad), "{stderr}");
    }
}

/// `--kv-cache` takes auto, f32 or f16 wherever a decoder runs; anything else is refused before
/// a model loads, naming the choices.
#[test]
fn an_unknown_kv_cache_dtype_is_refused() {
    let runs: [&[&str]; 3] = [
        &["generate", "--model", "missing", "--kv-cache", "q8"],
        &["serve", "--model", "missing", "--kv-cache", "q8"],
        &["bench", "--device", "cpu", "--kv-cache", "q8", "generate"],
    ];
    for args in runs {
        let out = rlx(args, &[]);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = text(&out.stderr);
        assert!(stderr.contains("--kv-cache") && stderr.contains("auto, f32 or f16"), "{args:?}: {stderr}");
    }
}

/// The tiny random-init Llama fixture of rlx-models (llama3 rope scaling) and its reference.
fn llama_fixture() -> (std::path::PathBuf, serde_json::Value) {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../rlx-models/tests/fixtures/decoders/llama");
    let reference = std::fs::read_to_string(dir.join("reference.json")).unwrap();
    (dir, serde_json::from_str(&reference).unwrap())
}

/// `rlx generate` of 8 tokens on the CPU from the reference's prompt ids; asserts it succeeds
/// and prints the reference's greedy tokens. Returns stderr.
fn generate_matches_reference(model: &std::path::Path, reference: &serde_json::Value) -> String {
    let join = |key: &str| -> String {
        let v: Vec<String> = reference[key].as_array().unwrap().iter().map(|v| v.to_string()).collect();
        v.join(",")
    };
    let ids = join("prompt");
    let args = ["generate", "--model", model.to_str().unwrap(), "--device", "cpu", "--max-tokens", "8"];
    let mut args = args.to_vec();
    args.extend(["--prompt-ids", &ids]);
    let out = rlx(&args, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), join("greedy").replace(',', " "));
    text(&out.stderr)
}

#[test]
fn generate_streams_the_greedy_tokens_transformers_gives() {
    let (dir, reference) = llama_fixture();
    let stderr = generate_matches_reference(&dir, &reference);
    assert!(stderr.contains("8 generated"), "{stderr}");
}

#[test]
fn generate_samples_reproducibly_with_a_seed() {
    let (dir, _) = llama_fixture();
    let args = ["generate", "--model", dir.to_str().unwrap(), "--device", "cpu", "--max-tokens", "10"];
    let sampled = |seed: &str| {
        let mut all = args.to_vec();
        all.extend(["--prompt-ids", "5,9,2", "--temperature", "0.9", "--top-k", "40", "--seed", seed]);
        let out = rlx(&all, &[]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(text(&out.stderr).contains(&format!("sampled, seed {seed}")), "{}", text(&out.stderr));
        text(&out.stdout).trim().to_string()
    };
    let (a, b, c) = (sampled("1"), sampled("1"), sampled("2"));
    assert_eq!(a.split(' ').count(), 10, "{a}");
    assert_eq!(a, b, "one seed, one continuation");
    assert_ne!(a, c, "another seed, another continuation");
}

#[test]
fn generate_refuses_bad_prompts_with_the_reason() {
    let (dir, _) = llama_fixture();
    let model = dir.to_str().unwrap();
    for (args, says) in [
        (vec!["--prompt-ids", "1,2", "--temperature", "0.7", "--top-p", "0"], "top_p"),
        (vec!["--prompt-ids", "1,999"], "outside the vocabulary"),
        (vec!["some text"], "--prompt-ids"),
        (vec![], "either a text prompt or --prompt-ids"),
    ] {
        let mut all = vec!["generate", "--model", model, "--device", "cpu"];
        all.extend(args);
        let out = rlx(&all, &[]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        assert!(text(&out.stderr).contains(says), "{}", text(&out.stderr));
    }
}

/// `rlx generate` on a GGUF file (the llama fixture converted as llama.cpp does, default rope)
/// gives the greedy tokens transformers gives for the same weights.
#[test]
fn generate_runs_a_gguf_file() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../rlx-models/tests/fixtures/gguf_decoders");
    let reference: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("llama.reference.json")).unwrap()).unwrap();
    let model = dir.join("llama.f32.gguf");
    generate_matches_reference(&model, &reference);
    let model = model.to_str().unwrap();
    // A text prompt is tokenized with the file's own tokenizer.
    let out = rlx(
        &["generate", "--model", model, "--device", "cpu", "--max-tokens", "2", "the quick brown fox"],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("2 generated"), "{}", text(&out.stderr));
}

/// `rlx generate` on a GGUF file whose weights are block-quantized (every format rlx keeps
/// packed) gives the greedy tokens of the numpy reference on gguf-py's dequantization.
#[test]
fn generate_runs_a_quantized_gguf_file() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../rlx-models/tests/fixtures/gguf_decoders");
    let text = std::fs::read_to_string(dir.join("llama.quant.reference.json")).unwrap();
    let reference: serde_json::Value = serde_json::from_str(&text).unwrap();
    generate_matches_reference(&dir.join("llama.quant.gguf"), &reference);
}

/// `rlx logits` writes the prompt's logits as raw f32 rows; on the CPU they match the ones
/// transformers computed for the fixture within 1e-4 relative.
#[test]
fn logits_writes_the_rows_transformers_computes() {
    let (dir, reference) = llama_fixture();
    let ids: Vec<String> = reference["prompt"].as_array().unwrap().iter().map(|v| v.to_string()).collect();
    let out_path = std::env::temp_dir().join(format!("rlx-logits-{}.f32", std::process::id()));
    let args = [
        "logits",
        "--model",
        dir.to_str().unwrap(),
        "--device",
        "cpu",
        "--prompt-ids",
        &ids.join(","),
        "--out",
        out_path.to_str().unwrap(),
    ];
    let out = rlx(&args, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let bytes = std::fs::read(&out_path).unwrap();
    std::fs::remove_file(&out_path).unwrap();
    let got: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    let want: Vec<f64> =
        reference["logits"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    assert_eq!(got.len(), want.len());
    let err: f64 = got.iter().zip(&want).map(|(&g, &w)| (f64::from(g) - w).powi(2)).sum::<f64>().sqrt();
    let norm: f64 = want.iter().map(|w| w * w).sum::<f64>().sqrt();
    assert!(err / norm < 1e-4, "relative error {}", err / norm);
    assert!(text(&out.stderr).contains(&format!("[{}, ", ids.len())), "{}", text(&out.stderr));
    // A token outside the vocabulary is refused with the reason, and nothing is written.
    let bad = std::env::temp_dir().join(format!("rlx-logits-bad-{}.f32", std::process::id()));
    let model = dir.to_str().unwrap();
    let out = rlx(
        &[
            "logits",
            "--model",
            model,
            "--device",
            "cpu",
            "--prompt-ids",
            "1,99999",
            "--out",
            bad.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("outside the vocabulary"), "{}", text(&out.stderr));
    assert!(!bad.exists());
}

/// A copy of the llama fixture in a fresh directory, with `files` written into it.
fn llama_copy(test: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
    let (src, _) = llama_fixture();
    let dir = std::env::temp_dir().join(format!("rlx-cli-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["config.json", "generation_config.json", "model.safetensors"] {
        std::fs::copy(src.join(name), dir.join(name)).unwrap();
    }
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    dir
}

/// [`llama_copy`] with every byte of every tensor 0xff: a NaN in f32, f16 and bf16 alike.
fn nan_llama_copy(test: &str) -> std::path::PathBuf {
    let dir = llama_copy(test, &[]);
    let weights = dir.join("model.safetensors");
    let mut bytes = std::fs::read(&weights).unwrap();
    let header = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    bytes[8 + header..].fill(0xff);
    std::fs::write(&weights, bytes).unwrap();
    dir
}

/// Every id generation_config.json lists ends the generation, after it is printed;
/// `--ignore-eos` goes on to --max-tokens.
#[test]
fn generate_stops_at_every_listed_eos_id() {
    let (_, reference) = llama_fixture();
    let greedy: Vec<i64> =
        reference["greedy"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
    let prompt: Vec<String> = reference["prompt"].as_array().unwrap().iter().map(|v| v.to_string()).collect();
    let prompt = prompt.join(",");
    // The third greedy token is listed (the first entry is no token of the vocabulary).
    let config = format!(r#"{{"bos_token_id": 1, "eos_token_id": [9999, {}]}}"#, greedy[2]);
    let dir = llama_copy("eos", &[("generation_config.json", &config)]);
    let model = dir.to_str().unwrap();
    let args =
        ["generate", "--model", model, "--device", "cpu", "--max-tokens", "8", "--prompt-ids", &prompt];
    let out = rlx(&args, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let first3: Vec<String> = greedy[..3].iter().map(|t| t.to_string()).collect();
    assert_eq!(text(&out.stdout).trim(), first3.join(" "));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("3 generated"), "{stderr}");
    assert!(stderr.contains(&format!("stopped at end-of-sequence token {}", greedy[2])), "{stderr}");
    let mut all = args.to_vec();
    all.push("--ignore-eos");
    let out = rlx(&all, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("8 generated"), "{}", text(&out.stderr));
}

/// A chat template in the style of Llama 2's, over the fixture's vocabulary (`<s>` is 1, `</s>`
/// is 2).
const CHAT_TEMPLATE: &str = "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}{{ eos_token }}{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}";

/// `--chat` renders the template over the system and user messages and tokenizes the result
/// without adding `<s>` again: the continuation is the one of exactly those ids.
#[test]
fn generate_chat_applies_the_template() {
    let config = serde_json::json!({
        "chat_template": CHAT_TEMPLATE,
        "bos_token": {"__type": "AddedToken", "content": "<s>", "special": true},
        "eos_token": "</s>",
    });
    let tokenizer = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../rlx-models/tests/fixtures/gguf_decoders/llama.tokenizer.json");
    let tokenizer = std::fs::read_to_string(tokenizer).unwrap();
    let files = [("tokenizer.json", tokenizer.as_str()), ("tokenizer_config.json", &config.to_string())];
    let dir = llama_copy("chat", &files);
    let model = dir.to_str().unwrap();
    let tok = tokenizers::Tokenizer::from_file(dir.join("tokenizer.json")).unwrap();
    let ids =
        tok.encode("<s>[system] be brief</s>[user] hi</s>[assistant]", false).unwrap().get_ids().to_vec();
    assert_eq!(ids.iter().filter(|&&i| i == 1).count(), 1, "one <s>: {ids:?}");
    assert_eq!(ids.iter().filter(|&&i| i == 2).count(), 2, "each </s> is one token: {ids:?}");

    let base = ["generate", "--model", model, "--device", "cpu", "--max-tokens", "4", "--ignore-eos"];
    let mut args = base.to_vec();
    args.extend(["--chat", "--system", "be brief", "hi"]);
    let chat = rlx(&args, &[]);
    let stderr = text(&chat.stderr);
    assert!(chat.status.success(), "{stderr}");
    assert!(stderr.contains(&format!("prompt {} tokens, 4 generated", ids.len())), "{stderr}");
    assert!(stderr.contains("tokenizer_config.json"), "names where the template came from: {stderr}");

    let joined: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
    let joined = joined.join(",");
    let mut args = base.to_vec();
    args.extend(["--prompt-ids", &joined]);
    let plain = rlx(&args, &[]);
    assert!(plain.status.success(), "{}", text(&plain.stderr));
    let generated: Vec<u32> = text(&plain.stdout).split_whitespace().map(|t| t.parse().unwrap()).collect();
    assert_eq!(generated.len(), 4);
    let expected = tok.decode(&generated, true).unwrap();
    assert_eq!(text(&chat.stdout).trim_end_matches('\n'), expected);
}

#[test]
fn generate_chat_refusals() {
    let (dir, _) = llama_fixture();
    let model = dir.to_str().unwrap();
    // No template: told before the model loads, with what to do.
    let tokenizer = dir.join("../../gguf_decoders/llama.tokenizer.json");
    let copy = llama_copy("nochat", &[("tokenizer.json", &std::fs::read_to_string(tokenizer).unwrap())]);
    let out = rlx(&["generate", "--model", copy.to_str().unwrap(), "--device", "cpu", "--chat", "hi"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("no chat template") && stderr.contains("drop --chat"), "{stderr}");
    assert!(!stderr.contains("loading"), "{stderr}");
    let out = rlx(&["generate", "--model", model, "--device", "cpu", "--chat", "--prompt-ids", "1,2"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("not --prompt-ids"), "{}", text(&out.stderr));
    let out = rlx(&["generate", "--model", model, "--system", "x", "hi"], &[]);
    assert_eq!(out.status.code(), Some(2), "clap refuses --system without --chat: {}", text(&out.stderr));
}

/// A negative number parses as a flag's value, and a negative temperature is then refused by
/// the sampling checks (exit 1, the field named), not by the command-line parser (exit 2).
#[test]
fn generate_parses_negative_numbers_and_refuses_them_with_the_reason() {
    let (dir, _) = llama_fixture();
    let model = dir.to_str().unwrap();
    for (flag, says) in
        [("--temperature", "temperature = -1"), ("--repetition-penalty", "repetition_penalty")]
    {
        let out =
            rlx(&["generate", "--model", model, "--device", "cpu", "--prompt-ids", "1,2", flag, "-1"], &[]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert!(!stderr.contains("unexpected argument"), "{stderr}");
    }
}

/// `--top-k` or `--top-p` without a temperature would be ignored (greedy decoding draws
/// nothing): an error that says how to turn sampling on.
#[test]
fn sampling_flags_without_a_temperature_are_refused() {
    let (dir, _) = llama_fixture();
    let model = dir.to_str().unwrap();
    for extra in [&["--top-k", "5"][..], &["--top-p", "0.9"], &["--temperature", "0", "--top-k", "5"]] {
        let mut args = vec!["generate", "--model", model, "--device", "cpu", "--prompt-ids", "1,2"];
        args.extend(extra);
        let out = rlx(&args, &[]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(extra[extra.len() - 2]) && stderr.contains("--temperature T"), "{stderr}");
        assert!(text(&out.stdout).is_empty(), "{}", text(&out.stdout));
    }
}

/// Blank lines of `--file` are no sentences: they are skipped and the count is told.
#[test]
fn embed_skips_blank_lines_of_its_file_and_says_how_many() {
    let file = std::env::temp_dir().join(format!("rlx-cli-blank-{}.txt", std::process::id()));
    std::fs::write(&file, "\n   \n\t\n").unwrap();
    let out = rlx(&["embed", "--device", "cpu", "--file", file.to_str().unwrap()], &[]);
    let stderr = text(&out.stderr);
    // Nothing is left to embed: the model is not even loaded.
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("skipped 3 blank lines"), "{stderr}");
    assert!(stderr.contains("no sentences"), "{stderr}");
}

/// Logits from weights that are all NaN are an error naming the row, and no file of NaNs is
/// written as if it were data.
#[test]
fn logits_refuses_non_finite_output() {
    let dir = nan_llama_copy("nan-weights");
    let out_path = dir.join("logits.f32");
    let out = rlx(
        &[
            "logits",
            "--model",
            dir.to_str().unwrap(),
            "--device",
            "cpu",
            "--prompt-ids",
            "1,2,3",
            "--out",
            out_path.to_str().unwrap(),
        ],
        &[],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("the model produced NaN in the logits of prompt token 1"), "{stderr}");
    assert!(stderr.contains("may be corrupt"), "{stderr}");
    assert!(!out_path.exists());
}

/// Generation from weights that are all NaN stops with an error naming the position, greedy
/// and sampled, on the CPU and on Vulkan, instead of printing the argmax's pick of a NaN (token
/// 0) forever.
#[test]
fn generate_refuses_non_finite_logits() {
    let dir = nan_llama_copy("nan-weights-generate");
    let m = dir.to_str().unwrap();
    for device in ["cpu", "vulkan"] {
        for sampling in [&[][..], &["--temperature", "0.8", "--seed", "3"][..]] {
            let mut args = vec!["generate", "--model", m, "--device", device, "--max-tokens", "4"];
            args.extend_from_slice(sampling);
            args.extend_from_slice(&["--prompt-ids", "1,2,3"]);
            let out = rlx(&args, &[]);
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{device} {sampling:?}: {stderr}");
            assert!(
                stderr.contains("NaN or infinite logits at position 2"),
                "{device} {sampling:?}: {stderr}"
            );
            assert!(
                text(&out.stdout).trim().is_empty(),
                "{device} {sampling:?}: printed {:?}",
                text(&out.stdout)
            );
        }
    }
}

/// A GGUF file is recognised by its magic number: the fixture under a name without `.gguf`
/// still generates.
#[test]
fn generate_recognises_a_gguf_file_whatever_its_name() {
    let src =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../rlx-models/tests/fixtures/gguf_decoders");
    let model = std::env::temp_dir().join(format!("rlx-cli-gguf-named-bin-{}.bin", std::process::id()));
    std::fs::copy(src.join("llama.f32.gguf"), &model).unwrap();
    let m = model.to_str().unwrap();
    let out =
        rlx(&["generate", "--model", m, "--device", "cpu", "--max-tokens", "2", "--prompt-ids", "1,2"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("2 generated"), "{}", text(&out.stderr));
    std::fs::remove_file(&model).unwrap();
}

/// A byte-level tokenizer for the llama fixture's 256 ids: id i is the byte i, except the ids
/// `bytes` gives their own bytes (swapped with the ids that held them). ASCII letters are
/// tokens of their own, every other byte a byte token (`<0xNN>`, decoded by byte fallback),
/// as in Llama's vocabulary.
fn byte_tokenizer(bytes: &[(u32, u8)]) -> String {
    let mut table: Vec<u8> = (0..=255).collect();
    for &(id, byte) in bytes {
        let at = table.iter().position(|&b| b == byte).unwrap();
        table.swap(id as usize, at);
    }
    let vocab: serde_json::Map<String, serde_json::Value> = table
        .iter()
        .enumerate()
        .map(|(id, &b)| {
            let token =
                if b.is_ascii_alphabetic() { char::from(b).to_string() } else { format!("<0x{b:02X}>") };
            (token, id.into())
        })
        .collect();
    serde_json::json!({
        "version": "1.0",
        "added_tokens": [],
        "normalizer": null,
        "pre_tokenizer": null,
        "post_processor": null,
        "decoder": {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Fuse"}]},
        "model": {"type": "BPE", "vocab": vocab, "merges": [], "byte_fallback": true, "unk_token": null},
    })
    .to_string()
}

/// `rlx generate` prints exactly what the tokenizer decodes the generated ids to, when the
/// tokens split a character in two ("é" as the bytes c3 a9 from two tokens) and when the last
/// token leaves a character unfinished: the streamed pieces add up to the whole decode.
#[test]
fn generate_streams_characters_split_across_tokens() {
    let dir = llama_copy("stream-split", &[]);
    let model = dir.to_str().unwrap();
    let run = |max: &str, prompt: &[&str]| {
        let mut args =
            vec!["generate", "--model", model, "--device", "cpu", "--ignore-eos", "--max-tokens", max];
        args.extend(prompt);
        let out = rlx(&args, &[]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout).trim_end_matches('\n').to_string()
    };
    // The ids the model continues "A" (byte 0x41, id 65) with.
    let ids: Vec<u32> =
        run("12", &["--prompt-ids", "65"]).split_whitespace().map(|t| t.parse().unwrap()).collect();
    assert_eq!(ids.len(), 12);
    // Two neighbouring ids that occur once each become "é"'s two bytes; the other ids are
    // letters, so that the whole is valid UTF-8.
    let once = |id: u32| id != 65 && ids.iter().filter(|&&i| i == id).count() == 1;
    let at = (0..ids.len() - 1).find(|&i| once(ids[i]) && once(ids[i + 1])).unwrap();
    let mut bytes = vec![(ids[at], 0xc3), (ids[at + 1], 0xa9)];
    for &id in &ids {
        if id != 65 && !bytes.iter().any(|&(i, _)| i == id) {
            bytes.push((id, b'a' + (bytes.len() - 2) as u8));
        }
    }
    std::fs::write(dir.join("tokenizer.json"), byte_tokenizer(&bytes)).unwrap();
    let tok = tokenizers::Tokenizer::from_file(dir.join("tokenizer.json")).unwrap();
    assert_eq!(tok.encode("A", true).unwrap().get_ids(), [65]);
    let whole = tok.decode(&ids, true).unwrap();
    assert!(whole.contains('é') && !whole.contains('\u{fffd}'), "{whole:?}");
    assert_eq!(run("12", &["A"]), whole);
    // Stopping right after "é"'s first byte: the unfinished character is still printed.
    let first = tok.decode(&ids[..=at], true).unwrap();
    assert!(first.ends_with('\u{fffd}'), "{first:?}");
    assert_eq!(run(&(at + 1).to_string(), &["A"]), first);
}
