//! `rlx.Decoder`: a causal language model (a Hugging Face checkpoint folder of Llama, Qwen2,
//! Qwen3, Mistral or Mamba-1, or a `.gguf` file) with `generate`, `generate_ids`, `chat`,
//! `tokenize` and `detokenize`.
//!
//! The text side (tokenizer, chat template, stop ids) is read from the files as `rlx generate`
//! reads it. Generation runs with the GIL released; whole-text calls check for Ctrl-C between
//! tokens, and `stream=True` runs on a worker thread feeding an `rlx.TextStream`.

use crate::convert;
use crate::embedder::lock;
use crate::errors::{self, InvalidInput, ModelError as PyModelError};
use crate::generation::{self, Event, Lm, Request, TextStream};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use rlx_models::{ChatTemplate, DecoderOptions, Message, Precision, SamplingSpec};
use std::path::PathBuf;
use std::sync::{mpsc, Arc, Mutex};
use tokenizers::Tokenizer;

/// A causal language model on one device.
#[pyclass(module = "rlx", name = "Decoder")]
pub struct Decoder {
    inner: Arc<Mutex<Option<Lm>>>,
    tokenizer: Option<Arc<Tokenizer>>,
    stop_ids: Vec<i32>,
    path: PathBuf,
    model: String,
    device: String,
    architecture: &'static str,
    vocab_size: usize,
}

/// Sampling options as Python passes them.
struct Sampling {
    max_tokens: usize,
    temperature: f32,
    top_k: Option<usize>,
    top_p: Option<f32>,
    repetition_penalty: f32,
    seed: u32,
    stop: Vec<String>,
    ignore_eos: bool,
}

impl Sampling {
    /// The model's spec; top_k / top_p without sampling are refused (they would be ignored).
    fn spec(&self) -> PyResult<SamplingSpec> {
        if self.temperature == 0.0 && (self.top_k.is_some() || self.top_p.is_some()) {
            return Err(InvalidInput::new_err(
                "top_k and top_p only apply when sampling, and temperature=0 is greedy: pass temperature > 0 \
                 (e.g. 0.7) or drop them",
            ));
        }
        Ok(SamplingSpec {
            temperature: self.temperature,
            top_k: self.top_k,
            top_p: self.top_p.unwrap_or(1.0),
            repetition_penalty: self.repetition_penalty,
        })
    }
}

/// `stop` as Python gives it: None, one str, or a list of str.
fn stop_strings(stop: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
    match stop {
        None => Ok(Vec::new()),
        Some(s) if s.is_none() => Ok(Vec::new()),
        Some(s) if s.is_instance_of::<PyString>() => Ok(vec![s.extract()?]),
        Some(s) => s
            .extract::<Vec<String>>()
            .map_err(|_| pyo3::exceptions::PyTypeError::new_err("stop must be a str, a list of str or None")),
    }
}

impl Decoder {
    fn tokenizer(&self) -> PyResult<&Arc<Tokenizer>> {
        self.tokenizer.as_ref().ok_or_else(|| {
            PyModelError::new_err(format!(
                "{} has no tokenizer (tokenizer.json): pass the prompt as a list of token ids to generate_ids",
                self.path.display()
            ))
        })
    }

