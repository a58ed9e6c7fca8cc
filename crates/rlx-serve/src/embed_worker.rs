//! The embedding worker: one thread that owns the BERT-family embedder and batches requests
//! across clients. It waits for one request, then drains every request already queued (up to a
//! number of texts) into one encode call, and splits the embeddings back per request. Requests
//! whose client has gone are dropped before the call.

use crate::error::ApiError;
use crate::metrics::Metrics;
use rlx_models::{Device, Embedder, EmbedderOptions, Precision};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use tokio::sync::{oneshot, OwnedSemaphorePermit};

/// Called by the worker after it takes the first request of a batch and before it drains the
/// queue. Tests hold the worker there so that requests pile up; unset in use.
pub type BatchHook = Arc<dyn Fn() + Send + Sync>;

/// Embeddings of one request and its token count.
#[derive(Debug)]
pub struct EmbedOutput {
    pub embeddings: Vec<Vec<f32>>,
    pub tokens: usize,
}

/// One admitted embedding request.
pub struct EmbedJob {
    pub inputs: Vec<String>,
    pub reply: oneshot::Sender<Result<EmbedOutput, ApiError>>,
    pub permit: OwnedSemaphorePermit,
}

/// Where the embedder comes from and how many texts one encode call takes at most.
#[derive(Clone, Debug)]
pub struct EmbedSpec {
    pub path: PathBuf,
    pub device: Device,
    pub precision: Precision,
    pub max_batch_inputs: usize,
}

/// What the loaded embedder is: its output width.
#[derive(Clone, Copy, Debug)]
pub struct EmbedInfo {
    pub dim: usize,
}

/// Starts the worker thread: it loads the embedder, answers `ready`, then serves `jobs` until
/// the channel closes.
pub fn spawn(
    spec: EmbedSpec,
    metrics: Arc<Metrics>,
    hook: Option<BatchHook>,
    ready: oneshot::Sender<Result<EmbedInfo, String>>,
) -> std::io::Result<(Sender<EmbedJob>, std::thread::JoinHandle<()>)> {
    let (tx, rx) = std::sync::mpsc::channel::<EmbedJob>();
    let handle = std::thread::Builder::new().name("rlx-serve-embed".into()).spawn(move || {
        let opts = EmbedderOptions { precision: spec.precision, ..EmbedderOptions::default() };
        let mut emb = match Embedder::load(&spec.path, spec.device, opts) {
            Ok(e) => e,
            Err(e) => {
                let _ = ready.send(Err(format!("loading {}: {e}", spec.path.display())));
                return;
            }
        };
        metrics.record_live("embed", emb.session().live_objects());
        let _ = ready.send(Ok(EmbedInfo { dim: emb.dim() }));
        run(&mut emb, &metrics, hook.as_ref(), &rx, spec.max_batch_inputs.max(1));
    })?;
    Ok((tx, handle))
}

fn run(
    emb: &mut Embedder,
    metrics: &Metrics,
    hook: Option<&BatchHook>,
    jobs: &Receiver<EmbedJob>,
    max: usize,
) {
    let depth = metrics.queue_depth.with_label_values(&["embed"]);
    while let Ok(first) = jobs.recv() {
        depth.dec();
        if let Some(hook) = hook {
            hook();
        }
        let mut texts = first.inputs.len();
        let mut batch = vec![first];
        while texts < max {
            let Ok(job) = jobs.try_recv() else { break };
            depth.dec();
            texts += job.inputs.len();
            batch.push(job);
        }
        batch.retain(|j| !j.reply.is_closed());
        if batch.is_empty() {
            continue;
        }
        metrics.embed_batch.observe(batch.len() as f64);
        let refs: Vec<&str> = batch.iter().flat_map(|j| j.inputs.iter().map(String::as_str)).collect();
        metrics.embedding_inputs.inc_by(refs.len() as u64);
        let outcome = catch_unwind(AssertUnwindSafe(|| encode(emb, &refs)));
        // Before the replies: a client that has its answer reads the objects held after it.
        metrics.record_live("embed", emb.session().live_objects());
        let result = match outcome {
            Ok(r) => r,
            Err(_) => {
                Err(ApiError::internal("the embedder panicked on this batch; the server goes on serving"))
            }
        };
        match result {
            Ok((mut rows, mut lengths)) => {
                // Split back in order: each job takes its own count of rows off the front.
                for job in batch {
                    let n = job.inputs.len().min(rows.len());
                    let embeddings: Vec<Vec<f32>> = rows.drain(..n).collect();
                    let tokens = lengths.drain(..n.min(lengths.len())).sum();
                    let _ = job.reply.send(Ok(EmbedOutput { embeddings, tokens }));
                }
            }
            Err(e) => {
                for job in batch {
                    let _ = job.reply.send(Err(e.clone()));
                }
            }
        }
    }
}

/// One encode call over `texts`, with their token counts; a NaN or infinity in the output is
/// a 500 naming the text.
fn encode(emb: &mut Embedder, texts: &[&str]) -> Result<(Vec<Vec<f32>>, Vec<usize>), ApiError> {
    let lengths = emb.tokenizer().lengths(texts).map_err(|e| ApiError::bad_param("input", e.to_string()))?;
    let rows = emb.embed(texts).map_err(|e| ApiError::internal(format!("the embedder failed: {e}")))?;
    if rows.len() != texts.len() {
        return Err(ApiError::internal(format!(
            "the embedder gave {} rows for {} texts",
            rows.len(),
            texts.len()
        )));
    }
    for (i, row) in rows.iter().enumerate() {
        if let Some(j) = row.iter().position(|x| !x.is_finite()) {
            return Err(ApiError::internal(format!(
                "the model produced a non-finite value ({}) at index {j} of the embedding of text {} of this \
                 batch; its weights or the input may be corrupt",
                row[j],
                i + 1
            )));
        }
    }
    Ok((rows, lengths))
}
