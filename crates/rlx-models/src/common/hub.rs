//! Models by name: a `--model` that is not a local file or folder is a Hugging Face hub repo
//! id, downloaded into the hub's standard cache (the `hf-hub` crate's sync API and layout, the
//! one Python's `huggingface_hub` uses) and loaded from there.
//!
//! - `owner/name`: a safetensors checkpoint: config.json, the weights (model.safetensors, or
//!   the sharded index and every shard it names) and, when the repo has them, tokenizer.json,
//!   tokenizer_config.json, generation_config.json, chat_template.jinja,
//!   sentence_bert_config.json and 1_Pooling/config.json (a BERT embedder requires
//!   tokenizer.json and one model.safetensors).
//!   The snapshot folder is the model path.
//! - `owner/name-GGUF:Q4_K_M`: the one .gguf file whose name carries that quant tag
//!   (case-insensitive, as a whole `-`/`.`/`_`-bounded part of the name); none or several is an
//!   error listing the repo's .gguf files.
//! - A revision (branch, tag or commit) picks the snapshot; `main` by default.
//!
//! The cache comes first: a snapshot that already holds the model is used without the network.
//! Otherwise the repo's file list (`/api/models/{repo}/revision/{rev}?blobs=true`) gives each
//! file's size and hash, and every file is downloaded from that one commit. `HF_ENDPOINT`,
//! `HF_HOME` (or `HF_HUB_CACHE`) and `HF_TOKEN` are honoured ([`HubOptions::from_env`]).
//!
//! Nothing half-written is taken for a model: hf-hub writes `blobs/<etag>.part` and renames it
//! when the body is complete; each finished file is then checked against the listing (size,
//! and sha256 for LFS files or the git blob sha1 for small ones). A short file goes back to
//! `.part` and a cut connection leaves its `.part`, so the next call resumes it with an HTTP
//! Range request; a wrong size or hash removes the file. A file counts as cached only once its
//! snapshot link exists, which happens after the checks.

use super::hub_cache::{blob_problem, complete_local, pick_gguf, safe_relative, snapshot_dir};
use crate::error::{ModelError, Result};
use hf_hub::api::sync::{Api, ApiBuilder, ApiError, ApiRepo};
use hf_hub::api::Progress;
use hf_hub::{Cache, Repo, RepoType};
use serde::Deserialize;
use std::fs;
use std::path::{Path, PathBuf};

/// The hub used when `HF_ENDPOINT` is not set.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// Which files a model needs: a causal LM's or a BERT sentence embedder's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelFiles {
    /// A causal language model: config.json, weights, tokenizer.json (and generation_config.json when present).
    Decoder,
    /// A BERT sentence embedder: config.json, weights, tokenizer.json and the sentence-transformers files.
    Embedder,
}

/// A hub model name: the repo id and, for a GGUF repo, the quant tag after `:`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HubName {
    /// `owner/name`.
    pub repo: String,
    /// The GGUF quant tag after `:` (`Q4_K_M`), if any.
    pub quant: Option<String>,
}

impl HubName {
    /// `owner/name` or `owner/name:TAG`, each part of letters, digits, `-`, `_` and `.` (not
    /// starting with `.` or `-`); `None` for anything else.
    pub fn parse(text: &str) -> Option<HubName> {
        let (repo, quant) = match text.split_once(':') {
            Some((r, q)) => (r, Some(q)),
            None => (text, None),
        };
        let (owner, name) = repo.split_once('/')?;
        let part_ok = |p: &str| {
            !p.is_empty()
                && p.len() <= 96
                && !p.starts_with(['.', '-'])
                && !p.contains("..")
                && p.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        };
        if !part_ok(owner) || !part_ok(name) || quant.is_some_and(|q| !part_ok(q)) {
            return None;
        }
        Some(HubName { repo: repo.to_string(), quant: quant.map(str::to_string) })
    }
}

impl std::fmt::Display for HubName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.quant {
            Some(q) => write!(f, "{}:{q}", self.repo),
            None => f.write_str(&self.repo),
        }
    }
}

/// Where the hub is, where its cache is, and the token sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HubOptions {
    /// The hub's root URL, without a trailing `/`.
    pub endpoint: String,
    /// The hub cache folder (the one holding `models--owner--name` folders).
    pub cache: PathBuf,
    /// Sent as `Authorization: Bearer …`.
    pub token: Option<String>,
}

