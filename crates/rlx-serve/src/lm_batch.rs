//! The continuous-batching loop of the generation worker: requests share one
//! [`BatchDecoder`] (rlx-models), so up to `--max-streams` of them advance by one token per
//! decode step instead of waiting for each other.
//!
//! Each turn of the loop:
//! 1. **Admit** queued requests into free slots, in admission order: the blocking wait happens
//!    only when nothing is running; otherwise only what is already queued joins. A request
//!    that arrives alone at an idle batch runs its prompt through the prefill at once
//!    (`BatchDecoder::add`: its first token after one prefill). Otherwise the joining requests
//!    are enqueued (`BatchDecoder::enqueue`): their prompts go into the cache a chunk per step,
//!    together and in the same runs as the running requests' decode, so requests that arrive
//!    together no longer wait for each other's prefills, nor the running ones for theirs.
//! 2. **Drop** the requests whose client went away since the last step: their slots are free
//!    for the next admission.
//! 3. **Step** every running request once; each token goes to its [`Answer`]. A request ends
//!    at its token budget, a stop token or string, a non-finite logit (500 for that request
//!    only), or when its client goes; its slot serves the next request.
//!
//! A failed or panicking step fails the requests in the batch (each gets a 500) and the loop
//! goes on with the next ones: the server keeps serving.

use crate::answer::{Answer, Next};
use crate::error::ApiError;
use crate::lm_worker::{take_job, GenJob, TextSide, TokenHook};
use crate::metrics::Metrics;
use rlx_models::{BatchDecoder, CausalLm, SeqId, SeqParams, SeqToken};
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{Receiver, TryRecvError};

/// The loop's state: the batch, the answers of the requests in it, and what it reports to.
struct Scheduler<'a> {
    batch: &'a mut BatchDecoder,
    model: &'a dyn CausalLm,
    text: &'a TextSide,
    metrics: &'a Metrics,
    hook: Option<&'a TokenHook>,
    answers: HashMap<SeqId, Answer<'a>>,
}

/// Serves `jobs` over `batch` until the channel closes and the last request has ended (see the
/// module doc). `model` is the batch's model, asked only for its live device objects.
pub(crate) fn run(
    batch: &mut BatchDecoder,
    model: &dyn CausalLm,
    text: &TextSide,
    metrics: &Metrics,
    hook: Option<&TokenHook>,
    jobs: &Receiver<GenJob>,
) {
    let mut s = Scheduler { batch, model, text, metrics, hook, answers: HashMap::new() };
    let depth = metrics.queue_depth.with_label_values(&["generate"]);
    let mut open = true;
    loop {
        let mut joining = Vec::new();
        while open && s.batch.active() + joining.len() < s.batch.max_streams() {
            let next = match s.batch.active() + joining.len() {
                0 => jobs.recv().map_err(|_| TryRecvError::Disconnected),
                _ => jobs.try_recv(),
            };
            let job = match next {
                Ok(job) => job,
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    open = false;
                    break;
                }
            };
            if let Some(job) = take_job(job, &depth, metrics) {
                joining.push(job);
            }
        }
        let alone = s.batch.active() == 0 && joining.len() == 1;
        for job in joining {
            s.admit(job, alone);
        }
        if s.batch.active() == 0 {
            match open {
                true => continue,
                false => return,
            }
        }
        let gone: Vec<SeqId> = s.answers.iter().filter(|(_, a)| a.client_gone()).map(|(id, _)| *id).collect();
        for id in gone {
            s.leave(id, false);
        }
        if s.batch.active() == 0 {
            continue;
        }
        metrics.step_streams.observe(s.batch.active() as f64);
        match catch_unwind(AssertUnwindSafe(|| s.batch.step())) {
            Ok(Ok(tokens)) => {
                for t in tokens {
                    s.deliver(t);
                }
            }
            Ok(Err(e)) => s.fail_all(ApiError::internal(format!("the model failed: {e}"))),
            Err(_) => s.fail_all(ApiError::internal(
                "the model panicked on a decode step; its requests failed, the server goes on serving others",
            )),
        }
    }
}

impl<'a> Scheduler<'a> {
    /// Joins `job` to the batch: `alone`, through the prefill at once, sending its first
    /// token; otherwise enqueued, its first token coming with a later step (see the module doc).
    fn admit(&mut self, job: GenJob, alone: bool) {
        let params = SeqParams {
            max_new: job.max_tokens,
            stop: job.stop_ids.clone(),
            sampling: job.spec,
            seed: job.seed,
        };
        let prompt = job.prompt.clone();
        let mut answer = Answer::new(job, &self.text.tokenizer);
        let batch = &mut *self.batch;
        let joined = catch_unwind(AssertUnwindSafe(|| match alone {
            true => batch.add(&prompt, params).map(|first| (first.id, Some(first))),
            false => batch.enqueue(&prompt, params).map(|id| (id, None)),
        }));
        match joined {
            Ok(Ok((id, first))) => {
                self.answers.insert(id, answer);
                if let Some(first) = first {
                    self.deliver(first);
                }
            }
            Ok(Err(e)) => {
                answer.fail(ApiError::internal(format!("the model failed: {e}")));
                self.retire(answer);
            }
            Err(_) => {
                answer.fail(ApiError::internal(
                    "the model panicked on this request's prompt; the server goes on serving others",
                ));
                self.retire(answer);
            }
        }
    }

    /// Hands one new token to its request; a request that is over leaves the batch.
    fn deliver(&mut self, t: SeqToken) {
        let Some(answer) = self.answers.get_mut(&t.id) else { return };
        let next = match t.token {
            Ok(token) => answer.token(token, self.metrics, self.hook),
            Err(e) => answer.fail(ApiError::internal(format!("the model failed: {e}"))),
        };
        if next == Next::Done || t.finished {
            self.leave(t.id, t.finished);
        }
    }

    /// Takes request `id` out of the batch and ends its answer. `finished`: the batch ended
    /// the sequence itself (budget, stop token, non-finite logits), so it has left already.
    fn leave(&mut self, id: SeqId, finished: bool) {
        if !finished {
            if let Err(e) = self.batch.remove(id) {
                // The sequence is in the batch by construction; a failure here is a bug that the
                // log should show, but the request still ends.
                eprintln!("rlx serve: could not free the batch slot of a finished request: {e}");
            }
        }
        if let Some(answer) = self.answers.remove(&id) {
            self.retire(answer);
        }
    }

    /// Every request in the batch fails with `error`; the batch is emptied.
    fn fail_all(&mut self, error: ApiError) {
        let ids: Vec<SeqId> = self.answers.keys().copied().collect();
        for id in ids {
            if let Some(answer) = self.answers.get_mut(&id) {
                answer.fail(error.clone());
            }
            self.leave(id, false);
        }
    }

    /// Sends how `answer` ended (counted as cancelled when its client had gone).
    fn retire(&self, answer: Answer<'_>) {
        // Before the answer ends: a client that saw [DONE] reads the objects held after it.
        self.metrics.record_live("generate", self.model.live_objects());
        if !answer.close(self.metrics) {
            self.metrics.cancelled.inc();
        }
    }
}
