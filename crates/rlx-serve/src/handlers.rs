//! The model endpoints: chat and completions (checked, admitted, handed to the generation
//! worker, answered whole or as server-sent events) and embeddings (handed to the embedding
//! worker, which batches them).

use crate::api::{
    now_secs, AssistantMessage, ChatChoice, ChatChunk, ChatCompletion, ChatRequest, ChunkChoice, Completion,
    CompletionChoice, CompletionRequest, Content, Delta, EmbeddingData, EmbeddingRequest, EmbeddingResponse,
    EmbeddingUsage, EmbeddingValue, GenParams, Prompt, Stop, Usage,
};
use crate::embed_worker::EmbedJob;
use crate::error::ApiError;
use crate::lm_worker::{Finish, GenEvent, GenJob, TextSide};
use crate::routes::{JsonBody, LmReady, Served, Shared};
use axum::extract::State;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use futures_util::StreamExt as _;
use rlx_models::{Message, SamplingSpec};
use std::convert::Infallible;
use std::time::Instant;
use tokio::sync::mpsc::UnboundedReceiver;

/// OpenAI's limits: stop strings per request and texts per embedding request.
const MAX_STOPS: usize = 4;
const MAX_EMBED_INPUTS: usize = 2048;

fn lm(state: &Shared) -> Result<(&Served<GenJob, LmReady>, &TextSide, LmReady), ApiError> {
    let (served, text) = state.lm.as_ref().ok_or_else(|| {
        ApiError::not_found("this server has no language model: start it with --model to serve generations")
    })?;
    Ok((served, text.as_ref(), served.ready()?))
}

/// `POST /v1/chat/completions`.
pub(crate) async fn chat(
    State(state): State<Shared>,
    JsonBody(req): JsonBody<ChatRequest>,
) -> Result<Response, ApiError> {
    let (served, text, ready) = lm(&state)?;
    let template = text.template.as_ref().ok_or_else(|| {
        ApiError::bad_request(format!(
            "the model {} ships no chat template; send the prompt as text to /v1/completions",
            served.id
        ))
    })?;
    if req.messages.is_empty() {
        return Err(ApiError::bad_param("messages", "messages is empty: give at least one message"));
    }
    let max_tokens = match (req.max_tokens, req.max_completion_tokens) {
        (Some(_), Some(_)) => {
            return Err(ApiError::bad_param(
                "max_completion_tokens",
                "max_tokens and max_completion_tokens both given: they are the same limit, give one",
            ))
        }
        (a, b) => a.or(b),
    };
    let mut messages = Vec::with_capacity(req.messages.len());
    for (i, m) in req.messages.into_iter().enumerate() {
        let content = match m.content {
            Content::Text(t) => t,
            Content::Parts(parts) => {
                let mut joined = String::new();
                for p in parts {
                    if p.kind != "text" {
                        return Err(ApiError::bad_param(
                            &format!("messages[{i}].content"),
                            format!("content part of type '{}': only text parts are served", p.kind),
                        ));
                    }
                    joined.push_str(&p.text);
                }
                joined
            }
        };
        messages.push(Message::new(m.role, content));
    }
    let rendered =
        template.render(&messages, true).map_err(|e| ApiError::bad_param("messages", e.to_string()))?;
    // The template placed the special tokens: none are added again.
    let prompt = tokenize(text, &rendered, false)?;
    let params = GenParams {
        temperature: req.temperature,
        top_p: req.top_p,
        max_tokens,
        stop: req.stop,
        seed: req.seed,
        n: req.n,
        stream: req.stream.unwrap_or(false),
        include_usage: req.stream_options.is_some_and(|o| o.include_usage),
    };
    let answer = Answer {
        id: state.response_id("chatcmpl"),
        created: now_secs(),
        model: served.id.clone(),
        chat: true,
        include_usage: params.include_usage,
    };
    let rx = admit(&state, served, ready, prompt, &params, text.chat_stop_ids.clone(), "messages")?;
    respond(answer, rx, params.stream).await
}