impl HubOptions {
    /// From the environment, as `huggingface_hub` reads it: `HF_ENDPOINT` (else
    /// [`DEFAULT_ENDPOINT`]); the cache `HF_HUB_CACHE`, else `$HF_HOME/hub`, else
    /// `huggingface/hub` in the user's cache folder; `HF_TOKEN`, else the token file
    /// `huggingface-cli login` writes beside the cache.
    pub fn from_env() -> Result<HubOptions> {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        let endpoint = std::env::var("HF_ENDPOINT").ok().filter(|v| !v.trim().is_empty());
        let endpoint =
            endpoint.unwrap_or_else(|| DEFAULT_ENDPOINT.to_string()).trim().trim_end_matches('/').to_string();
        let cache = match (var("HF_HUB_CACHE"), var("HF_HOME")) {
            (Some(c), _) => PathBuf::from(c),
            (None, Some(h)) => PathBuf::from(h).join("hub"),
            (None, None) => {
                rlx_backend::user_cache_dir().ok_or(ModelError::NoCacheDir)?.join("huggingface").join("hub")
            }
        };
        let token = std::env::var("HF_TOKEN").ok().map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
        let token = token.or_else(|| Cache::new(cache.clone()).token());
        Ok(HubOptions { endpoint, cache, token })
    }
}

/// Reports download progress: (file, bytes done, bytes in all).
pub type HubProgress<'a> = &'a mut dyn FnMut(&str, u64, u64);

/// The local path of the model `spec` names: an existing file or folder as it is (then
/// `revision` must be `None`), else a hub name fetched with [`HubOptions::from_env`].
pub fn resolve_model(
    spec: &str,
    revision: Option<&str>,
    files: ModelFiles,
    progress: HubProgress<'_>,
) -> Result<PathBuf> {
    let path = Path::new(spec);
    if path.exists() {
        if let Some(rev) = revision {
            let reason = format!("--revision {rev} applies to hub names, and this is a local path");
            return Err(ModelError::BadModelName { name: spec.to_string(), reason });
        }
        return Ok(path.to_path_buf());
    }
    let name = HubName::parse(spec).ok_or_else(|| ModelError::BadModelName {
        name: spec.to_string(),
        reason:
            "no such file or folder, and not a hub repo id (owner/name, or owner/name-GGUF:QUANT for a GGUF \
                 file)"
                .to_string(),
    })?;
    fetch_hub(&HubOptions::from_env()?, &name, revision.unwrap_or("main"), files, progress)
}

/// The repo's file list, as `/api/models/{repo}/revision/{rev}?blobs=true` gives it.
#[derive(Debug, Deserialize)]
struct Listing {
    sha: String,
    siblings: Vec<Sibling>,
}

#[derive(Clone, Debug, Deserialize)]
struct Sibling {
    rfilename: String,
    size: Option<u64>,
    #[serde(rename = "blobId")]
    blob_id: Option<String>,
    lfs: Option<Lfs>,
}

#[derive(Clone, Debug, Deserialize)]
struct Lfs {
    sha256: String,
    size: u64,
}

impl Sibling {
    fn size(&self) -> Option<u64> {
        self.lfs.as_ref().map(|l| l.size).or(self.size)
    }

    /// The etag the hub names this file's blob by: the LFS sha256, else the git blob id.
    fn etag(&self) -> Option<&str> {
        self.lfs.as_ref().map(|l| l.sha256.as_str()).or(self.blob_id.as_deref())
    }
}

