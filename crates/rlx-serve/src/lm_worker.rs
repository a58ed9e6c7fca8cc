//! The generation worker: one thread that owns the causal LM and answers the generation
//! requests in the order they were admitted (a FIFO channel, not a lock a handler holds).
//!
//! The model is loaded inside the thread (a loaded model need not be `Send`), and handlers talk
//! to it only through [`GenJob`]s in and [`GenEvent`]s out. Each token's text is decoded here,
//! filtered for `stop` strings and sent on the request's own channel (`answer.rs`); when
//! that channel is closed (the client went away) the generation stops at the next token.
//!
//! Two loops, chosen at load:
//! - **Continuous batching** (`lm_batch.rs`), with `--max-streams` above 1 on a model
//!   with a batched decode step (the attention decoders): up to that many requests are decoded
//!   together, one token each per step; requests join and leave between steps.
//! - **One at a time** (`run_fifo`), with `--max-streams 1` or for Mamba (no batched step):
//!   each request runs to its end through [`CausalLm::generate`], which grows its KV cache with
//!   the text.
//!
//! The context (prompt and answer, per request) is `--ctx-size`, at most the model's own.
//! Without it, a batched worker shares the model's context out among the streams, as
//! llama-server's `-np` does (each stream holds `context / max_streams` positions, but never
//! fewer than 2 048 or the model's context if that is smaller), so that the batch's KV cache,
//! reserved whole at load, is about one full-context sequence's.

use crate::answer::{Answer, Next};
use crate::api::Usage;
use crate::error::ApiError;
use crate::metrics::Metrics;
use rlx_models::{
    causal_tokenizer, load_causal_lm, stop_tokens, CausalLm, ChatTemplate, DecoderOptions, Device,
    ModelError, Precision, SamplingSpec,
};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::time::Instant;
use tokenizers::Tokenizer;
use tokio::sync::{mpsc::UnboundedSender, oneshot, OwnedSemaphorePermit};

/// Called by the worker after each token it has sent, with a probe that tells whether the
/// request's client has gone. Tests hold the worker at a known point with it; unset in use.
pub type TokenHook = Arc<dyn Fn(&dyn Fn() -> bool) + Send + Sync>;

/// The text side of the LM, read from the files before the weights load: tokenizer, chat
/// template (if the model has one) and the ids that end a generation.
pub struct TextSide {
    pub tokenizer: Tokenizer,
    pub template: Option<ChatTemplate>,
    /// End-of-sequence ids of the model (generation_config.json or the GGUF file).
    pub stop_ids: Vec<i32>,
    /// Those plus the template's eos token: what ends a chat turn.
    pub chat_stop_ids: Vec<i32>,
}

impl TextSide {
    /// Reads the text side of the model at `path`; a model without a tokenizer cannot be
    /// served (requests are text).
    pub fn load(path: &Path) -> Result<TextSide, ModelError> {
        let tokenizer = causal_tokenizer(path)?.ok_or_else(|| ModelError::Config {
            path: path.to_path_buf(),
            reason: "no tokenizer.json here; the server takes text, so the model needs its tokenizer".into(),
        })?;
        let template = match ChatTemplate::for_model(path) {
            Ok(t) => Some(t),
            Err(ModelError::NoChatTemplate { .. }) => None,
            Err(e) => return Err(e),
        };
        let stop_ids = stop_tokens(path)?;
        let mut chat_stop_ids = stop_ids.clone();
        let eos = template.as_ref().and_then(|t| t.eos_token()).and_then(|t| tokenizer.token_to_id(t));
        if let Some(id) = eos.and_then(|id| i32::try_from(id).ok()).filter(|id| !chat_stop_ids.contains(id)) {
            chat_stop_ids.push(id);
        }
        Ok(TextSide { tokenizer, template, stop_ids, chat_stop_ids })
    }
}

