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
    #[error("{dir}: no model here (missing {missing}); run `rlx fetch all-minilm-l6-v2` or pass a directory holding config.json, model.safetensors and tokenizer.json")]
    NoModel { dir: PathBuf, missing: String },
    #[error("unknown model '{name}'; known models: {known}")]
    UnknownModel { name: String, known: String },
    #[error("cannot find a cache directory: neither XDG_CACHE_HOME nor HOME is set")]
    NoCacheDir,
    #[error("cannot reach {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("download of {url} failed: {reason}")]
    Download { url: String, reason: String },
    #[error("{url}: sha256 mismatch: the index says {expected}, the download has {got}")]
    Checksum { url: String, expected: String, got: String },
    #[error("archive {path}: {reason}")]
    Archive { path: PathBuf, reason: String },
    #[error("the batch size must be at least 1")]
    ZeroBatch,
    #[error("invalid model input: {reason}")]
    InvalidInput { reason: String },
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
        matches!(self, ModelError::Unreachable { .. })
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        ModelError::Io { path: path.into(), source }
    }
}

pub type Result<T, E = ModelError> = std::result::Result<T, E>;