/// `POST /v1/completions`.
pub(crate) async fn completions(
    State(state): State<Shared>,
    JsonBody(req): JsonBody<CompletionRequest>,
) -> Result<Response, ApiError> {
    let (served, text, ready) = lm(&state)?;
    let one_prompt = |n: usize| {
        ApiError::bad_param("prompt", format!("{n} prompts in one request: one prompt per request is served"))
    };
    let prompt = match req.prompt {
        Prompt::Text(s) => tokenize(text, &s, true)?,
        Prompt::Texts(v) if v.len() == 1 => tokenize(text, &v[0], true)?,
        Prompt::Tokens(ids) => token_ids(&ids, ready.vocab)?,
        Prompt::TokenLists(v) if v.len() == 1 => token_ids(&v[0], ready.vocab)?,
        Prompt::Texts(v) => return Err(one_prompt(v.len())),
        Prompt::TokenLists(v) => return Err(one_prompt(v.len())),
    };
    let params = GenParams {
        temperature: req.temperature,
        top_p: req.top_p,
        max_tokens: req.max_tokens,
        stop: req.stop,
        seed: req.seed,
        n: req.n,
        stream: req.stream.unwrap_or(false),
        include_usage: req.stream_options.is_some_and(|o| o.include_usage),
    };
    let answer = Answer {
        id: state.response_id("cmpl"),
        created: now_secs(),
        model: served.id.clone(),
        chat: false,
        include_usage: params.include_usage,
    };
    let rx = admit(&state, served, ready, prompt, &params, text.stop_ids.clone(), "prompt")?;
    respond(answer, rx, params.stream).await
}

/// A prompt given as token ids: each must be in `0..vocab`.
fn token_ids(ids: &[i64], vocab: usize) -> Result<Vec<i32>, ApiError> {
    ids.iter()
        .enumerate()
        .map(|(at, &id)| match i32::try_from(id) {
            Ok(t) if t >= 0 && (t as usize) < vocab => Ok(t),
            _ => Err(ApiError::bad_param(
                "prompt",
                format!("token id {id} at position {at} is outside the model's vocabulary of {vocab} ids (0..{vocab})"),
            )),
        })
        .collect()
}

fn tokenize(text: &TextSide, s: &str, special: bool) -> Result<Vec<i32>, ApiError> {
    let enc = text
        .tokenizer
        .encode(s, special)
        .map_err(|e| ApiError::bad_request(format!("tokenizing the prompt: {e}")))?;
    enc.get_ids()
        .iter()
        .map(|&i| {
            i32::try_from(i).map_err(|_| ApiError::internal(format!("the tokenizer gave id {i}, past i32")))
        })
        .collect()
}

/// Checks the request against the context and the sampling rules, then admits it (or 429s)
/// and hands it to the worker; returns the channel its answer comes on.
fn admit(
    state: &Shared,
    served: &Served<GenJob, LmReady>,
    ready: LmReady,
    prompt: Vec<i32>,
    p: &GenParams,
    stop_ids: Vec<i32>,
    prompt_param: &str,
) -> Result<UnboundedReceiver<GenEvent>, ApiError> {
    if let Some(n) = p.n.filter(|&n| n != 1) {
        return Err(ApiError::bad_param(
            "n",
            format!("n = {n}: only n = 1 is served; send the request again for more choices"),
        ));
    }
    let temperature = p.temperature.unwrap_or(1.0);
    if !(temperature.is_finite() && (0.0..=2.0).contains(&temperature)) {
        return Err(ApiError::bad_param(
            "temperature",
            format!("temperature {temperature} is outside [0, 2]"),
        ));
    }
    let top_p = p.top_p.unwrap_or(1.0);
    if !(top_p.is_finite() && top_p > 0.0 && top_p <= 1.0) {
        return Err(ApiError::bad_param("top_p", format!("top_p {top_p} is outside (0, 1]")));
    }
    let seed = match p.seed {
        Some(s) => u32::try_from(s)
            .map_err(|_| ApiError::bad_param("seed", format!("seed {s} is outside 0..={}", u32::MAX)))?,
        // No seed: a different draw each time, as OpenAI does.
        None => {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos())
        }
    };
    let stops = p.stop.clone().map(Stop::into_vec).unwrap_or_default();
    if stops.len() > MAX_STOPS {
        return Err(ApiError::bad_param(
            "stop",
            format!("{} stop strings: at most {MAX_STOPS}", stops.len()),
        ));
    }
    if prompt.is_empty() {
        return Err(ApiError::bad_param(
            prompt_param,
            "the prompt is empty: it must hold at least one token",
        ));
    }
    let ctx = ready.ctx;
    let limit = "the context (--ctx-size, at most the model's max_position_embeddings)";
    if prompt.len() >= ctx {
        return Err(ApiError::context(
            prompt_param,
            format!(
                "the prompt is {} tokens and {limit} holds {ctx}, prompt and answer together: shorten it below \
                 {ctx} tokens",
                prompt.len()
            ),
        ));
    }
    let room = ctx - prompt.len();
    let max_tokens = match p.max_tokens {
        Some(0) => return Err(ApiError::bad_param("max_tokens", "max_tokens is 0: ask for at least one token")),
        Some(m) if m > room as u64 => {
            return Err(ApiError::context(
                "max_tokens",
                format!(
                    "max_tokens {m} with the prompt's {} tokens exceeds {limit} of {ctx} tokens: ask for at most \
                     {room}",
                    prompt.len()
                ),
            ))
        }
        Some(m) => m as usize,
        None => room,
    };
    let permit = served
        .slots
        .clone()
        .try_acquire_owned()
        .map_err(|_| ApiError::queue_full("generation", served.capacity))?;
    let spec = SamplingSpec { temperature, top_k: None, top_p, repetition_penalty: 1.0 };
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let job = GenJob {
        prompt,
        max_tokens,
        spec,
        seed,
        stop_ids,
        stops,
        events: tx,
        permit,
        admitted: Instant::now(),
    };
    let depth = state.metrics.queue_depth.with_label_values(&["generate"]);
    depth.inc();
    if served.jobs.send(job).is_err() {
        depth.dec();
        return Err(ApiError::unavailable("the generation worker has stopped; the server is shutting down"));
    }
    Ok(rx)
}

