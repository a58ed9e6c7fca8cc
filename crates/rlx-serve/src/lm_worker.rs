//! The generation worker: one thread that owns the causal LM and runs the generation requests
//! one after another, in the order they were admitted (a FIFO channel, not a lock a handler
//! holds).
//!
//! The model is loaded inside the thread (a loaded model need not be `Send`), and handlers talk
//! to it only through [`GenJob`]s in and [`GenEvent`]s out. Each token's text is decoded here
//! (the tokenizer's decode stream), filtered for `stop` strings ([`StopFilter`]) and sent on the
//! request's own channel; when that channel is closed (the client went away) the generation
//! stops at the next token.
//!
//! Continuous batching (the batched-decode issue) replaces `run`: a scheduler that takes the
//! same [`GenJob`]s from the same channel, admits up to `--max-streams` of them into one batched
//! decode step, and sends the same events. Handlers, admission and metrics stay as they are.

use crate::api::Usage;
use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::text::StopFilter;
use rlx_models::{
    causal_tokenizer, load_causal_lm, stop_tokens, CausalLm, ChatTemplate, DecoderOptions, Device, LmInfo,
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

/// Where the model comes from.
#[derive(Clone, Debug)]
pub struct LmSpec {
    pub path: PathBuf,
    pub device: Device,
    pub precision: Precision,
}

/// Starts the worker thread: it loads the model, answers `ready` with the model's
/// [`LmInfo`] (or the load error), then serves `jobs` until the channel closes.
pub fn spawn(
    spec: LmSpec,
    text: Arc<TextSide>,
    metrics: Arc<Metrics>,
    hook: Option<TokenHook>,
    ready: oneshot::Sender<Result<LmInfo, String>>,
) -> std::io::Result<(Sender<GenJob>, std::thread::JoinHandle<()>)> {
    let (tx, rx) = std::sync::mpsc::channel::<GenJob>();
    let handle = std::thread::Builder::new().name("rlx-serve-lm".into()).spawn(move || {
        let opts = DecoderOptions { precision: spec.precision, ..Default::default() };
        let mut model = match load_causal_lm(&spec.path, spec.device, opts) {
            Ok(m) => m,
            Err(e) => {
                let _ = ready.send(Err(format!("loading {}: {e}", spec.path.display())));
                return;
            }
        };
        metrics.record_live("generate", model.live_objects());
        let _ = ready.send(Ok(model.info()));
        run(model.as_mut(), &text, &metrics, hook.as_ref(), &rx);
    })?;
    Ok((tx, handle))
}

/// The FIFO loop: one job at a time, to its end.
fn run(
    model: &mut dyn CausalLm,
    text: &TextSide,
    metrics: &Metrics,
    hook: Option<&TokenHook>,
    jobs: &Receiver<GenJob>,
) {
    let depth = metrics.queue_depth.with_label_values(&["generate"]);
    while let Ok(job) = jobs.recv() {
        depth.dec();
        if job.events.is_closed() {
            metrics.cancelled.inc();
            continue;
        }
        let outcome = catch_unwind(AssertUnwindSafe(|| run_job(model, text, metrics, hook, &job)));
        // Before the answer ends: a client that saw [DONE] reads the objects held after it.
        metrics.record_live("generate", model.live_objects());
        let event = match outcome {
            Ok(Ok(Some(finish))) => GenEvent::Done(finish),
            Ok(Ok(None)) => {
                metrics.cancelled.inc();
                continue;
            }
            Ok(Err(e)) => GenEvent::Failed(e),
            Err(_) => GenEvent::Failed(ApiError::internal(
                "the model panicked on this request; the server goes on serving others",
            )),
        };
        let _ = job.events.send(event);
    }
}

/// Runs one job, sending its text as it comes; `None` when the client went away midway.
fn run_job(
    model: &mut dyn CausalLm,
    text: &TextSide,
    metrics: &Metrics,
    hook: Option<&TokenHook>,
    job: &GenJob,
) -> Result<Option<Finish>, ApiError> {
    let tok = &text.tokenizer;
    let mut stream = tok.decode_stream(true);
    let mut filter = StopFilter::new(job.stops.clone());
    let mut ids: Vec<u32> = Vec::new();
    let mut count = 0usize;
    let mut reason = "length";
    let mut last: Option<Instant> = None;
    let mut failure: Option<ApiError> = None;
    let mut gone = false;
    let closed = || job.events.is_closed();
    let send = |s: String| {
        if !s.is_empty() {
            let _ = job.events.send(GenEvent::Text(s));
        }
    };
    let result = model.generate(&job.prompt, job.max_tokens, &job.spec, job.seed, &mut |token| {
        count += 1;
        let now = Instant::now();
        match last {
            None => metrics.ttft.observe(now.duration_since(job.admitted).as_secs_f64()),
            Some(t) => metrics.per_token.observe(now.duration_since(t).as_secs_f64()),
        }
        last = Some(now);
        if job.stop_ids.contains(&token) {
            reason = "stop";
            return false;
        }
        let Ok(id) = u32::try_from(token) else {
            failure = Some(ApiError::internal(format!(
                "the model produced token id {token}, outside the vocabulary"
            )));
            return false;
        };
        ids.push(id);
        match stream.step(id) {
            Ok(Some(piece)) => send(filter.push(&piece)),
            Ok(None) => {}
            Err(e) => {
                failure = Some(ApiError::internal(format!("decoding token {id}: {e}")));
                return false;
            }
        }
        if filter.stopped() {
            reason = "stop";
            return false;
        }
        if let Some(hook) = hook {
            hook(&closed);
        }
        if closed() {
            gone = true;
            return false;
        }
        true
    });
    metrics.completion_tokens.inc_by(count as u64);
    metrics.prompt_tokens.inc_by(job.prompt.len() as u64);
    if let Err(e) = result {
        return Err(ApiError::internal(format!("the model failed: {e}")));
    }
    if let Some(e) = failure {
        return Err(e);
    }
    if gone {
        return Ok(None);
    }
    // What the decode stream still holds (a character the last token left unfinished) comes
    // from the whole decode.
    if !filter.stopped() {
        let full = tok.decode(&ids, true).map_err(|e| ApiError::internal(format!("decoding: {e}")))?;
        if let Some(rest) = full.strip_prefix(filter.received()) {
            send(filter.push(rest));
        }
        if filter.stopped() {
            reason = "stop";
        }
        send(filter.finish());
    }
    let usage = Usage {
        prompt_tokens: job.prompt.len(),
        completion_tokens: count,
        total_tokens: job.prompt.len() + count,
    };
    Ok(Some(Finish { reason, usage }))
}
