//! `rlx fetch NAME`, `rlx models`, `rlx models --remove` and `rlx fetch --verify` of the built
//! binary, against a local stand-in for the Hugging Face hub (HF_ENDPOINT pointed at it,
//! HF_HOME and XDG_CACHE_HOME at this test's own folders), and `--model` taking the hub name.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rlx_test_support::hub_server::{serve, sha256_hex, Faults, HubFile, HubRepo};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const REPO: &str = "rlx-test/tiny-qwen2";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

struct Env {
    root: PathBuf,
    endpoint: String,
}

impl Env {
    fn new(name: &str, endpoint: &str) -> Env {
        let root = std::env::temp_dir().join(format!("rlx-models-cli-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        Env { root, endpoint: endpoint.to_string() }
    }

    fn rlx(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_rlx"))
            .args(args)
            .env_remove("RLX_DEVICE")
            .env_remove("HF_TOKEN")
            .env_remove("HF_HUB_CACHE")
            .env("XDG_CACHE_HOME", self.root.join("xdg"))
            .env("HF_HOME", self.root.join("hf"))
            .env("HF_ENDPOINT", &self.endpoint)
            .output()
            .unwrap()
    }
}

fn ok(out: &Output) -> String {
    assert!(out.status.success(), "stdout: {}\nstderr: {}", text(&out.stdout), text(&out.stderr));
    text(&out.stdout)
}

fn failed(out: &Output) -> String {
    assert!(!out.status.success(), "stdout: {}", text(&out.stdout));
    text(&out.stderr)
}

fn repo() -> HubRepo {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../rlx-models/tests/fixtures/decoders/qwen2");
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let path = entry.file_name().to_string_lossy().into_owned();
        let lfs = path.ends_with(".safetensors");
        files.push(HubFile { data: std::fs::read(entry.path()).unwrap(), path, lfs });
    }
    HubRepo { id: REPO.into(), commit: "89abcdef0123456789abcdef0123456789abcdef".into(), files }
}

#[test]
fn fetch_by_hub_name_then_list_verify_use_and_remove() {
    let server = serve(vec![repo()], Faults::default());
    let env = Env::new("hub", &server.url);
    let snapshot = ok(&env.rlx(&["fetch", REPO])).trim().to_string();
    let expected = env
        .root
        .join("hf/hub/models--rlx-test--tiny-qwen2/snapshots/89abcdef0123456789abcdef0123456789abcdef");
    assert_eq!(Path::new(&snapshot), expected);

    // The name works as --model, from the cache.
    let logits = env.root.join("logits.bin");
    let args = [
        "logits",
        "--model",
        REPO,
        "--device",
        "cpu",
        "--prompt-ids",
        "1,2",
        "--out",
        logits.to_str().unwrap(),
    ];
    ok(&env.rlx(&args));
    assert!(std::fs::metadata(&logits).unwrap().len() > 0);

    let listing = ok(&env.rlx(&["models"]));
    let row = listing.lines().find(|l| l.contains(REPO)).unwrap_or_else(|| panic!("{listing}"));
    assert!(
        row.contains("main (89abcdef0123)") && row.contains(&snapshot) && row.contains("KB"),
        "{listing}"
    );
    assert!(listing.lines().next().unwrap().contains("name") && listing.contains("revision"), "{listing}");

    let verified = ok(&env.rlx(&["fetch", "--verify", REPO]));
    assert!(verified.contains("rlx-test/tiny-qwen2: 7 files verified in"), "{verified}");
    let blob = std::fs::canonicalize(Path::new(&snapshot).join("model-00003-of-00004.safetensors")).unwrap();
    let mut bytes = std::fs::read(&blob).unwrap();
    bytes[10] ^= 0xff;
    std::fs::write(&blob, bytes).unwrap();
    let err = failed(&env.rlx(&["fetch", "--verify", REPO]));
    assert!(err.contains("model-00003-of-00004.safetensors: sha256"), "{err}");
    assert!(err.contains("1 problem(s)") && err.contains("rlx models --remove rlx-test/tiny-qwen2"), "{err}");

    let removed = ok(&env.rlx(&["models", "--remove", REPO]));
    assert!(removed.contains("removed rlx-test/tiny-qwen2"), "{removed}");
    assert!(!expected.exists());
    let err = failed(&env.rlx(&["models", "--remove", REPO]));
    assert!(err.contains("'rlx-test/tiny-qwen2' is not in the cache; cached: nothing"), "{err}");
    let err = failed(&env.rlx(&["fetch", "--verify", REPO]));
    assert!(err.contains("not in the cache"), "{err}");
    assert!(ok(&env.rlx(&["models"])).contains("no models cached"));
}

#[test]
fn the_built_in_model_is_listed_and_verified_against_its_marker() {
    let env = Env::new("builtin", "http://127.0.0.1:9");
    let dir = env.root.join("xdg/rlx/models/all-minilm-l6-v2");
    std::fs::create_dir_all(&dir).unwrap();
    let mut marker = String::from("wheelsha\n");
    for (name, data) in
        [("config.json", &b"{}"[..]), ("model.safetensors", &[1u8; 64]), ("tokenizer.json", b"{}")]
    {
        std::fs::write(dir.join(name), data).unwrap();
        marker.push_str(&format!("{} {} {name}\n", sha256_hex(data), data.len()));
    }
    std::fs::write(dir.join(".rlx-complete"), marker).unwrap();

    let listing = ok(&env.rlx(&["models"]));
    let row = listing.lines().find(|l| l.contains("all-minilm-l6-v2")).unwrap_or_else(|| panic!("{listing}"));
    assert!(row.contains("0.1.0") && row.contains(dir.to_str().unwrap()), "{listing}");
    assert!(ok(&env.rlx(&["fetch", "--verify", "all-minilm-l6-v2"])).contains("3 files verified"));

    std::fs::write(dir.join("model.safetensors"), [2u8; 64]).unwrap();
    let err = failed(&env.rlx(&["fetch", "--verify", "all-minilm-l6-v2"]));
    assert!(err.contains("all-minilm-l6-v2: model.safetensors: sha256"), "{err}");

    // No hub at that address: a hub name is a clear error, not a hang or a panic.
    let err = failed(&env.rlx(&["fetch", "rlx-test/other"]));
    assert!(err.contains("cannot reach the hub at http://127.0.0.1:9"), "{err}");
    ok(&env.rlx(&["models", "--remove", "all-minilm-l6-v2"]));
    assert!(!dir.exists());
}
