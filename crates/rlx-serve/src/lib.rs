//! rlx-serve: an OpenAI-compatible HTTP server over rlx-models, the library behind `rlx serve`.
//!
//! Contract:
//! - [`start`] binds nothing itself: it takes a bound [`tokio::net::TcpListener`] and a
//!   [`ServeConfig`], starts one worker thread per model (each loads its model inside the
//!   thread, so a model need not be `Send`) and serves HTTP/1.1 on the listener at once.
//!   `GET /health` answers 503 until every model has loaded, then 200.
//! - Endpoints: `POST /v1/chat/completions` (the model's chat template; server-sent events
//!   when `stream`), `POST /v1/completions`, `POST /v1/embeddings` (batched across concurrent
//!   requests), `GET /v1/models`, `GET /health`, `GET /metrics` (Prometheus text).
//! - Generation runs in one worker ([`lm_worker`]): with `max_streams` above 1, up to that
//!   many requests are decoded together by continuous batching (they join and leave between
//!   decode steps); with 1, or for a model with no batched step (Mamba), one after another in
//!   admission order. At most `max_streams + queue` generation requests are admitted at once,
//!   more get 429 with `Retry-After`.
//! - Every refusal is an OpenAI-shaped error body ([`ApiError`]) and the server goes on: bad
//!   JSON or fields 400, a prompt or `max_tokens` past the context 400 naming the limit, a
//!   missing or wrong API key 401, a full queue 429, a body past the limit 413, a body that
//!   does not arrive in time 408 (headers that do not arrive in time close the connection), a
//!   model failure or a NaN in an embedding 500.
//! - A client that goes away mid-stream stops its generation at the next token.
//! - [`Running::shutdown`] stops accepting, lets in-flight requests finish up to
//!   `drain_timeout`, then returns.
//! - One `tracing` event per request (target `rlx_serve::request`: method, path, status,
//!   milliseconds).

mod answer;
pub mod api;
pub mod embed_worker;
pub mod error;
mod handlers;
mod lm_batch;
pub mod lm_worker;
pub mod metrics;
mod routes;
mod server;
pub mod text;

pub use embed_worker::BatchHook;
pub use error::ApiError;
pub use lm_worker::TokenHook;
pub use server::{start, Running, StartError};

use rlx_models::{Device, Precision};
use std::path::PathBuf;
use std::time::Duration;

/// Everything `rlx serve` is told.
#[derive(Clone)]
pub struct ServeConfig {
    /// The causal LM: a checkpoint directory or a `.gguf` file.
    pub model: Option<PathBuf>,
    /// The BERT-family embedder: a directory with config.json, model.safetensors and
    /// tokenizer.json.
    pub embedding_model: Option<PathBuf>,
    pub device: Device,
    pub precision: Precision,
    /// The KV cache's dtype (by default f16 under mixed and f16 precision, f32 under f32).
    pub kv_cache: rlx_models::KvCache,
    /// Generations decoded together (continuous batching; 1: one at a time).
    pub max_streams: usize,
    /// Requests that may wait beyond the running ones before new ones get 429.
    pub queue: usize,
    /// The context of each request: prompt and generated tokens together. `None` is the
    /// model's own, shared out among the streams when `max_streams` > 1 (see [`lm_worker`]);
    /// larger than the model's is refused at start.
    pub ctx_size: Option<usize>,
    /// When set, every `/v1/` request must carry `Authorization: Bearer KEY`.
    pub api_key: Option<String>,
    /// The most texts one encode call of the embedding worker takes.
    pub embed_batch: usize,
    /// The largest request body, in bytes (413 past it).
    pub body_limit: usize,
    /// How long a client may take to send the request headers (the connection is closed
    /// after) and the body (408 after).
    pub header_timeout: Duration,
    pub body_timeout: Duration,
    /// How long [`Running::shutdown`] waits for in-flight requests.
    pub drain_timeout: Duration,
    /// Test seams; `None` in use.
    pub token_hook: Option<TokenHook>,
    pub batch_hook: Option<BatchHook>,
}

impl ServeConfig {
    /// The defaults of `rlx serve`, for the given models.
    pub fn new(model: Option<PathBuf>, embedding_model: Option<PathBuf>) -> ServeConfig {
        ServeConfig {
            model,
            embedding_model,
            device: Device::Auto,
            precision: Precision::F32,
            kv_cache: rlx_models::KvCache::Auto,
            max_streams: 1,
            queue: 32,
            ctx_size: None,
            api_key: None,
            embed_batch: 256,
            body_limit: 4 << 20,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            drain_timeout: Duration::from_secs(30),
            token_hook: None,
            batch_hook: None,
        }
    }
}

/// The id a model is listed under: its file or folder name.
pub fn model_id(path: &std::path::Path) -> String {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if name.is_empty() {
        path.display().to_string()
    } else {
        name
    }
}
