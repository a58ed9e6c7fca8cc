//! Models by name (issue 23 §4) against a local stand-in for the Hugging Face hub
//! (`rlx_test_support::hub_server`, the hub's URL layout on 127.0.0.1): a safetensors repo and a
//! GGUF file by quant tag download, pass their checks and load; a missing repo, a missing file,
//! a 401, an interrupted download, a corrupt file and no network each give a clear error, and
//! nothing half-written is ever taken for a model. Each test has its own server and cache and
//! passes them explicitly ([`HubOptions`]), so no test touches the process environment.

// Tests unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rlx_models::hub::fetch_hub;
use rlx_models::hub_cache::{complete_local, list_cached_in, remove_cached_in, verify_cached_in};
use rlx_models::{
    load_causal_lm, resolve_model, DecoderOptions, Device, HubName, HubOptions, ModelError, ModelFiles,
};
use rlx_test_support::hub_server::{serve, Faults, HubFile, HubRepo, HubServer};
use std::path::{Path, PathBuf};

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
const REPO: &str = "rlx-test/tiny-qwen2";
const GGUF_REPO: &str = "rlx-test/tiny-qwen2-GGUF";

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn file(path: &str, from: &Path, lfs: bool) -> HubFile {
    HubFile { path: path.to_string(), data: std::fs::read(from).unwrap(), lfs }
}

/// The tiny Qwen2 decoder fixture (four shards and their index) as a hub repo, with a README
/// that no model needs.
fn safetensors_repo() -> HubRepo {
    let dir = fixtures().join("decoders/qwen2");
    let mut files = vec![HubFile { path: "README.md".into(), data: b"# tiny".to_vec(), lfs: false }];
    for f in ["config.json", "generation_config.json", "model.safetensors.index.json"] {
        files.push(file(f, &dir.join(f), false));
    }
    for i in 1..=4 {
        let f = format!("model-0000{i}-of-00004.safetensors");
        files.push(file(&f, &dir.join(&f), true));
    }
    HubRepo { id: REPO.into(), commit: COMMIT.into(), files }
}

fn gguf_repo() -> HubRepo {
    let dir = fixtures().join("gguf_decoders");
    let junk = |p: &str| HubFile { path: p.into(), data: vec![7u8; 64], lfs: true };
    HubRepo {
        id: GGUF_REPO.into(),
        commit: COMMIT.into(),
        files: vec![
            file("tiny-qwen2-F32.gguf", &dir.join("qwen2.f32.gguf"), true),
            file("tiny-qwen2-f16.gguf", &dir.join("qwen2.f16.gguf"), true),
            junk("tiny-qwen2-Q8_0-00001-of-00002.gguf"),
            junk("tiny-qwen2-Q8_0-00002-of-00002.gguf"),
        ],
    }
}

