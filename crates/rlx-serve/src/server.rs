//! Starting and stopping the server: the workers, the accept loop (HTTP/1.1 through hyper, with
//! a header read timeout), and graceful shutdown with a drain deadline.

use crate::embed_worker::{self, EmbedSpec};
use crate::lm_worker::{self, LmSpec, TextSide};
use crate::metrics::Metrics;
use crate::routes::{router, AppState, LmReady, Served, Shared};
use crate::{model_id, ServeConfig};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

/// Why the server could not start or a model could not load.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("nothing to serve: give --model (generation) or --embedding-model (embeddings), or both")]
    NoModel,
    #[error("{0}")]
    Model(#[from] rlx_models::ModelError),
    #[error("--{flag} must be at least 1")]
    Zero { flag: &'static str },
    #[error("{0}")]
    Load(String),
    #[error("the metrics registry: {0}")]
    Metrics(#[from] prometheus::Error),
    #[error("the listener: {0}")]
    Io(#[from] std::io::Error),
}

/// Models still loading, or the first load error.
#[derive(Clone, Debug, Default)]
struct LoadStatus {
    pending: usize,
    error: Option<String>,
}

/// A started server.
pub struct Running {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: JoinHandle<bool>,
    load: watch::Receiver<LoadStatus>,
}

impl Running {
    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Waits until every model has loaded; the first load error otherwise.
    pub async fn wait_loaded(&mut self) -> Result<(), StartError> {
        let status = self
            .load
            .wait_for(|s| s.pending == 0 || s.error.is_some())
            .await
            .map_err(|_| StartError::Load("the loading workers ended without a word".into()))?
            .clone();
        match status.error {
            Some(e) => Err(StartError::Load(e)),
            None => Ok(()),
        }
    }

    /// Stops accepting connections, lets in-flight requests finish for up to the config's
    /// `drain_timeout`, then returns whether all of them finished in time.
    pub async fn shutdown(self) -> bool {
        let _ = self.stop.send(true);
        self.task.await.unwrap_or(false)
    }
}

/// Starts the workers and serves on `listener` (see the crate doc).
pub async fn start(config: ServeConfig, listener: TcpListener) -> Result<Running, StartError> {
    if config.model.is_none() && config.embedding_model.is_none() {
        return Err(StartError::NoModel);
    }
    if config.max_streams == 0 {
        return Err(StartError::Zero { flag: "max-streams" });
    }
    if config.embed_batch == 0 {
        return Err(StartError::Zero { flag: "embed-batch" });
    }
    let metrics = Arc::new(Metrics::new()?);
    let capacity = config.max_streams + config.queue;
    let pending = usize::from(config.model.is_some()) + usize::from(config.embedding_model.is_some());
    let (load_tx, load_rx) = watch::channel(LoadStatus { pending, error: None });
    let load_tx = Arc::new(load_tx);

    let mut lm_ready = None;
    let lm = match &config.model {
        Some(path) => {
            // The text side first: a missing tokenizer or a broken template is told before the
            // weights load.
            let text = Arc::new(TextSide::load(path)?);
            let spec = LmSpec {
                path: path.clone(),
                device: config.device,
                precision: config.precision,
                kv_cache: config.kv_cache,
                max_streams: config.max_streams,
                ctx_size: config.ctx_size,
            };
            let (ready_tx, ready_rx) = oneshot::channel();
            let (jobs, _thread) =
                lm_worker::spawn(spec, text.clone(), metrics.clone(), config.token_hook.clone(), ready_tx)?;
            lm_ready = Some(ready_rx);
            Some((Served::new(model_id(path), jobs, capacity), text))
        }
        None => None,
    };
    let mut embed_ready = None;
    let embed = match &config.embedding_model {
        Some(path) => {
            let spec = EmbedSpec {
                path: path.clone(),
                device: config.device,
                precision: config.precision,
                max_batch_inputs: config.embed_batch,
            };
            let (ready_tx, ready_rx) = oneshot::channel();
            let (jobs, _thread) =
                embed_worker::spawn(spec, metrics.clone(), config.batch_hook.clone(), ready_tx)?;
            embed_ready = Some(ready_rx);
            Some(Served::new(model_id(path), jobs, capacity))
        }
        None => None,
    };
    let state: Shared = Arc::new(AppState::new(config.clone(), metrics, lm, embed));

    if let Some(rx) = lm_ready {
        let (state, load_tx) = (state.clone(), load_tx.clone());
        tokio::spawn(async move {
            let result = match rx.await {
                Ok(r) => r,
                Err(_) => Err("the generation worker ended while loading".into()),
            };
            if let Some((served, _)) = &state.lm {
                settle(
                    &load_tx,
                    result.map(|l| served.ready.set(LmReady { ctx: l.ctx, vocab: l.vocab })).inspect_err(
                        |e| {
                            let _ = served.load_error.set(e.clone());
                        },
                    ),
                );
            }
        });
    }
    if let Some(rx) = embed_ready {
        let (state, load_tx) = (state.clone(), load_tx.clone());
        tokio::spawn(async move {
            let result = match rx.await {
                Ok(r) => r,
                Err(_) => Err("the embedding worker ended while loading".into()),
            };
            if let Some(served) = &state.embed {
                settle(
                    &load_tx,
                    result.map(|info| served.ready.set(info)).inspect_err(|e| {
                        let _ = served.load_error.set(e.clone());
                    }),
                );
            }
        });
    }

    let addr = listener.local_addr()?;
    let (stop, stop_rx) = watch::channel(false);
    let task = tokio::spawn(serve(listener, state, stop_rx));
    Ok(Running { addr, stop, task, load: load_rx })
}

/// Records one model's load outcome.
fn settle<T>(load: &watch::Sender<LoadStatus>, result: Result<T, String>) {
    load.send_modify(|s| match result {
        Ok(_) => s.pending = s.pending.saturating_sub(1),
        Err(e) => {
            tracing::error!(target: "rlx_serve", "{e}");
            s.error.get_or_insert(e);
        }
    });
}

/// The accept loop; returns whether every connection drained before the deadline.
async fn serve(listener: TcpListener, state: Shared, mut stop: watch::Receiver<bool>) -> bool {
    let header_timeout = state.config.header_timeout;
    let drain = state.config.drain_timeout;
    let app = router(state);
    let graceful = GracefulShutdown::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        // Out of file descriptors and the like: say so and go on accepting.
                        tracing::warn!(target: "rlx_serve", "accepting a connection: {e}");
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let service = TowerToHyperService::new(app.clone());
                let conn = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(header_timeout)
                    .serve_connection(TokioIo::new(stream), service);
                let conn = graceful.watch(conn);
                tokio::spawn(async move {
                    if let Err(e) = conn.await {
                        tracing::debug!(target: "rlx_serve", "connection: {e}");
                    }
                });
            }
            _ = stop.changed() => break,
        }
    }
    drop(listener);
    drop(app);
    tokio::time::timeout(drain, graceful.shutdown()).await.is_ok()
}
