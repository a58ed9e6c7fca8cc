//! One generation, shared by `Decoder.generate` / `Decoder.chat` (whole text) and their
//! `stream=True` form (`rlx.TextStream`, an iterator of text pieces fed by a worker thread).
//!
//! [`run`] drives the model's token loop and turns tokens into text pieces: each token's text
//! once it is whole (the tokenizer's decode stream holds back a token that ends inside a
//! character), cut at the first stop string, with the last `longest stop − 1` bytes held back
//! so a stop string split across tokens is never emitted in part. Generation ends at
//! `max_tokens`, a stop id, a stop string, or when the caller's callback says so.

use crate::embedder::lock;
use crate::errors::{self, ModelError as PyModelError};
use pyo3::prelude::*;
use rlx_models::{CausalLm, SamplingSpec};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Mutex;
use std::time::Duration;
use tokenizers::Tokenizer;

/// A loaded causal LM of either family (a concrete enum rather than `Box<dyn CausalLm>`, so that
/// it is `Send` and can move to the streaming worker).
pub enum Lm {
    Decoder(Box<rlx_models::Decoder>),
    Mamba(Box<rlx_models::Mamba>),
}

impl Lm {
    pub fn as_dyn(&mut self) -> &mut dyn CausalLm {
        match self {
            Lm::Decoder(d) => d.as_mut(),
            Lm::Mamba(m) => m.as_mut(),
        }
    }

    pub fn info(&self) -> rlx_models::LmInfo {
        match self {
            Lm::Decoder(d) => d.info(),
            Lm::Mamba(m) => m.info(),
        }
    }
}

/// What to generate.
#[derive(Clone, Debug)]
pub struct Request {
    pub prompt: Vec<i32>,
    pub max_tokens: usize,
    pub spec: SamplingSpec,
    pub seed: u32,
    /// Token ids that end the generation (their own text is kept; special tokens decode to "").
    pub stop_ids: Vec<i32>,
    /// Strings that end the generation; the text stops before the first one.
    pub stop_strings: Vec<String>,
}

/// Turns token ids into text pieces, cutting at stop strings.
struct Text<'t> {
    tok: &'t Tokenizer,
    stream: tokenizers::DecodeStream<
        't,
        tokenizers::ModelWrapper,
        tokenizers::NormalizerWrapper,
        tokenizers::PreTokenizerWrapper,
        tokenizers::PostProcessorWrapper,
        tokenizers::DecoderWrapper,
    >,
    text: String,
    emitted: usize,
    stops: &'t [String],
    hold: usize,
}

impl<'t> Text<'t> {
    fn new(tok: &'t Tokenizer, stops: &'t [String]) -> Self {
        let hold = stops.iter().map(String::len).max().unwrap_or(1).saturating_sub(1);
        Text { tok, stream: tok.decode_stream(true), text: String::new(), emitted: 0, stops, hold }
    }

    /// The byte offset of the first stop string at or after `emitted`.
    fn stop_at(&self) -> Option<usize> {
        let rest = self.text.get(self.emitted..)?;
        self.stops
            .iter()
            .filter(|s| !s.is_empty())
            .filter_map(|s| rest.find(s.as_str()))
            .min()
            .map(|p| p + self.emitted)
    }

    /// Adds token `id`; returns the text that may be shown now and whether a stop string ended it.
    fn push(&mut self, id: i32) -> PyResult<(String, bool)> {
        let piece = self
            .stream
            .step(id as u32)
            .map_err(|e| PyModelError::new_err(format!("decoding token {id}: {e}")))?;
        if let Some(p) = piece {
            self.text.push_str(&p);
        }
        Ok(self.take(false))
    }

    /// The text not shown yet up to a stop string, or up to the held-back tail (all of it when
    /// `last`), and whether a stop string was found.
    fn take(&mut self, last: bool) -> (String, bool) {
        if let Some(at) = self.stop_at() {
            let out = self.text.get(self.emitted..at).unwrap_or_default().to_string();
            self.emitted = at;
            return (out, true);
        }
        let mut end =
            if last { self.text.len() } else { self.text.len().saturating_sub(self.hold).max(self.emitted) };
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        let out = self.text.get(self.emitted..end).unwrap_or_default().to_string();
        self.emitted = end.max(self.emitted);
        (out, false)
    }

