//! What is cached, read from disk alone: the Hugging Face hub cache's layout
//! (`models--owner--name/{refs,snapshots,blobs}`, blobs named by their etag: the sha256 of an
//! LFS file, the git blob sha1 of a small one) and rlx's own model folders
//! ([`super::fetch`]). Finding a revision's snapshot and whether it holds a whole model,
//! picking a GGUF file by quant tag, checking blobs against their names, and the listing,
//! removal and re-verification behind `rlx models` and `rlx fetch --verify`.

use super::fetch::{is_complete, known_model, models_cache_dir, verify_fetched};
use super::hub::{HubName, HubOptions, ModelFiles};
use crate::error::{ModelError, Result};
use sha1::Sha1;
use sha2::{Digest, Sha256};
use std::fs::{self, File};
use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// Deepest folder nesting walked inside a snapshot.
const MAX_DEPTH: usize = 8;

/// `name` as a path relative to a folder, with no `..`, root or prefix; `None` otherwise.
pub fn safe_relative(name: &str) -> Option<PathBuf> {
    let p = Path::new(name);
    let ok = !name.is_empty() && p.components().all(|c| matches!(c, Component::Normal(_)));
    ok.then(|| p.to_path_buf())
}

/// The cache folder of `repo`: `models--owner--name`.
pub fn repo_dir(cache: &Path, repo: &str) -> PathBuf {
    cache.join(format!("models--{}", repo.replace('/', "--")))
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.chars().all(|c| c.is_ascii_hexdigit())
}

/// The snapshot folder of `revision` (a commit id, or a ref the cache recorded), when there.
pub fn snapshot_dir(cache: &Path, repo: &str, revision: &str) -> Option<PathBuf> {
    let dir = repo_dir(cache, repo);
    if is_hex(revision, 40) && dir.join("snapshots").join(revision).is_dir() {
        return Some(dir.join("snapshots").join(revision));
    }
    let commit = fs::read_to_string(dir.join("refs").join(safe_relative(revision)?)).ok()?;
    let commit = commit.trim();
    let snapshot = dir.join("snapshots").join(safe_relative(commit)?);
    snapshot.is_dir().then_some(snapshot)
}

/// The one .gguf file of `files` whose name carries `tag` (case-insensitive, bounded by the
/// name's start, `-`, `.` or `_` before it and its end, `-` or `.` after it); none or several
/// is an error listing them.
pub fn pick_gguf(repo: &str, tag: &str, files: &[String]) -> Result<String> {
    let tag_l = tag.to_ascii_lowercase();
    let carries = |file: &str| {
        let base = file.rsplit('/').next().unwrap_or(file).to_ascii_lowercase();
        let stem = base.strip_suffix(".gguf").unwrap_or(&base);
        stem.match_indices(&tag_l).any(|(at, m)| {
            let before = stem[..at].chars().next_back();
            let after = stem[at + m.len()..].chars().next();
            before.is_none_or(|c| matches!(c, '-' | '.' | '_'))
                && after.is_none_or(|c| matches!(c, '-' | '.'))
        })
    };
    let picked: Vec<&String> = files.iter().filter(|f| carries(f)).collect();
    let listed = if files.is_empty() { "none".to_string() } else { files.join(", ") };
    match picked.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(ModelError::HubPick {
            repo: repo.to_string(),
            reason: format!("no .gguf file carries the quant tag '{tag}'; its .gguf files: {listed}"),
        }),
        many => Err(ModelError::HubPick {
            repo: repo.to_string(),
            reason: format!(
                "{} .gguf files carry the quant tag '{tag}' ({}); rlx loads one file: name a tag that picks one",
                many.len(),
                many.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
            ),
        }),
    }
}