    /// The prompt's ids: a str through the tokenizer (adding its special tokens unless
    /// `special` is false), or a list of ids as given.
    fn prompt_ids(&self, prompt: &Bound<'_, PyAny>, special: bool) -> PyResult<Vec<i32>> {
        if prompt.is_instance_of::<PyString>() {
            let text: String = prompt.extract()?;
            return self.encode(&text, special);
        }
        prompt.extract::<Vec<i32>>().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err("prompt must be a str or a list of int token ids")
        })
    }

    fn encode(&self, text: &str, special: bool) -> PyResult<Vec<i32>> {
        let enc = self
            .tokenizer()?
            .encode(text, special)
            .map_err(|e| InvalidInput::new_err(format!("tokenizing the prompt: {e}")))?;
        Ok(enc.get_ids().iter().map(|&i| i as i32).collect())
    }

    fn request(&self, prompt: Vec<i32>, s: &Sampling, extra_stop: Option<i32>) -> PyResult<Request> {
        let mut stop_ids = if s.ignore_eos { Vec::new() } else { self.stop_ids.clone() };
        if let Some(id) = extra_stop.filter(|id| !s.ignore_eos && !stop_ids.contains(id)) {
            stop_ids.push(id);
        }
        Ok(Request {
            prompt,
            max_tokens: s.max_tokens,
            spec: s.spec()?,
            seed: s.seed,
            stop_ids,
            stop_strings: s.stop.clone(),
        })
    }

    /// The whole text of `req`, or a `TextStream` of it.
    fn text(&self, py: Python<'_>, req: Request, stream: bool) -> PyResult<Py<PyAny>> {
        let tok = Arc::clone(self.tokenizer()?);
        if stream {
            // Unbounded: the worker never waits for the reader, so it always finishes (within
            // max_tokens) and lets go of the model, even while an unread stream is kept and the
            // same thread calls the model again. Dropping the stream stops it at the next token.
            let (tx, rx) = mpsc::channel::<Event>();
            let model = Arc::clone(&self.inner);
            std::thread::Builder::new()
                .name("rlx-generate".into())
                .spawn(move || {
                    let mut guard = lock(&model);
                    let result = match guard.as_mut() {
                        None => Err(errors::closed("Decoder")),
                        Some(lm) => generation::run(lm, Some(&tok), &req, &mut |piece| {
                            Ok(tx.send(Event::Piece(piece)).is_ok())
                        })
                        .map(|_| ()),
                    };
                    let _ = tx.send(Event::Done(result));
                })
                .map_err(|e| PyModelError::new_err(format!("cannot start the generation thread: {e}")))?;
            return Ok(Py::new(py, TextStream::new(rx))?.into_any());
        }
        let text = py.detach(|| -> PyResult<String> {
            let mut guard = lock(&self.inner);
            let lm = guard.as_mut().ok_or_else(|| errors::closed("Decoder"))?;
            let mut out = String::new();
            generation::run(lm, Some(&tok), &req, &mut |piece| {
                out.push_str(&piece);
                Python::attach(|py| py.check_signals())?;
                Ok(true)
            })?;
            Ok(out)
        })?;
        Ok(PyString::new(py, &text).into_any().unbind())
    }
}

#[pymethods]
impl Decoder {
    /// Loads `model` (a checkpoint folder or a .gguf file) onto `device` at `precision`, its
    /// KV cache in `kv_cache` ("auto": f16 under mixed and f16 precision, f32 under f32).
    #[new]
    #[pyo3(signature = (model, device = "auto", precision = "f32", kv_cache = "auto"))]
    fn new(py: Python<'_>, model: &str, device: &str, precision: &str, kv_cache: &str) -> PyResult<Self> {
        let device = convert::device(device)?;
        let precision: Precision = convert::precision(precision)?;
        let kv_cache: rlx_models::KvCache = kv_cache.parse().map_err(InvalidInput::new_err)?;
        let (path, lm, tokenizer, stop_ids) = py
            .detach(|| -> Result<_, rlx_models::ModelError> {
                let path = crate::resolve_model(model, rlx_models::ModelFiles::Decoder)?;
                // The text side first: a broken tokenizer is told before the weights load.
                let tokenizer = rlx_models::causal_tokenizer(&path)?;
                let stop_ids = rlx_models::stop_tokens(&path)?;
                let config = path.join("config.json");
                let lm = if path.is_dir() && rlx_models::mamba::is_mamba_config(&config) {
                    if precision != Precision::F32 {
                        let reason =
                            format!("Mamba models run at f32 only; pass precision=\"f32\", not {precision}");
                        return Err(rlx_models::ModelError::Config { path: config, reason });
                    }
                    Lm::Mamba(Box::new(rlx_models::Mamba::load(&path, device)?))
                } else {
                    let opts = DecoderOptions { precision, kv_cache, ..Default::default() };
                    Lm::Decoder(Box::new(rlx_models::Decoder::with_options(&path, device, opts)?))
                };
                Ok((path, lm, tokenizer, stop_ids))
            })
            .map_err(errors::from_model)?;
        let info = lm.info();
        Ok(Decoder {
            inner: Arc::new(Mutex::new(Some(lm))),
            tokenizer: tokenizer.map(Arc::new),
            stop_ids,
            path,
            model: model.to_string(),
            device: info.device.to_string(),
            architecture: info.architecture,
            vocab_size: info.vocab_size,
        })
    }

