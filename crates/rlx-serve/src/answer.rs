//! [`Answer`]: one generation request's side of the worker, token by token. The FIFO loop and
//! the continuous-batching loop of [`crate::lm_worker`] both feed it the request's tokens as
//! they come; it decodes them to text (the tokenizer's decode stream), applies the `stop`
//! strings ([`StopFilter`]), sends the text on the request's channel, records time to first
//! token and per-token latency, and finally builds the [`Finish`].

use crate::api::Usage;
use crate::error::ApiError;
use crate::lm_worker::{Finish, GenEvent, GenJob, TokenHook};
use crate::metrics::Metrics;
use crate::text::StopFilter;
use std::time::Instant;
use tokenizers::decoders::DecoderWrapper;
use tokenizers::models::ModelWrapper;
use tokenizers::normalizers::NormalizerWrapper;
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::processors::PostProcessorWrapper;
use tokenizers::{DecodeStream, Tokenizer};

type Stream<'t> = DecodeStream<
    't,
    ModelWrapper,
    NormalizerWrapper,
    PreTokenizerWrapper,
    PostProcessorWrapper,
    DecoderWrapper,
>;

/// Whether an answer goes on after a token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Feed it the next token.
    More,
    /// It is over (a stop token or string, a failure, or the client went away): call
    /// [`Answer::finish`].
    Done,
}

/// See the module doc.
pub struct Answer<'t> {
    pub job: GenJob,
    tokenizer: &'t Tokenizer,
    stream: Stream<'t>,
    filter: StopFilter,
    ids: Vec<u32>,
    count: usize,
    reason: &'static str,
    last: Option<Instant>,
    failure: Option<ApiError>,
    gone: bool,
}

impl<'t> Answer<'t> {
    /// The answer to `job`, whose text `tokenizer` decodes.
    pub fn new(job: GenJob, tokenizer: &'t Tokenizer) -> Answer<'t> {
        let filter = StopFilter::new(job.stops.clone());
        Answer {
            job,
            tokenizer,
            stream: tokenizer.decode_stream(true),
            filter,
            ids: Vec::new(),
            count: 0,
            reason: "length",
            last: None,
            failure: None,
            gone: false,
        }
    }

    /// Whether the request's client has gone away (its channel is closed).
    pub fn client_gone(&self) -> bool {
        self.job.events.is_closed()
    }

    /// Takes the next token of the generation. `hook` (tests) runs after each token whose text
    /// went out.
    pub fn token(&mut self, token: i32, metrics: &Metrics, hook: Option<&TokenHook>) -> Next {
        self.count += 1;
        let now = Instant::now();
        match self.last {
            None => metrics.ttft.observe(now.duration_since(self.job.admitted).as_secs_f64()),
            Some(t) => metrics.per_token.observe(now.duration_since(t).as_secs_f64()),
        }
        self.last = Some(now);
        if self.job.stop_ids.contains(&token) {
            self.reason = "stop";
            return Next::Done;
        }
        let Ok(id) = u32::try_from(token) else {
            return self.fail(ApiError::internal(format!(
                "the model produced token id {token}, outside the vocabulary"
            )));
        };
        self.ids.push(id);
        match self.stream.step(id) {
            Ok(Some(piece)) => {
                let out = self.filter.push(&piece);
                self.send(out);
            }
            Ok(None) => {}
            Err(e) => return self.fail(ApiError::internal(format!("decoding token {id}: {e}"))),
        }
        if self.filter.stopped() {
            self.reason = "stop";
            return Next::Done;
        }
        if let Some(hook) = hook {
            let events = &self.job.events;
            hook(&|| events.is_closed());
        }
        if self.client_gone() {
            self.gone = true;
            return Next::Done;
        }
        Next::More
    }

    /// Records a failure of this request; the answer is over.
    pub fn fail(&mut self, error: ApiError) -> Next {
        self.failure.get_or_insert(error);
        Next::Done
    }

    fn send(&self, s: String) {
        if !s.is_empty() {
            let _ = self.job.events.send(GenEvent::Text(s));
        }
    }

    /// Ends the answer: counts its tokens, sends what text is left and returns how it ended
    /// (`None`: the client went away midway, nothing more to send). Called once, by `close`.
    fn finish(&mut self, metrics: &Metrics) -> Result<Option<Finish>, ApiError> {
        metrics.completion_tokens.inc_by(self.count as u64);
        metrics.prompt_tokens.inc_by(self.job.prompt.len() as u64);
        if let Some(e) = self.failure.take() {
            return Err(e);
        }
        // Gone at a token, or between steps (the batching loop drops such requests unasked).
        if self.gone || self.client_gone() {
            return Ok(None);
        }
        // What the decode stream still holds (a character the last token left unfinished)
        // comes from the whole decode.
        if !self.filter.stopped() {
            let full = self
                .tokenizer
                .decode(&self.ids, true)
                .map_err(|e| ApiError::internal(format!("decoding: {e}")))?;
            if let Some(rest) = full.strip_prefix(self.filter.received()) {
                let out = self.filter.push(rest);
                self.send(out);
            }
            if self.filter.stopped() {
                self.reason = "stop";
            }
            let out = self.filter.finish();
            self.send(out);
        }
        let prompt = self.job.prompt.len();
        let usage =
            Usage { prompt_tokens: prompt, completion_tokens: self.count, total_tokens: prompt + self.count };
        Ok(Some(Finish { reason: self.reason, usage }))
    }

    /// Sends how the answer ended: its [`Finish`] or its error. Returns false when the client
    /// had gone (nothing sent; count it as cancelled).
    /// The job (and its admission slot) is dropped after the event is sent.
    pub fn close(mut self, metrics: &Metrics) -> bool {
        let event = match self.finish(metrics) {
            Ok(Some(finish)) => GenEvent::Done(finish),
            Ok(None) => return false,
            Err(e) => GenEvent::Failed(e),
        };
        let _ = self.job.events.send(event);
        true
    }
}