/// Every file under `dir` as (relative path with `/`, full path), sorted; links followed.
pub fn files_in(dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    let mut todo = vec![(dir.to_path_buf(), String::new(), 0usize)];
    while let Some((folder, prefix, depth)) = todo.pop() {
        for entry in fs::read_dir(&folder).map_err(|e| ModelError::io(&folder, e))? {
            let entry = entry.map_err(|e| ModelError::io(&folder, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = if prefix.is_empty() { name } else { format!("{prefix}/{name}") };
            let path = entry.path();
            if path.is_dir() && depth < MAX_DEPTH {
                todo.push((path, rel, depth + 1));
            } else if !path.is_dir() {
                out.push((rel, path));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The model path inside `snapshot` when it holds the whole model `name` needs, else `None`.
pub fn complete_local(snapshot: &Path, name: &HubName, files: ModelFiles) -> Result<Option<PathBuf>> {
    if let Some(tag) = &name.quant {
        let ggufs: Vec<String> = files_in(snapshot)?
            .into_iter()
            .filter(|(rel, path)| rel.to_ascii_lowercase().ends_with(".gguf") && path.is_file())
            .map(|(rel, _)| rel)
            .collect();
        if ggufs.is_empty() {
            return Ok(None);
        }
        return Ok(pick_gguf(&name.repo, tag, &ggufs).ok().map(|f| snapshot.join(f)));
    }
    let has = |f: &str| snapshot.join(f).is_file();
    if !has("config.json") || (files == ModelFiles::Embedder && !has("tokenizer.json")) {
        return Ok(None);
    }
    if has("model.safetensors") {
        return Ok(Some(snapshot.to_path_buf()));
    }
    let index = snapshot.join("model.safetensors.index.json");
    let Ok(text) = fs::read_to_string(&index) else { return Ok(None) };
    let Ok(doc) = serde_json::from_str::<serde_json::Value>(&text) else { return Ok(None) };
    let Some(map) = doc.get("weight_map").and_then(|m| m.as_object()) else { return Ok(None) };
    let whole = files == ModelFiles::Decoder
        && map
            .values()
            .all(|v| v.as_str().and_then(safe_relative).is_some_and(|f| snapshot.join(f).is_file()));
    Ok(whole.then(|| snapshot.to_path_buf()))
}

/// What is wrong with a blob against its etag (64 hex digits: the sha256; 40: the git blob
/// sha1; `None`: the blob's own file name); `None` when it matches or cannot be checked.
pub fn blob_problem(blob: &Path, etag: Option<&str>) -> Result<Option<String>> {
    let name = blob.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let want = etag.unwrap_or(&name).to_ascii_lowercase();
    let size = fs::metadata(blob).map_err(|e| ModelError::io(blob, e))?.len();
    let got = if is_hex(&want, 64) {
        hash_file(blob, Sha256::new())?
    } else if is_hex(&want, 40) {
        let mut h = Sha1::new();
        h.update(format!("blob {size}\0").as_bytes());
        hash_file(blob, h)?
    } else {
        return Ok(None);
    };
    let kind = if want.len() == 64 { "sha256" } else { "git sha1" };
    Ok((got != want).then(|| format!("{kind} {got}, the hub lists {want}")))
}

fn hash_file<D: Digest>(path: &Path, mut hasher: D) -> Result<String> {
    let mut f = File::open(path).map_err(|e| ModelError::io(path, e))?;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf).map_err(|e| ModelError::io(path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(buf.get(..n).unwrap_or(&[]));
    }
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// One cached model, as `rlx models` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachedModel {
    /// What `--model` / `rlx fetch` take: a built-in name or `owner/name`.
    pub name: String,
    /// The built-in model's version, or the hub refs and commit of this snapshot.
    pub revision: String,
    /// Bytes on disk.
    pub bytes: u64,
    /// The model's folder (a hub snapshot or rlx's own folder).
    pub path: PathBuf,
}

fn total_size(dir: &Path) -> Result<u64> {
    Ok(files_in(dir)?.iter().filter_map(|(_, p)| fs::metadata(p).ok()).map(|m| m.len()).sum())
}

/// Everything cached: rlx's own model folders (`rlx_models`, when known) and each snapshot of
/// the hub cache `hub`, sorted by name.
pub fn list_cached_in(rlx_models: Option<&Path>, hub: &Path) -> Result<Vec<CachedModel>> {
    let mut out = Vec::new();
    if let Some(dir) = rlx_models.filter(|d| d.is_dir()) {
        for entry in fs::read_dir(dir).map_err(|e| ModelError::io(dir, e))?.flatten() {
            let (name, path) = (entry.file_name().to_string_lossy().into_owned(), entry.path());
            if name.starts_with('.') || !path.is_dir() {
                continue;
            }
            let version =
                known_model(&name).map(|m| m.version.to_string()).unwrap_or_else(|_| "-".to_string());
            let revision = if is_complete(&path) { version } else { format!("{version} (incomplete)") };
            out.push(CachedModel { name, revision, bytes: total_size(&path)?, path });
        }
    }
    if hub.is_dir() {
        for entry in fs::read_dir(hub).map_err(|e| ModelError::io(hub, e))?.flatten() {
            let folder = entry.file_name().to_string_lossy().into_owned();
            let Some(repo) = folder.strip_prefix("models--") else { continue };
            let name = repo.replacen("--", "/", 1);
            let refs: Vec<(String, String)> = files_in(&entry.path().join("refs"))
                .unwrap_or_default()
                .into_iter()
                .filter_map(|(r, p)| Some((r, fs::read_to_string(p).ok()?.trim().to_string())))
                .collect();
            let Ok(snapshots) = fs::read_dir(entry.path().join("snapshots")) else { continue };
            for snap in snapshots.flatten() {
                let commit = snap.file_name().to_string_lossy().into_owned();
                let names: Vec<&str> = refs
                    .iter()
                    .filter(|(r, c)| *c == commit && *r != commit)
                    .map(|(r, _)| r.as_str())
                    .collect();
                let short = commit.get(..12).unwrap_or(&commit);
                let revision = if names.is_empty() {
                    short.to_string()
                } else {
                    format!("{} ({short})", names.join(", "))
                };
                let path = snap.path();
                out.push(CachedModel { name: name.clone(), revision, bytes: total_size(&path)?, path });
            }
        }
    }
    out.sort_by(|a, b| (&a.name, &a.revision).cmp(&(&b.name, &b.revision)));
    Ok(out)
}

/// [`list_cached_in`] of rlx's cache folder and the hub cache [`HubOptions::from_env`] names.
pub fn list_cached() -> Result<Vec<CachedModel>> {
    list_cached_in(models_cache_dir().ok().as_deref(), &HubOptions::from_env()?.cache)
}

fn not_cached(name: &str, rlx_models: Option<&Path>, hub: &Path) -> ModelError {
    let mut names: Vec<String> =
        list_cached_in(rlx_models, hub).unwrap_or_default().into_iter().map(|m| m.name).collect();
    names.dedup();
    let cached = if names.is_empty() { "nothing".to_string() } else { names.join(", ") };
    ModelError::NotCached { name: name.to_string(), cached }
}

/// Where `name` is cached: an rlx model folder, or a hub repo's folder (`owner/name`; a `:TAG`
/// is kept in the returned name).
fn cached_folder(name: &str, rlx_models: Option<&Path>, hub: &Path) -> Option<(PathBuf, Option<HubName>)> {
    if let Some(dir) = rlx_models.zip(safe_relative(name)).map(|(d, n)| d.join(n)) {
        if !name.contains('/') && dir.is_dir() {
            return Some((dir, None));
        }
    }
    let hub_name = HubName::parse(name)?;
    let dir = repo_dir(hub, &hub_name.repo);
    dir.is_dir().then_some((dir, Some(hub_name)))
}

/// Removes `name` from the cache: an rlx model folder, or every revision of a hub repo.
/// Returns the folder removed; a name the cache does not hold is [`ModelError::NotCached`].
pub fn remove_cached_in(name: &str, rlx_models: Option<&Path>, hub: &Path) -> Result<PathBuf> {
    if let Some(tag) = HubName::parse(name).and_then(|n| n.quant) {
        let reason = format!(
            "removal takes the repo (owner/name, without :{tag}); it removes every file and revision"
        );
        return Err(ModelError::BadModelName { name: name.to_string(), reason });
    }
    let (dir, _) = cached_folder(name, rlx_models, hub).ok_or_else(|| not_cached(name, rlx_models, hub))?;
    fs::remove_dir_all(&dir).map_err(|e| ModelError::io(&dir, e))?;
    Ok(dir)
}

/// [`remove_cached_in`] of the caches the environment names.
pub fn remove_cached(name: &str) -> Result<PathBuf> {
    remove_cached_in(name, models_cache_dir().ok().as_deref(), &HubOptions::from_env()?.cache)
}

/// What `rlx fetch --verify` found: the folder checked, the files read, and each problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    /// The folder checked.
    pub path: PathBuf,
    /// How many files were read.
    pub files: usize,
    /// What is wrong, one line each (empty when nothing is).
    pub problems: Vec<String>,
}

/// Re-checks cached `name` (at `revision`, for a hub repo): an rlx folder against its
/// marker's hashes; a hub snapshot's every file against the hash its blob is named by, and
/// that it holds a whole model.
pub fn verify_cached_in(
    name: &str,
    revision: &str,
    rlx_models: Option<&Path>,
    hub: &Path,
) -> Result<Verified> {
    let (dir, hub_name) =
        cached_folder(name, rlx_models, hub).ok_or_else(|| not_cached(name, rlx_models, hub))?;
    let Some(hub_name) = hub_name else {
        let problems = verify_fetched(&dir)?;
        let files = files_in(&dir)?.len().saturating_sub(1);
        return Ok(Verified { path: dir, files, problems });
    };
    let snapshot = snapshot_dir(hub, &hub_name.repo, revision).ok_or_else(|| ModelError::NotCached {
        name: format!("{name} at revision {revision}"),
        cached: format!("see `rlx models` for the cached revisions of {}", hub_name.repo),
    })?;
    let mut problems = Vec::new();
    let files = files_in(&snapshot)?;
    for (rel, path) in &files {
        match fs::canonicalize(path) {
            Err(_) => problems.push(format!("{rel}: its blob is missing (a dangling link)")),
            Ok(blob) => {
                if let Some(p) = blob_problem(&blob, None)? {
                    problems.push(format!("{rel}: {p}"));
                }
            }
        }
    }
    for kind in [ModelFiles::Decoder, ModelFiles::Embedder] {
        if complete_local(&snapshot, &hub_name, kind).unwrap_or(None).is_some() {
            return Ok(Verified { path: snapshot, files: files.len(), problems });
        }
    }
    problems.push(
        "the snapshot does not hold a whole model (config.json and the weights, or the tagged .gguf file)"
            .into(),
    );
    Ok(Verified { path: snapshot, files: files.len(), problems })
}

/// [`verify_cached_in`] of the caches the environment names.
pub fn verify_cached(name: &str, revision: &str) -> Result<Verified> {
    verify_cached_in(name, revision, models_cache_dir().ok().as_deref(), &HubOptions::from_env()?.cache)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quant_tags_pick_whole_parts_of_the_name() {
        let files: Vec<String> = ["m-q4_k_m.gguf", "m-Q4_K_S.gguf", "m-q8_0.gguf", "sub/m_Q6_K.gguf"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(pick_gguf("r", "Q4_K_M", &files).unwrap(), "m-q4_k_m.gguf");
        assert_eq!(pick_gguf("r", "q6_k", &files).unwrap(), "sub/m_Q6_K.gguf");
        let none = pick_gguf("r", "Q4_K", &files).unwrap_err().to_string();
        assert!(
            none.contains("no .gguf file carries the quant tag 'Q4_K'") && none.contains("m-q8_0.gguf"),
            "{none}"
        );
        let two = vec!["a-Q8_0-00001-of-00002.gguf".to_string(), "a-Q8_0-00002-of-00002.gguf".to_string()];
        assert!(pick_gguf("r", "Q8_0", &two).unwrap_err().to_string().contains("2 .gguf files"));
    }

    #[test]
    fn only_plain_relative_names_are_safe() {
        assert!(safe_relative("1_Pooling/config.json").is_some());
        for bad in ["", "../x", "a/../../b", "/etc/passwd"] {
            assert!(safe_relative(bad).is_none(), "{bad}");
        }
    }
}