    /// Generates after `prompt` (a str, tokenized with the model's tokenizer and its special
    /// tokens, or a list of token ids) and returns the new text; with `stream=True`, an
    /// iterator of text pieces. Stops after `max_tokens`, at the model's end-of-sequence ids
    /// (unless `ignore_eos`) and before the first of the `stop` strings. temperature=0 is
    /// greedy; `seed` makes sampling repeatable.
    #[pyo3(signature = (prompt, max_tokens = 32, temperature = 0.0, top_k = None, top_p = None, seed = 0,
                        stop = None, stream = false, repetition_penalty = 1.0, ignore_eos = false))]
    #[allow(clippy::too_many_arguments)]
    fn generate(
        &self,
        py: Python<'_>,
        prompt: &Bound<'_, PyAny>,
        max_tokens: usize,
        temperature: f32,
        top_k: Option<usize>,
        top_p: Option<f32>,
        seed: u32,
        stop: Option<&Bound<'_, PyAny>>,
        stream: bool,
        repetition_penalty: f32,
        ignore_eos: bool,
    ) -> PyResult<Py<PyAny>> {
        let s = Sampling {
            max_tokens,
            temperature,
            top_k,
            top_p,
            repetition_penalty,
            seed,
            stop: stop_strings(stop)?,
            ignore_eos,
        };
        let ids = self.prompt_ids(prompt, true)?;
        let req = self.request(ids, &s, None)?;
        self.text(py, req, stream)
    }

    /// The new token ids after `prompt` (a list of ids, or a str), as the Rust API's
    /// `CausalLm::generate` gives them: no tokenizer needed for an id prompt.
    #[pyo3(signature = (prompt, max_tokens = 32, temperature = 0.0, top_k = None, top_p = None, seed = 0,
                        repetition_penalty = 1.0, ignore_eos = false))]
    #[allow(clippy::too_many_arguments)]
    fn generate_ids(
        &self,
        py: Python<'_>,
        prompt: &Bound<'_, PyAny>,
        max_tokens: usize,
        temperature: f32,
        top_k: Option<usize>,
        top_p: Option<f32>,
        seed: u32,
        repetition_penalty: f32,
        ignore_eos: bool,
    ) -> PyResult<Vec<i32>> {
        let s = Sampling {
            max_tokens,
            temperature,
            top_k,
            top_p,
            repetition_penalty,
            seed,
            stop: Vec::new(),
            ignore_eos,
        };
        let ids = self.prompt_ids(prompt, true)?;
        let req = self.request(ids, &s, None)?;
        py.detach(|| {
            let mut guard = lock(&self.inner);
            let lm = guard.as_mut().ok_or_else(|| errors::closed("Decoder"))?;
            generation::run(lm, None, &req, &mut |_| {
                Python::attach(|py| py.check_signals())?;
                Ok(true)
            })
        })
    }

    /// Formats `messages` (a list of {"role": ..., "content": ...}) with the model's chat
    /// template, opens the assistant's turn and generates the reply (see `generate` for the
    /// options). Stops also at the template's end-of-turn token.
    #[pyo3(signature = (messages, max_tokens = 32, temperature = 0.0, top_k = None, top_p = None, seed = 0,
                        stop = None, stream = false, repetition_penalty = 1.0, ignore_eos = false))]
    #[allow(clippy::too_many_arguments)]
    fn chat(
        &self,
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        max_tokens: usize,
        temperature: f32,
        top_k: Option<usize>,
        top_p: Option<f32>,
        seed: u32,
        stop: Option<&Bound<'_, PyAny>>,
        stream: bool,
        repetition_penalty: f32,
        ignore_eos: bool,
    ) -> PyResult<Py<PyAny>> {
        let msgs = messages_of(messages)?;
        let prompt = self.apply_chat_template(py, msgs)?;
        let s = Sampling {
            max_tokens,
            temperature,
            top_k,
            top_p,
            repetition_penalty,
            seed,
            stop: stop_strings(stop)?,
            ignore_eos,
        };
        let template = ChatTemplate::for_model(&self.path).map_err(errors::from_model)?;
        let tok = self.tokenizer()?;
        let eos = template.eos_token().and_then(|t| tok.token_to_id(t)).map(|id| id as i32);
        // The template placed the special tokens: none are added again.
        let ids = self.encode(&prompt, false)?;
        let req = self.request(ids, &s, eos)?;
        self.text(py, req, stream)
    }

    /// The prompt text the chat template makes of `messages`, with the assistant's turn open.
    fn apply_chat_template_text(&self, py: Python<'_>, messages: &Bound<'_, PyAny>) -> PyResult<String> {
        let msgs = messages_of(messages)?;
        self.apply_chat_template(py, msgs)
    }

    /// Token ids of `text` (with the tokenizer's special tokens when `add_special_tokens`).
    #[pyo3(signature = (text, add_special_tokens = true))]
    fn tokenize(&self, text: &str, add_special_tokens: bool) -> PyResult<Vec<i32>> {
        self.encode(text, add_special_tokens)
    }

    /// The text of `ids` (special tokens skipped).
    fn detokenize(&self, ids: Vec<u32>) -> PyResult<String> {
        self.tokenizer()?.decode(&ids, true).map_err(|e| InvalidInput::new_err(format!("decoding ids: {e}")))
    }

    #[getter]
    fn device(&self) -> String {
        self.device.clone()
    }

    /// The Hugging Face class of the model (e.g. "Qwen2ForCausalLM").
    #[getter]
    fn architecture(&self) -> &'static str {
        self.architecture
    }

    #[getter]
    fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// The ids generation stops at by default (the model's end-of-sequence tokens).
    #[getter]
    fn eos_token_ids(&self) -> Vec<i32> {
        self.stop_ids.clone()
    }

    /// Frees the model; later calls raise rlx.ClosedError. Waits for a running stream to end.
    fn close(&self, py: Python<'_>) {
        py.detach(|| lock(&self.inner).take());
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close(py);
        false
    }

    fn __repr__(&self) -> String {
        format!(
            "rlx.Decoder({:?}, device={:?}, architecture={:?})",
            self.model, self.device, self.architecture
        )
    }
}