/// How the answer to one generation request is shaped.
#[derive(Clone)]
struct Answer {
    id: String,
    created: u64,
    model: String,
    chat: bool,
    include_usage: bool,
}

impl Answer {
    fn whole(&self, text: String, finish: Finish) -> Response {
        if self.chat {
            axum::Json(ChatCompletion {
                id: self.id.clone(),
                object: "chat.completion",
                created: self.created,
                model: self.model.clone(),
                choices: vec![ChatChoice {
                    index: 0,
                    message: AssistantMessage { role: "assistant", content: text },
                    finish_reason: finish.reason,
                    logprobs: None,
                }],
                usage: finish.usage,
            })
            .into_response()
        } else {
            axum::Json(self.completion(Some(text), Some(finish.reason), Some(finish.usage))).into_response()
        }
    }

    fn completion(
        &self,
        text: Option<String>,
        finish: Option<&'static str>,
        usage: Option<Usage>,
    ) -> Completion {
        Completion {
            id: self.id.clone(),
            object: "text_completion",
            created: self.created,
            model: self.model.clone(),
            choices: text
                .map(|text| vec![CompletionChoice { index: 0, text, finish_reason: finish, logprobs: None }])
                .unwrap_or_default(),
            usage,
        }
    }

    fn chunk(&self, delta: Option<Delta>, finish: Option<&'static str>, usage: Option<Usage>) -> ChatChunk {
        ChatChunk {
            id: self.id.clone(),
            object: "chat.completion.chunk",
            created: self.created,
            model: self.model.clone(),
            choices: delta
                .map(|delta| vec![ChunkChoice { index: 0, delta, finish_reason: finish, logprobs: None }])
                .unwrap_or_default(),
            usage,
        }
    }

    fn event<T: serde::Serialize>(value: &T) -> Event {
        Event::default().data(serde_json::to_string(value).unwrap_or_default())
    }

    /// The first event of a chat stream: the assistant's role.
    fn opening(&self) -> Vec<Event> {
        if self.chat {
            let delta = Delta { role: Some("assistant"), content: Some(String::new()) };
            vec![Self::event(&self.chunk(Some(delta), None, None))]
        } else {
            Vec::new()
        }
    }

    fn text(&self, text: String) -> Event {
        if self.chat {
            Self::event(&self.chunk(Some(Delta { role: None, content: Some(text) }), None, None))
        } else {
            Self::event(&self.completion(Some(text), None, None))
        }
    }

    /// The closing events: the finish reason, the usage when asked, `[DONE]`.
    fn closing(&self, finish: Finish) -> Vec<Event> {
        let mut out = vec![if self.chat {
            Self::event(&self.chunk(Some(Delta::default()), Some(finish.reason), None))
        } else {
            Self::event(&self.completion(Some(String::new()), Some(finish.reason), None))
        }];
        if self.include_usage {
            out.push(if self.chat {
                Self::event(&self.chunk(None, None, Some(finish.usage)))
            } else {
                Self::event(&self.completion(None, None, Some(finish.usage)))
            });
        }
        out.push(Event::default().data("[DONE]"));
        out
    }
}

