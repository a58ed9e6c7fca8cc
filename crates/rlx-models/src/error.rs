//! Every failure of loading, fetching or running a model, each naming the file or tensor at fault.

use std::path::PathBuf;

/// Errors of rlx-models.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("cannot read {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: invalid JSON: {source}")]
    Json { path: PathBuf, source: serde_json::Error },
    #[error("{path}: {reason}")]
    Config { path: PathBuf, reason: String },
    #[error("{path}: not a valid safetensors file: {reason}")]
    Safetensors { path: PathBuf, reason: String },
    /// A GGUF file that is malformed, or lacks what was asked of it; `source` names the key
    /// or tensor and the numbers read.
    #[error("{path}: {source}")]
    Gguf { path: PathBuf, source: crate::common::gguf::GgufError },
    #[error(
        "weights: tensor '{name}' is missing (also looked for '{alt}'); the config needs shape {expected:?}"
    )]
    MissingTensor { name: String, alt: String, expected: Vec<usize> },
    #[error("weights: tensor '{name}' has shape {got:?} but the config needs shape {expected:?}")]
    WrongShape { name: String, expected: Vec<usize>, got: Vec<usize> },
    #[error("weights: tensor '{name}' has dtype {dtype}; accepted dtypes are F32, F16 and BF16")]
    UnsupportedDType { name: String, dtype: String },
    #[error("weights: tensor '{name}' holds {got} bytes but shape {shape:?} of {dtype} needs {expected}")]
    TruncatedTensor { name: String, shape: Vec<usize>, dtype: String, expected: usize, got: usize },
    #[error("tokenizer {path}: {reason}")]
    Tokenizer { path: PathBuf, reason: String },
    #[error("tokenizing the input: {reason}")]
    Tokenize { reason: String },
    /// Chat formatting was asked of a model that ships no chat template; `looked` lists where.
    #[error(
        "{path}: no chat template here (looked for {looked}); this model has no chat format to apply: drop --chat and write the prompt as the model expects it"
    )]
    NoChatTemplate { path: PathBuf, looked: String },
    /// A chat template that does not parse; `line` is the line within the template text.
    #[error("{path}: chat template{}: {reason}", .line.map(|l| format!(" line {l}")).unwrap_or_default())]
    ChatTemplateSyntax { path: PathBuf, line: Option<usize>, reason: String },
    /// A chat template that parses but fails on these messages (its own `raise_exception`, a
    /// method it calls that does not exist, …).
    #[error("{path}: rendering the chat template: {reason}")]
    ChatTemplateRender { path: PathBuf, reason: String },
    #[error("{dir}: no model here (missing {missing}); run `rlx fetch all-minilm-l6-v2`, pass a directory holding config.json, model.safetensors and tokenizer.json, or name a hub repo (owner/name)")]
    NoModel { dir: PathBuf, missing: String },
    #[error("unknown model '{name}'; known models: {known}, or a Hugging Face hub repo (owner/name, or owner/name-GGUF:QUANT for one GGUF file)")]
    UnknownModel { name: String, known: String },
    #[error("cannot find a cache directory: set XDG_CACHE_HOME (or HOME)")]
    NoCacheDir,
    #[error("cannot reach {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("download of {url} failed: {reason}")]
    Download { url: String, reason: String },
    #[error("{url}: sha256 mismatch: the index says {expected}, the download has {got}")]
    Checksum { url: String, expected: String, got: String },
    /// `--model` names neither an existing file or folder nor a hub repo id.
    #[error("model '{name}': {reason}")]
    BadModelName { name: String, reason: String },
    /// The hub has no such repo (or no such revision of it).
    #[error("{endpoint} has no model repo '{repo}' at revision '{revision}' (and there is no local file or folder of that name); check the name (owner/name) and --revision")]
    HubRepoNotFound { endpoint: String, repo: String, revision: String },
    /// The repo lacks a file the model needs.
    #[error("{repo} (revision {revision}) has no file '{file}': {hint}")]
    HubFileMissing { repo: String, revision: String, file: String, hint: String },
    /// 401 or 403: a private or gated repo (the hub also answers 401 for a repo that does
    /// not exist when no token is sent).
    #[error("{repo}: the hub answered HTTP {status} for {what}: the repo is private or gated (or does not exist); set HF_TOKEN to an access token that can read it")]
    HubAuth { repo: String, status: u16, what: String },
    /// A `:TAG` that picks no .gguf file of the repo, or several.
    #[error("{repo}: {reason}")]
    HubPick { repo: String, reason: String },
    /// A download cut off part-way; what arrived is kept to resume from.
    #[error("{repo}: the download of {file} stopped after {done} of {total} bytes ({reason}); run the same command again to resume it")]
    HubInterrupted { repo: String, file: String, done: u64, total: u64, reason: String },
    /// A downloaded file whose size or hash is not what the hub lists; it was removed.
    #[error("{repo}: {file} arrived corrupt ({reason}); it was removed from the cache, run the command again to download it anew")]
    HubCorrupt { repo: String, file: String, reason: String },
    /// The hub cannot be reached at all.
    #[error("cannot reach the hub at {endpoint} ({reason}); check the network connection (or HF_ENDPOINT), or use a model already in the cache (`rlx models` lists them)")]
    NoNetwork { endpoint: String, reason: String },
    /// Any other failure talking to the hub.
    #[error("{repo}: {reason}")]
    Hub { repo: String, reason: String },
    /// `rlx models --remove` / `rlx fetch --verify` of a name the cache does not hold.
    #[error("'{name}' is not in the cache; cached: {cached}")]
    NotCached { name: String, cached: String },
    #[error("archive {path}: {reason}")]
    Archive { path: PathBuf, reason: String },
    #[error("the batch size must be at least 1")]
    ZeroBatch,
    #[error("invalid model input: {reason}")]
    InvalidInput { reason: String },
    /// A NaN or an infinity where the model's output must be numbers (the logits a token is
    /// picked from): corrupt weights, or a computation that overflowed.
    #[error("the model produced NaN or infinite logits at position {position}; the weights may be corrupt (check the file, or `rlx fetch --verify` a cached model)")]
    NonFinite { position: usize },
    #[error("the model produced {got} values for a batch of {batch} × {dim}")]
    OutputSize { batch: usize, dim: usize, got: usize },
    #[error(transparent)]
    Runtime(#[from] rlx_runtime::Error),
    #[error(transparent)]
    Ir(#[from] rlx_ir::IrError),
}

impl ModelError {
    /// True when the package index could not be reached at all (no network, DNS failure,
    /// timeout), as opposed to a reachable index answering with an error or bad data.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, ModelError::Unreachable { .. } | ModelError::NoNetwork { .. })
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        ModelError::Io { path: path.into(), source }
    }
}

pub type Result<T, E = ModelError> = std::result::Result<T, E>;
