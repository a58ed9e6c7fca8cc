//! What a library user compiles (issue 27 §1): the normal and build dependencies of `rlx` hold
//! no dev-only crate (parity, fuzz, test support, proptest) and nothing of the command-line tool
//! (clap, tokio, the server); no published crate of the workspace depends on an unpublished
//! one or on a dev-only crate; and the backend features leave out the drivers they do not name.
//!
//! Reads `cargo tree` and `cargo metadata` for this workspace (no build). `cargo tree -p` resolves
//! features for that package alone, as a user's build of it would; the trees cover the targets
//! rlx is built for, so a dependency that only an exotic target would pull (wasm-bindgen-futures
//! takes tokio on emscripten behind an unstable cfg) does not count.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

/// The targets whose dependency trees are checked.
const TARGETS: [&str; 5] = [
    "x86_64-unknown-linux-gnu",
    "aarch64-unknown-linux-gnu",
    "x86_64-pc-windows-msvc",
    "aarch64-apple-darwin",
    "wasm32-unknown-unknown",
];

/// Test harnesses: never in the tree of a published crate.
const DEV_ONLY: [&str; 4] = ["rlx-parity", "rlx-fuzz", "rlx-test-support", "proptest"];

/// What the command-line tool needs and a library user must not compile.
const CLI_ONLY: [&str; 9] = [
    "rlx-cli",
    "rlx-serve",
    "clap",
    "indicatif",
    "comfy-table",
    "tokio",
    "axum",
    "tracing-subscriber",
    "tokenizers",
];

fn cargo(args: &[&str]) -> String {
    let cargo = option_env!("CARGO").unwrap_or("cargo");
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    let out = Command::new(cargo)
        .args(args)
        .arg("--manifest-path")
        .arg(&manifest)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cargo}: {e}"));
    assert!(out.status.success(), "cargo {args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// `cargo tree -p package` over [`TARGETS`] with normal and build edges; `extra` adds flags
/// (`-i NAME`, features). Returns the tree as printed.
fn tree_text(package: &str, extra: &[&str]) -> String {
    let mut args = vec!["tree", "-p", package, "-e", "normal,build"];
    for t in TARGETS {
        args.extend(["--target", t]);
    }
    args.extend(extra);
    cargo(&args)
}

/// The names of the crates in `package`'s tree.
fn tree(package: &str, extra: &[&str]) -> BTreeSet<String> {
    let mut args = vec!["--prefix", "none", "--format", "{p}"];
    args.extend(extra);
    let out = tree_text(package, &args);
    out.lines().filter_map(|l| l.split_whitespace().next()).map(str::to_string).collect()
}

/// Fails with the paths that reach each of `banned` in `package`'s tree.
fn assert_none_of(package: &str, banned: &[&str]) {
    let names = tree(package, &[]);
    let found: Vec<&&str> = banned.iter().filter(|b| names.contains(**b)).collect();
    let why: Vec<String> = found.iter().map(|b| tree_text(package, &["-i", b])).collect();
    assert!(
        found.is_empty(),
        "{package} depends on {found:?}, which its users must not compile:\n{}",
        why.join("\n")
    );
}

#[test]
fn rlx_depends_on_no_dev_only_or_cli_crate() {
    let mut banned = DEV_ONLY.to_vec();
    banned.extend(CLI_ONLY);
    assert_none_of("rlx", &banned);
    // The check sees the tree at all: the runtime and both drivers are in it.
    let names = tree("rlx", &[]);
    for expected in ["rlx-runtime", "rlx-vulkan", "rlx-wgpu", "rlx-cpu"] {
        assert!(names.contains(expected), "{expected} missing from {names:?}");
    }
}

/// One dependency in a manifest: its name, its kind (`None` for normal, "dev", "build") and
/// whether it is a path dependency.
type ManifestDep = (String, Option<String>, bool);

/// The published members of the workspace (no `publish = false`) with the manifest's
/// dependencies of each, and the names of the unpublished members.
fn published_members() -> (Vec<(String, Vec<ManifestDep>)>, BTreeSet<String>) {
    let m: Value = serde_json::from_str(&cargo(&["metadata", "--format-version", "1", "--no-deps"])).unwrap();
    let mut published = Vec::new();
    let mut unpublished = BTreeSet::new();
    for p in m["packages"].as_array().unwrap() {
        let name = p["name"].as_str().unwrap().to_string();
        // `publish`: null when publishable anywhere, [] for `publish = false`.
        if p["publish"].as_array().is_some_and(|a| a.is_empty()) {
            unpublished.insert(name);
            continue;
        }
        let deps = p["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                let kind = d["kind"].as_str().map(str::to_string);
                (d["name"].as_str().unwrap().to_string(), kind, d["path"].is_string())
            })
            .collect();
        published.push((name, deps));
    }
    (published, unpublished)
}

#[test]
fn no_published_crate_depends_on_an_unpublished_or_dev_only_one() {
    let (published, unpublished) = published_members();
    assert!(published.len() >= 10, "only {} publishable crates found", published.len());
    assert!(
        unpublished.contains("rlx-parity") && unpublished.contains("rlx-test-support"),
        "{unpublished:?}"
    );
    let mut bad = Vec::new();
    for (name, deps) in &published {
        // Normal and build dependencies, optional ones and every target's included.
        for (dep, kind, path) in deps {
            if kind.as_deref() != Some("dev") && *path && unpublished.contains(dep) {
                bad.push(format!("{name} -> {dep} ({})", kind.as_deref().unwrap_or("normal")));
            }
        }
    }
    assert!(bad.is_empty(), "published crates depending on unpublished ones:\n{}", bad.join("\n"));
    for (name, _) in &published {
        assert_none_of(name, &DEV_ONLY);
    }
}

#[test]
fn backend_features_leave_out_the_other_drivers() {
    let cpu = tree("rlx", &["--no-default-features", "--features", "cpu"]);
    for driver in ["rlx-vulkan", "ash", "rlx-wgpu", "wgpu", "rlx-gpu", "naga"] {
        assert!(!cpu.contains(driver), "rlx with only `cpu` still depends on {driver}");
    }
    let vulkan = tree("rlx", &["--no-default-features", "--features", "vulkan"]);
    assert!(vulkan.contains("rlx-vulkan") && vulkan.contains("ash"), "{vulkan:?}");
    assert!(
        !vulkan.contains("rlx-wgpu") && !vulkan.contains("wgpu"),
        "rlx with only `vulkan` depends on wgpu"
    );
    let wgpu = tree("rlx", &["--no-default-features", "--features", "wgpu"]);
    assert!(wgpu.contains("rlx-wgpu") && wgpu.contains("wgpu"), "{wgpu:?}");
    assert!(!wgpu.contains("rlx-vulkan"), "rlx with only `wgpu` depends on rlx-vulkan");
}
