//! The router: shared state, the request-log and API-key middleware, the JSON body extractor
//! (size limit, read timeout, OpenAI-shaped refusals), and the small endpoints (`/v1/models`,
//! `/health`, `/metrics`). Generation and embedding handlers live in [`crate::handlers`].

use crate::api::{now_secs, ModelCard, ModelList};
use crate::embed_worker::{EmbedInfo, EmbedJob};
use crate::error::ApiError;
use crate::lm_worker::{GenJob, TextSide};
use crate::metrics::Metrics;
use crate::ServeConfig;
use axum::extract::{FromRequest, Request, State as AxState};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::de::DeserializeOwned;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, OnceLock};
use std::time::Instant;
use tokio::sync::Semaphore;

/// The generation side once its model has loaded.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LmReady {
    /// Prompt and generated tokens together.
    pub ctx: usize,
    /// Token ids are `0..vocab` (for prompts given as ids).
    pub vocab: usize,
}

/// A model served by a worker: its id, admission slots and load status.
pub(crate) struct Served<Job, Ready> {
    pub id: String,
    pub jobs: Sender<Job>,
    pub slots: Arc<Semaphore>,
    pub capacity: usize,
    pub ready: OnceLock<Ready>,
    pub load_error: OnceLock<String>,
}

impl<Job, Ready: Copy> Served<Job, Ready> {
    pub fn new(id: String, jobs: Sender<Job>, capacity: usize) -> Served<Job, Ready> {
        Served {
            id,
            jobs,
            slots: Arc::new(Semaphore::new(capacity)),
            capacity,
            ready: OnceLock::new(),
            load_error: OnceLock::new(),
        }
    }

    /// The loaded model's facts, or 503 while it loads (or failed to).
    pub fn ready(&self) -> Result<Ready, ApiError> {
        if let Some(r) = self.ready.get() {
            return Ok(*r);
        }
        match self.load_error.get() {
            Some(e) => Err(ApiError::unavailable(format!("the model {} failed to load: {e}", self.id))),
            None => Err(ApiError::unavailable(format!(
                "the model {} is still loading; retry when GET /health answers 200",
                self.id
            ))),
        }
    }
}

/// What every handler shares.
pub(crate) struct AppState {
    pub config: ServeConfig,
    pub metrics: Arc<Metrics>,
    pub lm: Option<(Served<GenJob, LmReady>, Arc<TextSide>)>,
    pub embed: Option<Served<EmbedJob, EmbedInfo>>,
    next_id: AtomicU64,
}

pub(crate) type Shared = Arc<AppState>;

impl AppState {
    pub fn new(
        config: ServeConfig,
        metrics: Arc<Metrics>,
        lm: Option<(Served<GenJob, LmReady>, Arc<TextSide>)>,
        embed: Option<Served<EmbedJob, EmbedInfo>>,
    ) -> AppState {
        AppState { config, metrics, lm, embed, next_id: AtomicU64::new(1) }
    }

    /// A fresh response id with `prefix` (`chatcmpl`, `cmpl`).
    pub fn response_id(&self, prefix: &str) -> String {
        format!("{prefix}-{}", self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Whether every model has loaded.
    fn loaded(&self) -> bool {
        self.lm.as_ref().is_none_or(|(s, _)| s.ready.get().is_some())
            && self.embed.as_ref().is_none_or(|s| s.ready.get().is_some())
    }
}

pub(crate) fn router(state: Shared) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(crate::handlers::chat))
        .route("/v1/completions", post(crate::handlers::completions))
        .route("/v1/embeddings", post(crate::handlers::embeddings))
        .route("/v1/models", get(models))
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(state.clone(), auth))
        .layer(middleware::from_fn_with_state(state.clone(), log))
        .with_state(state)
}

/// The endpoint label of a path: the routes by name, everything else `other` (a bounded label
/// set whatever clients send).
fn endpoint(path: &str) -> &'static str {
    match path {
        "/v1/chat/completions" => "chat",
        "/v1/completions" => "completions",
        "/v1/embeddings" => "embeddings",
        "/v1/models" => "models",
        "/health" => "health",
        "/metrics" => "metrics",
        _ => "other",
    }
}

/// One log line and one counter increment per request.
async fn log(AxState(state): AxState<Shared>, req: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let response = next.run(req).await;
    let status = response.status();
    state.metrics.requests.with_label_values(&[endpoint(&path), status.as_str()]).inc();
    tracing::info!(
        target: "rlx_serve::request",
        method = %method,
        path = %path,
        status = status.as_u16(),
        ms = (start.elapsed().as_secs_f64() * 1e4).round() / 10.0,
        "request"
    );
    response
}