/// How a generation ended, with its token counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Finish {
    /// `stop` (an end-of-sequence token or a stop string) or `length` (max_tokens).
    pub reason: &'static str,
    pub usage: Usage,
}

/// What the worker sends a request.
#[derive(Debug)]
pub enum GenEvent {
    /// More text of the answer.
    Text(String),
    /// The answer is complete.
    Done(Finish),
    /// The generation failed; nothing more comes.
    Failed(ApiError),
}

/// One admitted generation request.
pub struct GenJob {
    pub prompt: Vec<i32>,
    pub max_tokens: usize,
    pub spec: SamplingSpec,
    pub seed: u32,
    /// Token ids that end the generation (not part of the text).
    pub stop_ids: Vec<i32>,
    /// `stop` strings.
    pub stops: Vec<String>,
    pub events: UnboundedSender<GenEvent>,
    /// The admission slot, given back when the job is dropped.
    pub permit: OwnedSemaphorePermit,
    pub admitted: Instant,
}

/// Where the model comes from, and how it serves.
#[derive(Clone, Debug)]
pub struct LmSpec {
    pub path: PathBuf,
    pub device: Device,
    pub precision: Precision,
    /// The KV cache's dtype.
    pub kv_cache: rlx_models::KvCache,
    /// Requests decoded together (1: one at a time).
    pub max_streams: usize,
    /// `--ctx-size`, if given (see the module doc for the default).
    pub ctx_size: Option<usize>,
}

/// What the worker tells once its model has loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loaded {
    /// The context each request may fill, prompt and answer together.
    pub ctx: usize,
    /// The model's vocabulary size: token ids are `0..vocab`.
    pub vocab: usize,
}

