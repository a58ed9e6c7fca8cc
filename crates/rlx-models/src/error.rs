//! Every failure of loading, fetching or running a model, each naming the file or tensor at fault.

use std::path::PathBuf;

/// Errors of rlx-models.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A file or folder that cannot be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path read.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A file or folder that cannot be written (a saved model or checkpoint).
    #[error("cannot write {path}: {source}")]
    Write {
        /// The path written.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A JSON file that does not parse.
    #[error("{path}: invalid JSON: {source}")]
    Json {
        /// The JSON file.
        path: PathBuf,
        /// The underlying error.
        source: serde_json::Error,
    },
    /// A config file that parses but holds something rlx cannot use.
    #[error("{path}: {reason}")]
    Config {
        /// The config file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A weight file that is not valid safetensors.
    #[error("{path}: not a valid safetensors file: {reason}")]
    Safetensors {
        /// The weight file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A GGUF file that is malformed, or lacks what was asked of it; `source` names the key
    /// or tensor and the numbers read.
    #[error("{path}: {source}")]
    Gguf {
        /// The GGUF file.
        path: PathBuf,
        /// What is wrong, naming the key or tensor.
        source: crate::common::gguf::GgufError,
    },
    /// A weight the config needs that the checkpoint lacks.
    #[error(
        "weights: tensor '{name}' is missing (also looked for '{alt}'); the config needs shape {expected:?}"
    )]
    MissingTensor {
        /// The tensor's name.
        name: String,
        /// The other name looked for.
        alt: String,
        /// The shape the config needs.
        expected: Vec<usize>,
    },
    /// A weight whose shape is not the one the config needs.
    #[error("weights: tensor '{name}' has shape {got:?} but the config needs shape {expected:?}")]
    WrongShape {
        /// The tensor's name.
        name: String,
        /// The shape the config needs.
        expected: Vec<usize>,
        /// The tensor's shape.
        got: Vec<usize>,
    },
    /// A weight of a dtype rlx does not load.
    #[error("weights: tensor '{name}' has dtype {dtype}; accepted dtypes are F32, F16 and BF16")]
    UnsupportedDType {
        /// The tensor's name.
        name: String,
        /// The dtype found.
        dtype: String,
    },
    /// A weight with fewer bytes than its shape needs.
    #[error("weights: tensor '{name}' holds {got} bytes but shape {shape:?} of {dtype} needs {expected}")]
    TruncatedTensor {
        /// The tensor's name.
        name: String,
        /// The shape.
        shape: Vec<usize>,
        /// Its dtype.
        dtype: String,
        /// Bytes the shape needs.
        expected: usize,
        /// Bytes the file holds.
        got: usize,
    },
    /// A tokenizer file that cannot be used.
    #[error("tokenizer {path}: {reason}")]
    Tokenizer {
        /// The tokenizer file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The tokenizer failed on the input.
    #[error("tokenizing the input: {reason}")]
    Tokenize {
        /// What is wrong.
        reason: String,
    },
    /// Chat formatting was asked of a model that ships no chat template; `looked` lists where.
    #[error(
        "{path}: no chat template here (looked for {looked}); this model has no chat format to apply: drop --chat and write the prompt as the model expects it"
    )]
    NoChatTemplate {
        /// The model folder or file.
        path: PathBuf,
        /// Where the template was looked for.
        looked: String,
    },
    /// A chat template that does not parse; `line` is the line within the template text.
    #[error("{path}: chat template{}: {reason}", .line.map(|l| format!(" line {l}")).unwrap_or_default())]
    ChatTemplateSyntax {
        /// Where the template came from.
        path: PathBuf,
        /// The line within the template, when known.
        line: Option<usize>,
        /// What is wrong.
        reason: String,
    },
    /// A chat template that parses but fails on these messages (its own `raise_exception`, a
    /// method it calls that does not exist, …).
    #[error("{path}: rendering the chat template: {reason}")]
    ChatTemplateRender {
        /// Where the template came from.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A folder without the model's files.
    #[error("{dir}: no model here (missing {missing}); run `rlx fetch all-minilm-l6-v2`, pass a directory holding config.json, model.safetensors and tokenizer.json, or name a hub repo (owner/name)")]
    NoModel {
        /// The folder looked in.
        dir: PathBuf,
        /// The files missing.
        missing: String,
    },
    /// A model name that is neither built in nor a hub repo.
    #[error("unknown model '{name}'; known models: {known}, or a Hugging Face hub repo (owner/name, or owner/name-GGUF:QUANT for one GGUF file)")]
    UnknownModel {
        /// The name given.
        name: String,
        /// The names that are known.
        known: String,
    },
    /// Neither XDG_CACHE_HOME nor HOME is set.
    #[error("cannot find a cache directory: set XDG_CACHE_HOME (or HOME)")]
    NoCacheDir,
    /// The package index cannot be reached.
    #[error("cannot reach {url}: {reason}")]
    Unreachable {
        /// The address.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// A download that failed.
    #[error("download of {url} failed: {reason}")]
    Download {
        /// The address.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// A download whose hash is not the one listed.
    #[error("{url}: sha256 mismatch: the index says {expected}, the download has {got}")]
    Checksum {
        /// The address.
        url: String,
        /// The hash the index lists.
        expected: String,
        /// The hash of the download.
        got: String,
    },
    /// `--model` names neither an existing file or folder nor a hub repo id.
    #[error("model '{name}': {reason}")]
    BadModelName {
        /// The name given.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// The hub has no such repo (or no such revision of it).
    #[error("{endpoint} has no model repo '{repo}' at revision '{revision}' (and there is no local file or folder of that name); check the name (owner/name) and --revision")]
    HubRepoNotFound {
        /// The hub's address (HF_ENDPOINT or the default).
        endpoint: String,
        /// The repo (`owner/name`).
        repo: String,
        /// The revision asked for.
        revision: String,
    },
    /// The repo lacks a file the model needs.
    #[error("{repo} (revision {revision}) has no file '{file}': {hint}")]
    HubFileMissing {
        /// The repo (`owner/name`).
        repo: String,
        /// The branch, tag or commit.
        revision: String,
        /// The file within the repo.
        file: String,
        /// What to do about it.
        hint: String,
    },
    /// 401 or 403: a private or gated repo (the hub also answers 401 for a repo that does
    /// not exist when no token is sent).
    #[error("{repo}: the hub answered HTTP {status} for {what}: the repo is private or gated (or does not exist); set HF_TOKEN to an access token that can read it")]
    HubAuth {
        /// The repo (`owner/name`).
        repo: String,
        /// The HTTP status.
        status: u16,
        /// What was asked for.
        what: String,
    },
    /// A `:TAG` that picks no .gguf file of the repo, or several.
    #[error("{repo}: {reason}")]
    HubPick {
        /// The repo (`owner/name`).
        repo: String,
        /// What is wrong.
        reason: String,
    },
    /// A download cut off part-way; what arrived is kept to resume from.
    #[error("{repo}: the download of {file} stopped after {done} of {total} bytes ({reason}); run the same command again to resume it")]
    HubInterrupted {
        /// The repo (`owner/name`).
        repo: String,
        /// The file within the repo.
        file: String,
        /// Bytes received.
        done: u64,
        /// Bytes expected.
        total: u64,
        /// What is wrong.
        reason: String,
    },
    /// A downloaded file whose size or hash is not what the hub lists; it was removed.
    #[error("{repo}: {file} arrived corrupt ({reason}); it was removed from the cache, run the command again to download it anew")]
    HubCorrupt {
        /// The repo (`owner/name`).
        repo: String,
        /// The file within the repo.
        file: String,
        /// What is wrong.
        reason: String,
    },
    /// The hub cannot be reached at all.
    #[error("cannot reach the hub at {endpoint} ({reason}); check the network connection (or HF_ENDPOINT), or use a model already in the cache (`rlx models` lists them)")]
    NoNetwork {
        /// The hub's address (HF_ENDPOINT or the default).
        endpoint: String,
        /// What is wrong.
        reason: String,
    },
    /// Any other failure talking to the hub.
    #[error("{repo}: {reason}")]
    Hub {
        /// The repo (`owner/name`).
        repo: String,
        /// What is wrong.
        reason: String,
    },
    /// `rlx models --remove` / `rlx fetch --verify` of a name the cache does not hold.
    #[error("'{name}' is not in the cache; cached: {cached}")]
    NotCached {
        /// The name given.
        name: String,
        /// The names the cache holds.
        cached: String,
    },
    /// A model archive that cannot be unpacked.
    #[error("archive {path}: {reason}")]
    Archive {
        /// The archive.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A batch size of 0.
    #[error("the batch size must be at least 1")]
    ZeroBatch,
    /// Input the model cannot take.
    #[error("invalid model input: {reason}")]
    InvalidInput {
        /// What is wrong.
        reason: String,
    },
    /// A NaN or an infinity where the model's output must be numbers (the logits a token is
    /// picked from): corrupt weights, or a computation that overflowed.
    #[error("the model produced NaN or infinite logits at position {position}; the weights may be corrupt (check the file, or `rlx fetch --verify` a cached model)")]
    NonFinite {
        /// The token position.
        position: usize,
    },
    /// A training step whose loss or gradients are NaN or infinite, without loss scaling.
    #[error("training step {step}: the loss ({loss}) or a gradient is NaN or infinite; the update was not applied and the weights are those before the step. Lower the learning rate, clip the gradients (StepOpts::clip_grad_norm), or enable loss scaling (TrainConfig::loss_scale)")]
    NonFiniteStep {
        /// The step's number, from 1.
        step: u64,
        /// The step's loss.
        loss: f32,
    },
    /// A training checkpoint that cannot be resumed from (`reason` names the tensor or setting
    /// and the fix).
    #[error("checkpoint {path}: {reason}")]
    TrainCheckpoint {
        /// The checkpoint file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A model output of the wrong size (a bug).
    #[error("the model produced {got} values for a batch of {batch} × {dim}")]
    OutputSize {
        /// The batch size.
        batch: usize,
        /// The values per item.
        dim: usize,
        /// The values produced.
        got: usize,
    },
    /// Compiling or running the model failed.
    #[error(transparent)]
    Runtime(#[from] rlx_runtime::Error),
    /// Building the model's graph failed.
    #[error(transparent)]
    Ir(#[from] rlx_ir::IrError),
}

impl ModelError {
    /// True when the package index could not be reached at all (no network, DNS failure,
    /// timeout), as opposed to a reachable index answering with an error or bad data.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, ModelError::Unreachable { .. } | ModelError::NoNetwork { .. })
    }

    /// [`ModelError::InvalidInput`]: input the model or a run cannot take, `reason` saying
    /// what is wrong and the fix.
    pub fn invalid(reason: impl Into<String>) -> Self {
        ModelError::InvalidInput { reason: reason.into() }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        ModelError::Io { path: path.into(), source }
    }
}

/// The result of every fallible rlx-models function.
pub type Result<T, E = ModelError> = std::result::Result<T, E>;