/// With an API key configured, `/v1/` requests must carry `Authorization: Bearer KEY`;
/// `/health` and `/metrics` stay open for load balancers and scrapers.
async fn auth(AxState(state): AxState<Shared>, req: Request, next: Next) -> Response {
    if let Some(key) = &state.config.api_key {
        if req.uri().path().starts_with("/v1/") {
            if let Err(e) = check_key(req.headers(), key) {
                return e.into_response();
            }
        }
    }
    next.run(req).await
}

fn check_key(headers: &HeaderMap, key: &str) -> Result<(), ApiError> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Err(ApiError::unauthorized(
            "no API key: this server needs the header Authorization: Bearer KEY (the key given to --api-key)",
        ));
    };
    let given = value.to_str().ok().and_then(|v| v.strip_prefix("Bearer ")).unwrap_or_default();
    // Compare every byte whatever the first mismatch, so timing does not tell the key.
    let same = given.len() == key.len()
        && given.bytes().zip(key.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0;
    if same {
        Ok(())
    } else {
        Err(ApiError::unauthorized("wrong API key in the Authorization header"))
    }
}

async fn not_found(req: Request) -> ApiError {
    ApiError::not_found(format!(
        "no route {} {}; this server has POST /v1/chat/completions, POST /v1/completions, POST \
         /v1/embeddings, GET /v1/models, GET /health and GET /metrics",
        req.method(),
        req.uri().path()
    ))
}

async fn models(AxState(state): AxState<Shared>) -> axum::Json<ModelList> {
    let created = now_secs();
    let ids = state.lm.iter().map(|(s, _)| s.id.clone()).chain(state.embed.iter().map(|s| s.id.clone()));
    let data = ids.map(|id| ModelCard { id, object: "model", created, owned_by: "rlx" }).collect();
    axum::Json(ModelList { object: "list", data })
}

async fn health(AxState(state): AxState<Shared>) -> Response {
    let failed = state
        .lm
        .as_ref()
        .and_then(|(s, _)| s.load_error.get())
        .or_else(|| state.embed.as_ref().and_then(|s| s.load_error.get()));
    let (status, body) = match failed {
        Some(e) => (StatusCode::SERVICE_UNAVAILABLE, serde_json::json!({"status": "error", "message": e})),
        None if state.loaded() => (StatusCode::OK, serde_json::json!({"status": "ok"})),
        None => (StatusCode::SERVICE_UNAVAILABLE, serde_json::json!({"status": "loading"})),
    };
    (status, axum::Json(body)).into_response()
}

async fn metrics(AxState(state): AxState<Shared>) -> Response {
    match state.metrics.render() {
        Ok(text) => ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response(),
        Err(e) => ApiError::internal(format!("rendering the metrics: {e}")).into_response(),
    }
}

/// A JSON request body read within the size limit and the read timeout, parsed into `T`; every
/// failure is an [`ApiError`] naming the field at fault.
pub(crate) struct JsonBody<T>(pub T);

/// Whether `e` (or an error it wraps) is the body size limit.
fn is_length_limit(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if err.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        cur = err.source();
    }
    false
}

impl<T: DeserializeOwned> FromRequest<Shared> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &Shared) -> Result<Self, ApiError> {
        let limit = state.config.body_limit;
        let declared = req
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limit as u64) {
            return Err(ApiError::too_large(limit));
        }
        let timeout = state.config.body_timeout;
        let read = tokio::time::timeout(timeout, axum::body::to_bytes(req.into_body(), limit)).await;
        let bytes = match read {
            Err(_) => return Err(ApiError::body_timeout(timeout.as_secs_f64())),
            Ok(Err(e)) => {
                let inner = e.into_inner();
                if is_length_limit(inner.as_ref()) {
                    return Err(ApiError::too_large(limit));
                }
                return Err(ApiError::bad_request(format!("reading the request body: {inner}")));
            }
            Ok(Ok(b)) => b,
        };
        let mut de = serde_json::Deserializer::from_slice(&bytes);
        match serde_path_to_error::deserialize::<_, T>(&mut de) {
            Ok(v) => Ok(JsonBody(v)),
            Err(e) => {
                let path = e.path().to_string();
                let message = format!("invalid request body: {}", e.inner());
                if path == "." || path.is_empty() {
                    Err(ApiError::bad_request(message))
                } else {
                    Err(ApiError::bad_param(&path, format!("{message} (at {path})")))
                }
            }
        }
    }
}