/// Fetches `name` at `revision` into the cache `opts` names (cache first) and returns the
/// model path: the snapshot folder, or the .gguf file in it.
pub fn fetch_hub(
    opts: &HubOptions,
    name: &HubName,
    revision: &str,
    files: ModelFiles,
    progress: HubProgress<'_>,
) -> Result<PathBuf> {
    if let Some(snapshot) = snapshot_dir(&opts.cache, &name.repo, revision) {
        if let Some(found) = complete_local(&snapshot, name, files)? {
            return Ok(found);
        }
    }
    let hub = Hub::new(opts, name)?;
    let listing = hub.listing(revision)?;
    let wanted = plan(&listing, name, revision, files)?;
    let commit = Repo::with_revision(name.repo.clone(), RepoType::Model, listing.sha.clone());
    let api_repo = hub.api.repo(commit.clone());
    let cache_repo = Cache::new(opts.cache.clone()).repo(commit);
    let snapshot = cache_repo.pointer_path(&listing.sha);
    for sib in &wanted {
        hub.download(&api_repo, &cache_repo, &snapshot, sib, progress)?;
    }
    if !wanted.iter().any(|s| s.rfilename == "model.safetensors") && name.quant.is_none() {
        for sib in shards(&snapshot, &listing, name, revision)? {
            hub.download(&api_repo, &cache_repo, &snapshot, &sib, progress)?;
        }
    }
    let at_rev = Cache::new(opts.cache.clone()).repo(Repo::with_revision(
        name.repo.clone(),
        RepoType::Model,
        revision.to_string(),
    ));
    at_rev.create_ref(&listing.sha).map_err(|e| ModelError::io(&opts.cache, e))?;
    if revision != listing.sha {
        // hf-hub records the commit as a ref of itself; the hub's own tools never do.
        let _ = fs::remove_file(
            super::hub_cache::repo_dir(&opts.cache, &name.repo).join("refs").join(&listing.sha),
        );
    }
    complete_local(&snapshot, name, files)?.ok_or_else(|| ModelError::Hub {
        repo: name.repo.clone(),
        reason: format!("{} is still incomplete after the download", snapshot.display()),
    })
}

/// The files to download, in order: the small ones first and the weights last, so a snapshot
/// holding the weights holds everything else the repo offers.
fn plan(listing: &Listing, name: &HubName, revision: &str, files: ModelFiles) -> Result<Vec<Sibling>> {
    let find = |f: &str| listing.siblings.iter().find(|s| s.rfilename == f).cloned();
    let ggufs: Vec<String> = listing
        .siblings
        .iter()
        .map(|s| s.rfilename.clone())
        .filter(|f| f.to_ascii_lowercase().ends_with(".gguf"))
        .collect();
    if let Some(tag) = &name.quant {
        let file = pick_gguf(&name.repo, tag, &ggufs)?;
        return Ok(find(&file).into_iter().collect());
    }
    let missing = |file: &str, hint: String| ModelError::HubFileMissing {
        repo: name.repo.clone(),
        revision: revision.to_string(),
        file: file.to_string(),
        hint,
    };
    let gguf_hint = || match ggufs.is_empty() {
        true => {
            "a safetensors model needs config.json and model.safetensors (or model.safetensors.index.json)"
                .to_string()
        }
        false => format!(
            "this repo holds GGUF files; name one by its quant tag, e.g. {}:Q4_K_M ({})",
            name.repo,
            ggufs.join(", ")
        ),
    };
    let mut out = vec![find("config.json").ok_or_else(|| missing("config.json", gguf_hint()))?];
    if files == ModelFiles::Embedder {
        out.push(
            find("tokenizer.json")
                .ok_or_else(|| missing("tokenizer.json", "a sentence embedder needs its tokenizer".into()))?,
        );
    }
    // Small files either model kind reads when they are there, so one `rlx fetch` serves both.
    let optional = [
        "tokenizer.json",
        "tokenizer_config.json",
        "generation_config.json",
        "chat_template.jinja",
        "sentence_bert_config.json",
        "1_Pooling/config.json",
    ];
    out.extend(
        optional
            .into_iter()
            .filter(|f| !out.iter().any(|s| s.rfilename == *f))
            .filter_map(find)
            .collect::<Vec<_>>(),
    );
    match (find("model.safetensors"), find("model.safetensors.index.json")) {
        (Some(weights), _) => out.push(weights),
        (None, Some(index)) if files == ModelFiles::Decoder => out.push(index),
        _ => return Err(missing("model.safetensors", gguf_hint())),
    }
    Ok(out)
}