/// The answer, whole or streamed.
async fn respond(
    answer: Answer,
    mut rx: UnboundedReceiver<GenEvent>,
    stream: bool,
) -> Result<Response, ApiError> {
    if stream {
        return Ok(sse(answer, rx).into_response());
    }
    let mut text = String::new();
    while let Some(event) = rx.recv().await {
        match event {
            GenEvent::Text(s) => text.push_str(&s),
            GenEvent::Done(finish) => return Ok(answer.whole(text, finish)),
            GenEvent::Failed(e) => return Err(e),
        }
    }
    Err(ApiError::internal("the generation worker ended without an answer"))
}

enum Phase {
    Open,
    Body,
    End,
}

/// The events of a streamed answer. The stream owns the worker's channel: when the client
/// goes away the body is dropped, the channel closes, and the worker stops at its next token.
fn sse(
    answer: Answer,
    rx: UnboundedReceiver<GenEvent>,
) -> Sse<impl futures_util::Stream<Item = Result<Event, Infallible>>> {
    let events =
        futures_util::stream::unfold((rx, Phase::Open, answer), |(mut rx, phase, answer)| async move {
            let (events, next) = match phase {
                Phase::Open => (answer.opening(), Phase::Body),
                Phase::Body => match rx.recv().await {
                    Some(GenEvent::Text(s)) => (vec![answer.text(s)], Phase::Body),
                    Some(GenEvent::Done(finish)) => (answer.closing(finish), Phase::End),
                    Some(GenEvent::Failed(e)) => (vec![Event::default().data(e.body_json())], Phase::End),
                    None => {
                        let e = ApiError::internal("the generation worker ended without an answer");
                        (vec![Event::default().data(e.body_json())], Phase::End)
                    }
                },
                Phase::End => return None,
            };
            Some((events, (rx, next, answer)))
        });
    Sse::new(events.flat_map(|v| futures_util::stream::iter(v.into_iter().map(Ok))))
}

/// `POST /v1/embeddings`.
pub(crate) async fn embeddings(
    State(state): State<Shared>,
    JsonBody(req): JsonBody<EmbeddingRequest>,
) -> Result<Response, ApiError> {
    let served = state.embed.as_ref().ok_or_else(|| {
        ApiError::not_found(
            "this server has no embedding model: start it with --embedding-model to serve embeddings",
        )
    })?;
    let info = served.ready()?;
    let inputs = req.input.into_vec();
    if inputs.is_empty() {
        return Err(ApiError::bad_param("input", "input is empty: give a text or a list of texts"));
    }
    if inputs.len() > MAX_EMBED_INPUTS {
        return Err(ApiError::bad_param(
            "input",
            format!("{} texts in one request: at most {MAX_EMBED_INPUTS}", inputs.len()),
        ));
    }
    let base64 = match req.encoding_format.as_deref() {
        None | Some("float") => false,
        Some("base64") => true,
        Some(other) => {
            return Err(ApiError::bad_param(
                "encoding_format",
                format!("encoding_format '{other}': use float or base64"),
            ))
        }
    };
    if let Some(d) = req.dimensions.filter(|&d| d != info.dim as u64) {
        return Err(ApiError::bad_param(
            "dimensions",
            format!("dimensions {d}: {} gives {} dimensions only", served.id, info.dim),
        ));
    }
    let permit = served
        .slots
        .clone()
        .try_acquire_owned()
        .map_err(|_| ApiError::queue_full("embedding", served.capacity))?;
    let (reply, answer) = tokio::sync::oneshot::channel();
    let depth = state.metrics.queue_depth.with_label_values(&["embed"]);
    depth.inc();
    if served.jobs.send(EmbedJob { inputs, reply, permit }).is_err() {
        depth.dec();
        return Err(ApiError::unavailable("the embedding worker has stopped; the server is shutting down"));
    }
    let out =
        answer.await.map_err(|_| ApiError::internal("the embedding worker ended without an answer"))??;
    let data = out
        .embeddings
        .into_iter()
        .enumerate()
        .map(|(index, v)| {
            let embedding = if base64 {
                let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                EmbeddingValue::Base64(base64::engine::general_purpose::STANDARD.encode(bytes))
            } else {
                EmbeddingValue::Float(v)
            };
            EmbeddingData { object: "embedding", index, embedding }
        })
        .collect();
    Ok(axum::Json(EmbeddingResponse {
        object: "list",
        data,
        model: served.id.clone(),
        usage: EmbeddingUsage { prompt_tokens: out.tokens, total_tokens: out.tokens },
    })
    .into_response())
}