/// Starts the worker thread: it loads the model, answers `ready` with what requests may ask
/// ([`Loaded`]) or the load error, then serves `jobs` until the channel closes.
pub fn spawn(
    spec: LmSpec,
    text: Arc<TextSide>,
    metrics: Arc<Metrics>,
    hook: Option<TokenHook>,
    ready: oneshot::Sender<Result<Loaded, String>>,
) -> std::io::Result<(Sender<GenJob>, std::thread::JoinHandle<()>)> {
    let (tx, rx) = std::sync::mpsc::channel::<GenJob>();
    let handle = std::thread::Builder::new().name("rlx-serve-lm".into()).spawn(move || {
        let opts =
            DecoderOptions { precision: spec.precision, kv_cache: spec.kv_cache, ..Default::default() };
        let loaded = load_causal_lm(&spec.path, spec.device, opts)
            .map_err(|e| format!("loading {}: {e}", spec.path.display()));
        let mut model = match loaded {
            Ok(m) => m,
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        let info = model.info();
        let ctx = match context(spec.ctx_size, info.context_length, spec.max_streams) {
            Ok(c) => c,
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        let batch = match spec.max_streams > 1 {
            true => model.batch_decoder(spec.max_streams, ctx),
            false => None,
        };
        let mut batch = match batch.transpose() {
            Ok(b) => b,
            Err(e) => {
                let _ = ready.send(Err(format!(
                    "batching {} streams of {ctx} positions on {}: {e}",
                    spec.max_streams, info.device
                )));
                return;
            }
        };
        let how = match &batch {
            Some(_) => format!("up to {} requests decoded together", spec.max_streams),
            None if spec.max_streams > 1 => format!(
                "one request at a time ({} has no batched decode step; --max-streams {} only admits)",
                info.architecture, spec.max_streams
            ),
            None => "one request at a time (--max-streams 1)".into(),
        };
        tracing::info!(
            target: "rlx_serve",
            "generation: {} on {}, {how}, {ctx} positions per request",
            info.architecture,
            info.device
        );
        metrics.record_live("generate", model.live_objects());
        let _ = ready.send(Ok(Loaded { ctx, vocab: info.vocab_size }));
        match batch.as_mut() {
            Some(batch) => crate::lm_batch::run(batch, model.as_ref(), &text, &metrics, hook.as_ref(), &rx),
            None => run_fifo(model.as_mut(), &text, &metrics, hook.as_ref(), &rx),
        }
    })?;
    Ok((tx, handle))
}

/// The context a request may fill: `--ctx-size`, at most the model's own; without it, the
/// model's own shared out among `streams` (see the module doc).
pub(crate) fn context(
    ctx_size: Option<usize>,
    model: Option<usize>,
    streams: usize,
) -> Result<usize, String> {
    match (ctx_size, model) {
        (Some(0), _) => Err("--ctx-size must be at least 1".into()),
        (Some(c), Some(m)) if c > m => {
            Err(format!("--ctx-size {c} is past the model's context of {m} tokens: give at most {m}"))
        }
        (Some(c), _) => Ok(c),
        (None, Some(m)) => Ok((m / streams.max(1)).max(m.min(2048))),
        // A model without a position limit (Mamba): a context the recompute-per-token path
        // still finishes in reasonable time.
        (None, None) => Ok(4096),
    }
}

/// A job leaving the generation queue: the queue gauge drops, and a job whose client has
/// gone already is counted as cancelled and dropped (`None`). Both generation loops use it.
pub(crate) fn take_job(job: GenJob, depth: &prometheus::IntGauge, metrics: &Metrics) -> Option<GenJob> {
    depth.dec();
    if job.events.is_closed() {
        metrics.cancelled.inc();
        return None;
    }
    Some(job)
}

/// The one-at-a-time loop: each job to its end.
fn run_fifo(
    model: &mut dyn CausalLm,
    text: &TextSide,
    metrics: &Metrics,
    hook: Option<&TokenHook>,
    jobs: &Receiver<GenJob>,
) {
    let depth = metrics.queue_depth.with_label_values(&["generate"]);
    while let Ok(job) = jobs.recv() {
        let Some(job) = take_job(job, &depth, metrics) else { continue };
        let (prompt, n, spec, seed) = (job.prompt.clone(), job.max_tokens, job.spec, job.seed);
        let mut answer = Answer::new(job, &text.tokenizer);
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            model.generate(&prompt, n, &spec, seed, &mut |t| answer.token(t, metrics, hook) == Next::More)
        }));
        match outcome {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                answer.fail(ApiError::internal(format!("the model failed: {e}")));
            }
            Err(_) => {
                answer.fail(ApiError::internal(
                    "the model panicked on this request; the server goes on serving others",
                ));
            }
        }
        // Before the answer ends: a client that saw [DONE] reads the objects held after it.
        metrics.record_live("generate", model.live_objects());
        if !answer.close(metrics) {
            metrics.cancelled.inc();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::context;

    #[test]
    fn the_context_is_ctx_size_at_most_the_models() {
        assert_eq!(context(None, Some(64), 1), Ok(64));
        assert_eq!(context(Some(32), Some(64), 1), Ok(32));
        let e = context(Some(128), Some(64), 1).unwrap_err();
        assert!(e.contains("--ctx-size 128") && e.contains("64"), "{e}");
        assert!(context(Some(0), Some(64), 4).is_err());
        assert_eq!(context(Some(100), None, 1), Ok(100));
        assert_eq!(context(None, None, 8), Ok(4096));
    }

    #[test]
    fn batched_streams_share_the_models_context_but_keep_at_least_2048() {
        // Llama 3.2's 131 072 positions over 32 streams: 4 096 each (llama-server's -np split).
        assert_eq!(context(None, Some(131_072), 32), Ok(4096));
        // Qwen2.5's 32 768 over 32 would be 1 024: the floor of 2 048 holds.
        assert_eq!(context(None, Some(32_768), 32), Ok(2048));
        // A model whose context is below the floor keeps its own.
        assert_eq!(context(None, Some(64), 4), Ok(64));
        // --ctx-size wins, streams or not.
        assert_eq!(context(Some(8192), Some(131_072), 32), Ok(8192));
    }
}
