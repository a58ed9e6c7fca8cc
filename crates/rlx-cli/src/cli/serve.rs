//! `rlx serve`: the OpenAI-compatible HTTP server (crate `rlx-serve`) on a language model
//! and/or an embedding model, until ctrl-c or SIGTERM, which stop accepting and drain the
//! requests in flight. One log line per request goes to stderr.
//!
//! A model is a checkpoint directory or `.gguf` file, or a model name (the built-in
//! all-minilm-l6-v2, or a Hugging Face repo id such as `owner/name` or `owner/name-GGUF:Q4_K_M`),
//! fetched into the cache when missing, exactly as `rlx generate` and `rlx embed` take them.

use rlx_serve::ServeConfig;
use std::path::PathBuf;
use std::time::Duration;

/// Options of `rlx serve`.
#[derive(clap::Args)]
pub struct ServeOptions {
    /// The language model for /v1/chat/completions and /v1/completions: a checkpoint folder, a
    /// .gguf file, or a hub name (owner/name, owner/name-GGUF:Q4_K_M).
    #[arg(long)]
    pub model: Option<String>,
    /// The embedding model for /v1/embeddings (BERT family, e.g. all-minilm-l6-v2): a folder
    /// or a model name (all-minilm-l6-v2, or a hub repo id).
    #[arg(long)]
    pub embedding_model: Option<String>,
    #[command(flatten)]
    pub target: crate::Target,
    /// The address to listen on (127.0.0.1: this machine only; 0.0.0.0: every interface).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// The port (0 picks a free one; the address is printed).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// Generations decoded together (continuous batching); 1 runs them one at a time. Free
    /// slots still cost a row of each decode step, so more than the concurrent load wastes work.
    #[arg(long, default_value_t = 1)]
    pub max_streams: usize,
    /// The KV cache's dtype: auto (f16 under mixed and f16 precision, f32 under f32), f32 or
    /// f16.
    #[arg(long, default_value = "auto")]
    pub kv_cache: rlx_models::KvCache,
    /// Requests that may wait beyond the running ones; more get 429 with Retry-After.
    #[arg(long, default_value_t = 32)]
    pub queue: usize,
    /// The context of each request in tokens, prompt and answer together (at most the model's;
    /// default: the model's, shared out among the streams, at least 2048 each).
    #[arg(long)]
    pub ctx_size: Option<usize>,
    /// Require `Authorization: Bearer KEY` on /v1/ requests (default: the RLX_API_KEY
    /// environment variable, which keeps the key out of the process list).
    #[arg(long)]
    pub api_key: Option<String>,
    /// Seconds to let in-flight requests finish after ctrl-c or SIGTERM.
    #[arg(long, default_value_t = 30)]
    pub drain_timeout: u64,
}

/// The language model argument: as `rlx generate --model` takes it (a path, or a hub name
/// fetched when needed; `super::fetch::resolve_lm`).
fn resolve_lm(arg: &str) -> Result<PathBuf, Box<dyn std::error::Error>> {
    let mut path = PathBuf::from(arg);
    super::fetch::resolve_lm(&mut path, None).map_err(|e| format!("--model {arg}: {e}"))?;
    Ok(path)
}

/// The embedding model argument: as `rlx embed --model` takes it (a folder, the built-in name
/// or a hub name; `super::fetch::resolve_embedder`).
fn resolve_embedder(arg: &str) -> Result<PathBuf, Box<dyn std::error::Error>> {
    super::fetch::resolve_embedder(Some(std::path::Path::new(arg)), None)
        .map_err(|e| format!("--embedding-model {arg}: {e}").into())
}

/// Resolves when ctrl-c or (on Unix) SIGTERM arrives.
async fn stop_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}

/// `rlx serve`.
pub fn run(o: &ServeOptions) -> Result<(), Box<dyn std::error::Error>> {
    let model = o.model.as_deref().map(resolve_lm).transpose()?;
    let embedding_model = o.embedding_model.as_deref().map(resolve_embedder).transpose()?;
    let mut config = ServeConfig::new(model, embedding_model);
    config.device = o.target.device;
    config.precision = o.target.precision;
    config.max_streams = o.max_streams;
    config.kv_cache = o.kv_cache;
    config.queue = o.queue;
    config.ctx_size = o.ctx_size;
    config.api_key =
        o.api_key.clone().or_else(|| std::env::var("RLX_API_KEY").ok()).filter(|k| !k.is_empty());
    config.drain_timeout = Duration::from_secs(o.drain_timeout);
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt().with_writer(std::io::stderr).with_ansi(ansi).try_init();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let addr = format!("{}:{}", o.host, o.port);
        let listener = tokio::net::TcpListener::bind(&addr)
            .await
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let mut running = rlx_serve::start(config, listener).await?;
        let url = format!("http://{}", running.local_addr());
        eprintln!("serve: listening on {url} (GET /health answers 503 until the models load)");
        let stopped = tokio::select! {
            loaded = running.wait_loaded() => {
                if let Err(e) = loaded {
                    running.shutdown().await;
                    return Err(e.into());
                }
                eprintln!("serve: ready on {url}");
                false
            }
            _ = stop_signal() => true,
        };
        if !stopped {
            stop_signal().await;
        }
        eprintln!(
            "serve: stopping: no new connections; draining requests in flight (up to {} s)",
            o.drain_timeout
        );
        if running.shutdown().await {
            eprintln!("serve: stopped");
        } else {
            eprintln!("serve: stopped with requests still in flight after {} s", o.drain_timeout);
        }
        Ok::<(), Box<dyn std::error::Error>>(())
    })
}