/// The shards the downloaded sharded index names, each of which the listing must have.
fn shards(snapshot: &Path, listing: &Listing, name: &HubName, revision: &str) -> Result<Vec<Sibling>> {
    let index = snapshot.join("model.safetensors.index.json");
    let text = fs::read_to_string(&index).map_err(|e| ModelError::io(&index, e))?;
    let doc: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| ModelError::Json { path: index.clone(), source: e })?;
    let map = doc.get("weight_map").and_then(|m| m.as_object()).ok_or_else(|| ModelError::Config {
        path: index.clone(),
        reason: "no weight_map object".to_string(),
    })?;
    let mut names: Vec<&str> = map.values().filter_map(|v| v.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .map(|f| {
            listing.siblings.iter().find(|s| s.rfilename == f).cloned().ok_or_else(|| {
                ModelError::HubFileMissing {
                    repo: name.repo.clone(),
                    revision: revision.to_string(),
                    file: f.to_string(),
                    hint: "model.safetensors.index.json names this shard".to_string(),
                }
            })
        })
        .collect()
}

/// One hub connection for one repo.
struct Hub {
    api: Api,
    endpoint: String,
    repo: String,
}

impl Hub {
    fn new(opts: &HubOptions, name: &HubName) -> Result<Hub> {
        let api = ApiBuilder::from_cache(Cache::new(opts.cache.clone()))
            .with_endpoint(opts.endpoint.clone())
            .with_token(opts.token.clone())
            .with_progress(false)
            .build()
            .map_err(|e| ModelError::Hub { repo: name.repo.clone(), reason: e.to_string() })?;
        Ok(Hub { api, endpoint: opts.endpoint.clone(), repo: name.repo.clone() })
    }

    /// A failed request: a status, or no connection at all.
    fn request_error(
        &self,
        e: ureq::Error,
        what: &str,
        not_found: impl FnOnce() -> ModelError,
    ) -> ModelError {
        match e {
            ureq::Error::StatusCode(404) => not_found(),
            ureq::Error::StatusCode(status @ (401 | 403)) => {
                ModelError::HubAuth { repo: self.repo.clone(), status, what: what.to_string() }
            }
            ureq::Error::StatusCode(status) => ModelError::Hub {
                repo: self.repo.clone(),
                reason: format!("HTTP status {status} for {what}"),
            },
            other => ModelError::NoNetwork { endpoint: self.endpoint.clone(), reason: other.to_string() },
        }
    }

    fn listing(&self, revision: &str) -> Result<Listing> {
        let repo = Repo::with_revision(self.repo.clone(), RepoType::Model, revision.to_string());
        let not_found = || ModelError::HubRepoNotFound {
            endpoint: self.endpoint.clone(),
            repo: self.repo.clone(),
            revision: revision.to_string(),
        };
        let what = "the repo's file list";
        let mut resp = self
            .api
            .repo(repo)
            .info_request()
            .query("blobs", "true")
            .call()
            .map_err(|e| self.request_error(e, what, not_found))?;
        let text = resp.body_mut().read_to_string().map_err(|e| self.request_error(e, what, not_found))?;
        let listing: Listing = serde_json::from_str(&text).map_err(|e| ModelError::Hub {
            repo: self.repo.clone(),
            reason: format!("the file list is not the hub's JSON ({e}); is HF_ENDPOINT a Hugging Face hub?"),
        })?;
        if listing.sha.is_empty() || !listing.sha.chars().all(|c| c.is_ascii_alphanumeric()) {
            let reason = format!("the hub names the commit '{}', which is no commit id", listing.sha);
            return Err(ModelError::Hub { repo: self.repo.clone(), reason });
        }
        if let Some(bad) = listing.siblings.iter().find(|s| safe_relative(&s.rfilename).is_none()) {
            let reason =
                format!("the repo lists the file '{}', a path outside the repo; refusing it", bad.rfilename);
            return Err(ModelError::Hub { repo: self.repo.clone(), reason });
        }
        Ok(listing)
    }