fn temp_cache(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rlx-hub-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn options(server: &HubServer, cache: &Path) -> HubOptions {
    HubOptions { endpoint: server.url.clone(), cache: cache.to_path_buf(), token: None }
}

fn name(text: &str) -> HubName {
    HubName::parse(text).unwrap()
}

fn fetch(opts: &HubOptions, spec: &str) -> rlx_models::Result<PathBuf> {
    fetch_hub(opts, &name(spec), "main", ModelFiles::Decoder, &mut |_, _, _| {})
}

fn logits(path: &Path) -> Vec<f32> {
    load_causal_lm(path, Device::Cpu, DecoderOptions::default()).unwrap().logits(&[1, 5, 9]).unwrap()
}

fn requests(server: &HubServer) -> usize {
    server.seen.lock().unwrap().len()
}

/// The snapshot holds no whole model and none of the shard links.
fn nothing_taken(cache: &Path) {
    let snapshot = cache.join("models--rlx-test--tiny-qwen2/snapshots").join(COMMIT);
    assert_eq!(complete_local(&snapshot, &name(REPO), ModelFiles::Decoder).unwrap(), None);
}

#[test]
fn a_safetensors_repo_downloads_checks_loads_and_is_then_served_from_the_cache() {
    let server = serve(vec![safetensors_repo()], Faults::default());
    let cache = temp_cache("good");
    let opts = options(&server, &cache);
    let mut reports = Vec::new();
    let path = fetch_hub(&opts, &name(REPO), "main", ModelFiles::Decoder, &mut |f, done, total| {
        reports.push((f.to_string(), done, total))
    })
    .unwrap();
    assert_eq!(path, cache.join("models--rlx-test--tiny-qwen2/snapshots").join(COMMIT));
    assert_eq!(logits(&path), logits(&fixtures().join("decoders/qwen2")));
    // Only what a model needs came down, the README did not.
    assert!(!path.join("README.md").exists() && path.join("generation_config.json").is_file());
    assert!(!server.seen.lock().unwrap().iter().any(|s| s.path.ends_with("README.md")));
    let shard = "model-00001-of-00004.safetensors";
    let size = std::fs::metadata(path.join(shard)).unwrap().len();
    assert!(reports.iter().any(|(f, d, t)| f == shard && *d == size && *t == size), "{reports:?}");
    assert_eq!(
        std::fs::read_to_string(cache.join("models--rlx-test--tiny-qwen2/refs/main")).unwrap(),
        COMMIT
    );

    // The second time the cache answers, without one request.
    let before = requests(&server);
    assert_eq!(fetch(&opts, REPO).unwrap(), path);
    assert_eq!(requests(&server), before);

    // Listed, verified, then a blob damaged on disk is found by the verification.
    let listed = list_cached_in(None, &cache).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0].name.as_str(), listed[0].path.as_path()), (REPO, path.as_path()));
    assert!(listed[0].revision.starts_with("main (0123456789ab"), "{}", listed[0].revision);
    assert!(listed[0].bytes > 300_000, "{}", listed[0].bytes);
    let ok = verify_cached_in(REPO, "main", None, &cache).unwrap();
    assert_eq!((ok.files, ok.problems.len()), (7, 0), "{:?}", ok.problems);
    let blob = std::fs::canonicalize(path.join(shard)).unwrap();
    let mut bytes = std::fs::read(&blob).unwrap();
    bytes[100] ^= 1;
    std::fs::write(&blob, bytes).unwrap();
    let bad = verify_cached_in(REPO, "main", None, &cache).unwrap();
    assert_eq!(bad.problems.len(), 1, "{:?}", bad.problems);
    assert!(bad.problems[0].starts_with(shard) && bad.problems[0].contains("sha256"), "{:?}", bad.problems);

    let tagged = remove_cached_in(&format!("{REPO}:Q4_K_M"), None, &cache).unwrap_err().to_string();
    assert!(tagged.contains("without :Q4_K_M"), "{tagged}");
    // Removal takes the whole repo; a second removal names what is cached (nothing).
    assert_eq!(remove_cached_in(REPO, None, &cache).unwrap(), cache.join("models--rlx-test--tiny-qwen2"));
    let gone = remove_cached_in(REPO, None, &cache).unwrap_err().to_string();
    assert!(gone.contains("'rlx-test/tiny-qwen2' is not in the cache; cached: nothing"), "{gone}");
}

#[test]
fn a_quant_tag_picks_exactly_one_gguf_file() {
    let server = serve(vec![gguf_repo()], Faults::default());
    let cache = temp_cache("gguf");
    let opts = options(&server, &cache);
    let path = fetch(&opts, &format!("{GGUF_REPO}:F16")).unwrap();
    assert_eq!(path.file_name().unwrap(), "tiny-qwen2-f16.gguf");
    assert_eq!(logits(&path), logits(&fixtures().join("gguf_decoders/qwen2.f16.gguf")));
    // Only the picked file came down.
    assert!(!path.with_file_name("tiny-qwen2-F32.gguf").exists());

    let several = fetch(&opts, &format!("{GGUF_REPO}:q8_0")).unwrap_err();
    assert!(matches!(several, ModelError::HubPick { .. }), "{several:?}");
    assert!(several.to_string().contains("2 .gguf files carry the quant tag 'q8_0'"), "{several}");
    let none = fetch(&opts, &format!("{GGUF_REPO}:Q4_K_M")).unwrap_err().to_string();
    assert!(
        none.contains("no .gguf file carries the quant tag 'Q4_K_M'") && none.contains("tiny-qwen2-F32.gguf"),
        "{none}"
    );
    let untagged = fetch(&opts, GGUF_REPO).unwrap_err().to_string();
    assert!(untagged.contains("has no file 'config.json'") && untagged.contains(":Q4_K_M"), "{untagged}");
}