    /// After the last token: what the decode stream still held (a character left unfinished)
    /// comes from decoding all `ids` at once, then the rest up to a stop string.
    fn finish(&mut self, ids: &[i32]) -> PyResult<String> {
        let all: Vec<u32> = ids.iter().map(|&i| i as u32).collect();
        let full =
            self.tok.decode(&all, true).map_err(|e| PyModelError::new_err(format!("decoding: {e}")))?;
        if full.starts_with(self.text.as_str()) {
            self.text = full;
        }
        Ok(self.take(true).0)
    }
}

/// Runs `req` on `lm`. Each piece of text (or "" per token without a tokenizer) goes to
/// `on_piece`, which returns `Ok(false)` to stop or an error to abort. Returns the new ids.
pub fn run(
    lm: &mut Lm,
    tok: Option<&Tokenizer>,
    req: &Request,
    on_piece: &mut dyn FnMut(String) -> PyResult<bool>,
) -> PyResult<Vec<i32>> {
    let mut text = tok.map(|t| Text::new(t, &req.stop_strings));
    let mut failure: Option<PyErr> = None;
    let mut stopped_by_string = false;
    let mut new_ids: Vec<i32> = Vec::new();
    let mut on_token = |id: i32| -> bool {
        new_ids.push(id);
        let step = match &mut text {
            Some(t) => t.push(id),
            None => Ok((String::new(), false)),
        };
        let (piece, hit) = match step {
            Ok(v) => v,
            Err(e) => {
                failure = Some(e);
                return false;
            }
        };
        if hit {
            stopped_by_string = true;
        }
        match on_piece(piece) {
            Ok(go) => go && !hit && !req.stop_ids.contains(&id),
            Err(e) => {
                failure = Some(e);
                false
            }
        }
    };
    let result = lm.as_dyn().generate(&req.prompt, req.max_tokens, &req.spec, req.seed, &mut on_token);
    if let Some(e) = failure {
        return Err(e);
    }
    let ids = result.map_err(errors::from_model)?;
    if let (Some(t), false) = (&mut text, stopped_by_string) {
        let rest = t.finish(&ids)?;
        if !rest.is_empty() {
            on_piece(rest)?;
        }
    }
    Ok(ids)
}

/// A message from the streaming worker.
pub enum Event {
    Piece(String),
    Done(PyResult<()>),
}

/// An iterator over the text pieces of a generation running on a worker thread. Dropping it
/// (or `close()`) stops the generation at the next token.
#[pyclass(module = "rlx", name = "TextStream")]
pub struct TextStream {
    rx: Mutex<Option<Receiver<Event>>>,
}

impl TextStream {
    pub fn new(rx: Receiver<Event>) -> Self {
        TextStream { rx: Mutex::new(Some(rx)) }
    }
}

/// How long `__next__` waits for a piece before it checks for Ctrl-C.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

#[pymethods]
impl TextStream {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// The next piece of text; StopIteration at the end. Waits with the GIL released and checks
    /// for Ctrl-C every 50 ms (a KeyboardInterrupt also stops the generation). The loop ends:
    /// the worker's generation is bounded by max_tokens and ends with a Done event or by
    /// dropping its sender.
    fn __next__(&self, py: Python<'_>) -> PyResult<Option<String>> {
        loop {
            let got = py.detach(|| {
                let guard = lock(&self.rx);
                guard.as_ref().map(|rx| rx.recv_timeout(SIGNAL_POLL))
            });
            match got {
                None => return Ok(None),
                Some(Ok(Event::Piece(p))) => {
                    if !p.is_empty() {
                        return Ok(Some(p));
                    }
                }
                Some(Ok(Event::Done(result))) => {
                    self.close(py);
                    result?;
                    return Ok(None);
                }
                Some(Err(RecvTimeoutError::Disconnected)) => {
                    self.close(py);
                    return Ok(None);
                }
                Some(Err(RecvTimeoutError::Timeout)) => {
                    if let Err(e) = py.check_signals() {
                        self.close(py);
                        return Err(e);
                    }
                }
            }
        }
    }

    /// Stops the generation (at its next token) and ends the iteration.
    fn close(&self, py: Python<'_>) {
        py.detach(|| lock(&self.rx).take());
    }
}