    /// Downloads one file into the snapshot unless it is there, then checks it.
    fn download(
        &self,
        api_repo: &ApiRepo,
        cache_repo: &hf_hub::CacheRepo,
        snapshot: &Path,
        sib: &Sibling,
        progress: HubProgress<'_>,
    ) -> Result<()> {
        let file = &sib.rfilename;
        let pointer = snapshot.join(file);
        if pointer.is_file() {
            return Ok(());
        }
        let total = sib.size().unwrap_or(0);
        let part = sib.etag().map(|etag| cache_repo.blob_path(etag).with_extension("part"));
        let adapter = Adapter { file, done: 0, total, progress };
        let got = api_repo.download_with_progress(file, adapter).map_err(|e| {
            let done = part.as_ref().and_then(|p| fs::metadata(p).ok()).map(|m| m.len());
            let interrupted = |reason: String| ModelError::HubInterrupted {
                repo: self.repo.clone(),
                file: file.clone(),
                done: done.unwrap_or(0),
                total,
                reason,
            };
            match e {
                ApiError::RequestError(e) => {
                    let missing = || ModelError::HubFileMissing {
                        repo: self.repo.clone(),
                        revision: "listed".to_string(),
                        file: file.clone(),
                        hint: "the repo lists it, but the hub answered 404 for it".to_string(),
                    };
                    match (*e, done) {
                        (ureq::Error::StatusCode(s), _) => {
                            self.request_error(ureq::Error::StatusCode(s), file, missing)
                        }
                        (other, Some(_)) => interrupted(other.to_string()),
                        (other, None) => self.request_error(other, file, missing),
                    }
                }
                ApiError::IoError(io) if done.is_some() => interrupted(io.to_string()),
                ApiError::InvalidResume => {
                    // A leftover partial file longer than the file itself: start over next time.
                    if let Some(p) = &part {
                        let _ = fs::remove_file(p);
                    }
                    let reason = "a leftover partial download was longer than the file".to_string();
                    ModelError::HubCorrupt { repo: self.repo.clone(), file: file.clone(), reason }
                }
                ApiError::IoError(io) => {
                    ModelError::io(cache_repo.blob_path(sib.etag().unwrap_or("unknown")), io)
                }
                other => ModelError::Hub {
                    repo: self.repo.clone(),
                    reason: format!("downloading {file}: {other}"),
                },
            }
        })?;
        self.check(&got, sib)
    }

    /// Checks a finished download against the listing; a short file goes back to `.part`
    /// (to resume), a wrong one is removed, and either way its snapshot link goes.
    fn check(&self, pointer: &Path, sib: &Sibling) -> Result<()> {
        let blob = fs::canonicalize(pointer).map_err(|e| ModelError::io(pointer, e))?;
        let size = fs::metadata(&blob).map_err(|e| ModelError::io(&blob, e))?.len();
        let file = sib.rfilename.clone();
        let drop_link = || {
            // The link goes first: without it the file does not count as cached.
            let _ = fs::remove_file(pointer);
        };
        if let Some(total) = sib.size().filter(|&t| size < t) {
            drop_link();
            let part = blob.with_extension("part");
            fs::rename(&blob, &part).map_err(|e| ModelError::io(&part, e))?;
            let reason = "the connection closed early".to_string();
            return Err(ModelError::HubInterrupted {
                repo: self.repo.clone(),
                file,
                done: size,
                total,
                reason,
            });
        }
        let problem = match sib.size().filter(|&t| size != t) {
            Some(t) => Some(format!("{size} bytes, the hub lists {t}")),
            None => blob_problem(&blob, sib.etag())?,
        };
        if let Some(reason) = problem {
            drop_link();
            let _ = fs::remove_file(&blob);
            return Err(ModelError::HubCorrupt { repo: self.repo.clone(), file, reason });
        }
        Ok(())
    }
}

/// hf-hub's progress callbacks as (file, done, total) reports.
struct Adapter<'a, 'p> {
    file: &'a str,
    done: u64,
    total: u64,
    progress: &'a mut (dyn FnMut(&str, u64, u64) + 'p),
}

impl Progress for Adapter<'_, '_> {
    fn init(&mut self, size: usize, _filename: &str) {
        self.done = 0;
        self.total = size as u64;
        (self.progress)(self.file, 0, self.total);
    }

    fn update(&mut self, size: usize) {
        self.done += size as u64;
        (self.progress)(self.file, self.done, self.total);
    }

    fn finish(&mut self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_into_repo_and_quant() {
        let n = HubName::parse("Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M").unwrap();
        assert_eq!(
            (n.repo.as_str(), n.quant.as_deref()),
            ("Qwen/Qwen2.5-0.5B-Instruct-GGUF", Some("Q4_K_M"))
        );
        assert_eq!(HubName::parse("Qwen/Qwen2.5-0.5B-Instruct").unwrap().quant, None);
        for bad in ["model", "a/b/c", "../x", "a/..", "/abs/path", "a/b:", "a/b c", "./a", "a/b:x/y", ""] {
            assert_eq!(HubName::parse(bad), None, "{bad}");
        }
    }
}