#[test]
fn a_missing_repo_or_revision_is_a_clear_error() {
    let server = serve(vec![safetensors_repo()], Faults::default());
    let opts = options(&server, &temp_cache("norepo"));
    let e = fetch(&opts, "rlx-test/no-such-model").unwrap_err();
    assert!(matches!(e, ModelError::HubRepoNotFound { .. }), "{e:?}");
    let text = e.to_string();
    assert!(text.contains("no model repo 'rlx-test/no-such-model' at revision 'main'"), "{text}");
    let e = fetch_hub(&opts, &name(REPO), "no-branch", ModelFiles::Decoder, &mut |_, _, _| {}).unwrap_err();
    assert!(e.to_string().contains("at revision 'no-branch'"), "{e}");
    // A commit id is a revision too.
    assert!(fetch_hub(&opts, &name(REPO), COMMIT, ModelFiles::Decoder, &mut |_, _, _| {}).is_ok());
}

#[test]
fn a_missing_file_is_a_clear_error() {
    let mut repo = safetensors_repo();
    repo.files.retain(|f| f.path != "config.json");
    let server = serve(vec![repo], Faults::default());
    let e = fetch(&options(&server, &temp_cache("noconfig")), REPO).unwrap_err();
    assert!(matches!(e, ModelError::HubFileMissing { .. }), "{e:?}");
    assert!(e.to_string().contains("rlx-test/tiny-qwen2 (revision main) has no file 'config.json'"), "{e}");

    // A shard the index names but the repo lacks.
    let mut repo = safetensors_repo();
    repo.files.retain(|f| f.path != "model-00003-of-00004.safetensors");
    let server = serve(vec![repo], Faults::default());
    let cache = temp_cache("noshard");
    let e = fetch(&options(&server, &cache), REPO).unwrap_err().to_string();
    assert!(e.contains("has no file 'model-00003-of-00004.safetensors'") && e.contains("index"), "{e}");
    nothing_taken(&cache);

    // Listed but not served.
    let faults = Faults { unserved: Some("model-00002-of-00004.safetensors".into()), ..Faults::default() };
    let server = serve(vec![safetensors_repo()], faults);
    let cache = temp_cache("unserved");
    let e = fetch(&options(&server, &cache), REPO).unwrap_err();
    assert!(matches!(e, ModelError::HubFileMissing { .. }), "{e:?}");
    assert!(e.to_string().contains("model-00002-of-00004.safetensors"), "{e}");
    nothing_taken(&cache);
}

#[test]
fn a_401_says_to_set_hf_token_and_the_token_is_sent() {
    let faults = Faults { require_token: Some("secret".into()), ..Faults::default() };
    let server = serve(vec![safetensors_repo()], faults);
    let mut opts = options(&server, &temp_cache("auth"));
    let e = fetch(&opts, REPO).unwrap_err();
    assert!(matches!(e, ModelError::HubAuth { status: 401, .. }), "{e:?}");
    assert!(e.to_string().contains("set HF_TOKEN"), "{e}");
    opts.token = Some("secret".into());
    let path = fetch(&opts, REPO).unwrap();
    assert_eq!(logits(&path), logits(&fixtures().join("decoders/qwen2")));
}

#[test]
fn an_interrupted_download_is_taken_for_nothing_and_the_next_call_resumes_it() {
    let shard = "model-00004-of-00004.safetensors";
    let faults = Faults { cut: Some((shard.into(), 1)), ..Faults::default() };
    let server = serve(vec![safetensors_repo()], faults);
    let cache = temp_cache("cut");
    let opts = options(&server, &cache);
    let e = fetch(&opts, REPO).unwrap_err();
    let ModelError::HubInterrupted { done, total, ref file, .. } = e else { panic!("{e:?}") };
    assert_eq!(file, shard);
    assert!(done > 0 && done < total, "{done} of {total}");
    assert!(e.to_string().contains("run the same command again to resume it"), "{e}");
    nothing_taken(&cache);

    let path = fetch(&opts, REPO).unwrap();
    assert_eq!(logits(&path), logits(&fixtures().join("decoders/qwen2")));
    // The second call asked only for the rest of the file.
    let resumed = format!("bytes={done}-");
    let seen = server.seen.lock().unwrap();
    assert!(
        seen.iter().any(|s| s.path.ends_with(shard) && s.range.as_deref() == Some(resumed.as_str())),
        "{seen:?}"
    );
}