impl Decoder {
    fn apply_chat_template(&self, py: Python<'_>, msgs: Vec<Message>) -> PyResult<String> {
        let path = self.path.clone();
        py.detach(move || {
            let template = ChatTemplate::for_model(&path)?;
            template.render(&msgs, true)
        })
        .map_err(errors::from_model)
    }
}

/// `messages` as a list of {"role", "content"} dicts (or (role, content) pairs).
fn messages_of(messages: &Bound<'_, PyAny>) -> PyResult<Vec<Message>> {
    let bad = || {
        pyo3::exceptions::PyTypeError::new_err(
            "messages must be a list of {\"role\": str, \"content\": str} dicts (or (role, content) pairs)",
        )
    };
    let items: Vec<Bound<'_, PyAny>> = messages.extract().map_err(|_| bad())?;
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        if let Ok(d) = item.cast::<PyDict>() {
            let role = d.get_item("role")?.ok_or_else(bad)?.extract::<String>().map_err(|_| bad())?;
            let content = d.get_item("content")?.ok_or_else(bad)?.extract::<String>().map_err(|_| bad())?;
            out.push(Message::new(role, content));
        } else {
            let (role, content): (String, String) = item.extract().map_err(|_| bad())?;
            out.push(Message::new(role, content));
        }
    }
    if out.is_empty() {
        return Err(InvalidInput::new_err(
            "messages is empty: give at least one {\"role\": \"user\", ...} message",
        ));
    }
    Ok(out)
}