/// A body shorter than the file that still looks complete on the wire: the size check turns
/// it back into a partial download, which the next call resumes.
#[test]
fn a_short_file_is_caught_by_its_size_and_resumed() {
    let shard = "model-00001-of-00004.safetensors";
    let faults = Faults { short: Some((shard.into(), 1)), ..Faults::default() };
    let server = serve(vec![safetensors_repo()], faults);
    let cache = temp_cache("short");
    let opts = options(&server, &cache);
    let e = fetch(&opts, REPO).unwrap_err();
    let ModelError::HubInterrupted { done, total, .. } = e else { panic!("{e:?}") };
    assert_eq!(done, total / 2);
    nothing_taken(&cache);
    let path = fetch(&opts, REPO).unwrap();
    assert_eq!(logits(&path), logits(&fixtures().join("decoders/qwen2")));
    let resumed = format!("bytes={done}-");
    let seen = server.seen.lock().unwrap();
    assert!(
        seen.iter().any(|s| s.path.ends_with(shard) && s.range.as_deref() == Some(resumed.as_str())),
        "{seen:?}"
    );
}

#[test]
fn a_corrupt_file_is_removed_and_a_good_server_then_fills_the_cache() {
    let shard = "model-00002-of-00004.safetensors";
    let faults = Faults { corrupt: Some(shard.into()), ..Faults::default() };
    let server = serve(vec![safetensors_repo()], faults);
    let cache = temp_cache("corrupt");
    let e = fetch(&options(&server, &cache), REPO).unwrap_err();
    assert!(matches!(e, ModelError::HubCorrupt { .. }), "{e:?}");
    let text = e.to_string();
    assert!(text.contains(shard) && text.contains("sha256") && text.contains("removed"), "{text}");
    nothing_taken(&cache);
    let blobs: Vec<_> =
        std::fs::read_dir(cache.join("models--rlx-test--tiny-qwen2/blobs")).unwrap().flatten().collect();
    let bad_blob = rlx_test_support::hub_server::sha256_hex(
        &std::fs::read(fixtures().join("decoders/qwen2").join(shard)).unwrap(),
    );
    assert!(!blobs.iter().any(|b| b.file_name().to_string_lossy() == bad_blob), "the corrupt blob stayed");

    let good = serve(vec![safetensors_repo()], Faults::default());
    let path = fetch(&options(&good, &cache), REPO).unwrap();
    assert_eq!(logits(&path), logits(&fixtures().join("decoders/qwen2")));
}

#[test]
fn no_network_is_a_clear_error() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let opts = HubOptions {
        endpoint: format!("http://127.0.0.1:{port}"),
        cache: temp_cache("offline"),
        token: None,
    };
    let e = fetch(&opts, REPO).unwrap_err();
    assert!(matches!(e, ModelError::NoNetwork { .. }), "{e:?}");
    assert!(e.is_unreachable());
    assert!(e.to_string().contains("cannot reach the hub at http://127.0.0.1"), "{e}");
}

#[test]
fn local_paths_are_used_as_they_are_and_other_names_are_refused() {
    let dir = fixtures().join("decoders/qwen2");
    let spec = dir.to_str().unwrap();
    let noop = &mut |_: &str, _: u64, _: u64| {};
    assert_eq!(resolve_model(spec, None, ModelFiles::Decoder, noop).unwrap(), dir);
    let e = resolve_model(spec, Some("main"), ModelFiles::Decoder, noop).unwrap_err().to_string();
    assert!(e.contains("--revision main applies to hub names"), "{e}");
    let e = resolve_model("no such model", None, ModelFiles::Decoder, noop).unwrap_err().to_string();
    assert!(e.contains("not a hub repo id (owner/name"), "{e}");
}
