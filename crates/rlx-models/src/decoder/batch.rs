//! Many sequences decoded together: a [`BatchDecoder`] admits, steps and retires sequences over
//! the batched decode graph of [`super::batched`] (continuous batching).
//!
//! Executables compiled as one group share the weights and the caches: the single-sequence
//! prefill graph of [`super::cached`] (chunk rows, its own [1, capacity, …] cache, the last
//! row's logits out), the slot copy ([`super::batched::slot_copy_graph`]), the batched step
//! and the mixed step (several rows per slot), each returning tokens, or tokens and logits. A
//! sequence joins in one of two ways:
//! - [`BatchDecoder::add`]: its prompt goes through the prefill chunk by chunk at once (the
//!   first new token comes out of it: time to first token is one prefill), then its cache is
//!   copied into a free slot. The other sequences wait for that prefill.
//! - [`BatchDecoder::enqueue`]: it takes a free slot and its prompt goes into that slot's cache
//!   [`MIX_ROWS`] tokens per step, in the same runs as the other sequences' decode (prefill
//!   chunks mixed into the step; `batch_mixed.rs`); its first token comes with the step that
//!   takes its prompt's last chunk. Sequences that arrive together go in together.
//!
//! [`BatchDecoder::step`] then feeds every active sequence's last token in one run and hands
//! back one new token each; a sequence leaves when it reaches its token budget or a stop token,
//! when its logits stop being finite, or by [`BatchDecoder::remove`], and its slot serves the
//! next one. Nothing is recompiled as sequences come and go.
//!
//! Each sequence's greedy tokens are those of [`super::Decoder::generate_greedy`] on its prompt:
//! the slots of the step are independent rows (their own cache, position and length; the
//! other rows' values never enter a row's arithmetic), and a free slot computes a harmless
//! dummy row (token 0 at position 0) whose result is ignored.
//!
//! Greedy tokens are picked on the device (the step reads back one token per slot). A sequence
//! with a sampling spec (temperature, top-k, top-p, repetition penalty) and a seed draws on the
//! host's side of the step instead (`batch_sample.rs`): while one is in the batch, the step
//! also returns the logits (slots × vocab floats read back per step: the price of sampling),
//! and its row goes through a one-row sampler graph keyed by that sequence's seed alone, as
//! `Decoder::sample` keys it, so its tokens never depend on its neighbours and equal
//! `Decoder::sample`'s for the same prompt, spec and seed.

use super::batch_sample::Samplers;
use super::batched::{
    batched_decode_graph, batched_mixed_graph, slot_copy_graph, BatchOutput, OFFSETS, SLOT,
};
use super::cached::{cached_decoder_graph, StepOutput, LOGIT_ROW, NON_FINITE_TOKEN, OFFSET, POSITIONS};
use super::graph::INPUT_IDS;
use super::model::Decoder;
use crate::common::tokens::{argmax, check_token_ids};
use crate::common::weights::set_weights;
use crate::error::{ModelError, Result};
use rlx_nn::SamplingSpec;
use rlx_runtime::{CompileOptions, Executable, HostData};

/// A sequence admitted to a [`BatchDecoder`]; ids are never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SeqId(pub u64);

impl std::fmt::Display for SeqId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "sequence {}", self.0)
    }
}

/// What a sequence asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct SeqParams {
    /// New tokens at most (≥ 1).
    pub max_new: usize,
    /// Tokens that end the sequence (the stop token is still returned).
    pub stop: Vec<i32>,
    /// How tokens are chosen (see the module doc).
    pub sampling: SamplingSpec,
    /// The seed of a sampled sequence: its t-th token draws with the key `[seed, t]`.
    pub seed: u32,
}

impl SeqParams {
    /// Greedy, `max_new` tokens, no stop token.
    pub fn greedy(max_new: usize) -> SeqParams {
        SeqParams { max_new, stop: Vec::new(), sampling: SamplingSpec::greedy(), seed: 0 }
    }
}

/// One new token of one sequence.
#[derive(Debug)]
pub struct SeqToken {
    /// Whose token.
    pub id: SeqId,
    /// The token, or [`ModelError::NonFinite`] when that sequence's logits held a NaN or an
    /// infinity (the other sequences of the step are unaffected).
    pub token: Result<i32>,
    /// Whether the sequence is over (budget reached, stop token, error): it has left the batch.
    pub finished: bool,
}

/// A sequence in a slot.
#[derive(Clone, Debug)]
pub(super) struct Seq {
    pub id: SeqId,
    /// The last token, fed by the next step.
    pub last: i32,
    /// Position of `last` (prompt length + tokens produced − 1); while `pending` holds
    /// prompt tokens, the position of the next one.
    pub pos: usize,
    pub produced: usize,
    pub params: SeqParams,
    /// Prompt and tokens so far, −1 past them, one per cache position (sampled sequences only).
    pub history: Vec<i32>,
    /// Prompt tokens of an enqueued sequence not yet in its cache (empty once it decodes).
    pub pending: Vec<i32>,
}

/// Sequences decoded together over one compiled batched step; see the module doc.
pub struct BatchDecoder {
    capacity: usize,
    chunk: usize,
    vocab: usize,
    prefill: Executable,
    /// The prefill at `short` rows, for a prompt's last part when it is that short (`None`
    /// when the chunk is below [`SHORT_PART`] rows).
    prefill_short: Option<Executable>,
    short: usize,
    copy: Executable,
    step: Executable,
    /// The same step returning the logits too: run while a sampled sequence is in the batch.
    step_logits: Executable,
    /// Tokens per slot of the mixed step ([`MIX_ROWS`] at most).
    pub(super) mix: usize,
    /// The mixed step (prefill chunks of enqueued sequences beside the others' decode), and
    /// the same returning the logits too.
    pub(super) mixed: Executable,
    pub(super) mixed_logits: Executable,
    pub(super) samplers: Samplers,
    pub(super) slots: Vec<Option<Seq>>,
    pub(super) next_id: u64,
}

impl std::fmt::Debug for BatchDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchDecoder")
            .field("slots", &self.slots.len())
            .field("capacity", &self.capacity)
            .field("active", &self.active())
            .finish()
    }
}

/// The short prefill has `chunk / SHORT_PART` rows (64 of the default 512): a prompt, or a
/// prompt's last part, of at most that many tokens runs through it instead of the full chunk,
/// so that a chat turn of 40 tokens does not pay for 512 padded rows when it joins the batch.
const SHORT_PART: usize = 8;

/// Tokens per slot of the mixed step (at most the prefill chunk): an enqueued prompt goes into
/// the cache this many tokens a step, beside the other slots' decode. More rows fill a step
/// with more prompt per weight read; every decoding slot computes them too (its padding).
pub const MIX_ROWS: usize = 16;

impl BatchDecoder {
    /// Compiles the batched decoder of `dec`'s model on `dec`'s device: up to `max_streams`
    /// sequences at once, each of at most `capacity` positions (prompt and new tokens). The
    /// weights are uploaded once more for these executables. Refused when the caches would not
    /// fit the device (the error says how many positions or streams would).
    pub fn new(dec: &Decoder, max_streams: usize, capacity: usize) -> Result<BatchDecoder> {
        let cfg = &dec.config;
        if max_streams == 0 || capacity == 0 {
            return Err(ModelError::invalid(format!(
                "a batched decoder needs at least one stream and one position; got {max_streams} \
                 streams of {capacity} positions"
            )));
        }
        if capacity > cfg.max_position_embeddings {
            return Err(ModelError::invalid(format!(
                "a capacity of {capacity} positions is more than the model's max_position_embeddings \
                 {}; ask for at most that",
                cfg.max_position_embeddings
            )));
        }
        let chunk = dec.opts.prefill_chunk.clamp(1, capacity);
        // The caches hold `mix` spare rows past the capacity: a mixed step writes `mix` rows
        // from every slot's position (see batched.rs).
        let mix = MIX_ROWS.min(chunk);
        let rows = capacity + mix;
        dec.check_cache_room(rows)?;
        check_slots_room(dec, max_streams, rows)?;
        let p = dec.opts.precision;
        let kv = dec.kv_dtype();
        let q = &dec.quant;
        // The prefill returns the last row's logits: picked on the host (argmax or a sampler),
        // once per prompt.
        let prefill = cached_decoder_graph(cfg, chunk, rows, p, kv, StepOutput::Logits, q)?;
        let copy = slot_copy_graph(cfg, max_streams, rows, kv)?;
        let step = batched_decode_graph(cfg, max_streams, rows, p, kv, BatchOutput::Tokens, q)?;
        let step_logits =
            batched_decode_graph(cfg, max_streams, rows, p, kv, BatchOutput::TokensAndLogits, q)?;
        let mixed = batched_mixed_graph(cfg, max_streams, mix, rows, (p, kv), BatchOutput::Tokens, q)?;
        let mixed_logits =
            batched_mixed_graph(cfg, max_streams, mix, rows, (p, kv), BatchOutput::TokensAndLogits, q)?;
        let short_rows = chunk / SHORT_PART;
        let short = match short_rows {
            0 => None,
            n => Some(cached_decoder_graph(cfg, n, rows, p, kv, StepOutput::Logits, q)?),
        };
        let opts = CompileOptions { precision: p, ..Default::default() };
        let mut graphs = vec![&prefill, &copy, &step, &step_logits, &mixed, &mixed_logits];
        graphs.extend(short.as_ref());
        let mut exes = dec.session.compile_group(&graphs, &opts)?.into_iter();
        let (Some(mut prefill), Some(copy), Some(step), Some(step_logits), Some(mixed), Some(mixed_logits)) =
            (exes.next(), exes.next(), exes.next(), exes.next(), exes.next(), exes.next())
        else {
            return Err(ModelError::invalid(
                "internal: compiling the batched decoder gave fewer than 6 executables",
            ));
        };
        let prefill_short = exes.next();
        // The group shares params: setting them once sets them for all four.
        set_weights(&mut prefill, &dec.weights)?;
        Ok(BatchDecoder {
            capacity,
            chunk,
            vocab: cfg.vocab_size,
            prefill,
            prefill_short,
            short: short_rows,
            copy,
            step,
            step_logits,
            mix,
            mixed,
            mixed_logits,
            samplers: Samplers::new(dec.session.device(), cfg.vocab_size, capacity),
            slots: vec![None; max_streams],
            next_id: 0,
        })
    }

    /// The GPU time of the last batched step's launches by kernel
    /// (`rlx_runtime::Executable::kernel_times`; empty unless the backend times launches).
    pub fn step_kernel_times(&self) -> Vec<(&'static str, std::time::Duration)> {
        self.step.kernel_times()
    }

    /// Sequences that fit at once.
    pub fn max_streams(&self) -> usize {
        self.slots.len()
    }

    /// Positions per sequence (prompt and new tokens).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Sequences in the batch now.
    pub fn active(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count()
    }

    /// The sequences in the batch, in slot order.
    pub fn ids(&self) -> Vec<SeqId> {
        self.slots.iter().flatten().map(|s| s.id).collect()
    }

    /// The checks of [`BatchDecoder::add`] and [`BatchDecoder::enqueue`]: a free slot for
    /// `prompt` and `params` and a new id, or the error with nothing admitted.
    pub(super) fn admit(&mut self, prompt: &[i32], params: &SeqParams) -> Result<(usize, SeqId)> {
        check_token_ids(prompt, self.vocab)?;
        if params.sampled() {
            self.samplers.prepare(&params.sampling)?;
        }
        if params.max_new == 0 {
            return Err(ModelError::invalid("max_new is 0: ask for at least one new token"));
        }
        // The last new token is never fed back.
        let used = prompt.len().saturating_add(params.max_new - 1);
        if used > self.capacity {
            return Err(ModelError::invalid(format!(
                "a prompt of {} tokens with {} new ones needs {used} positions, more than the batched \
                 decoder's capacity {}: ask for at most {} new tokens, or build the decoder with a \
                 larger capacity",
                prompt.len(),
                params.max_new,
                self.capacity,
                (self.capacity + 1).saturating_sub(prompt.len())
            )));
        }
        let Some(slot) = self.slots.iter().position(|s| s.is_none()) else {
            return Err(ModelError::invalid(format!(
                "all {} streams are busy: step until one finishes, or remove one",
                self.slots.len()
            )));
        };
        let id = SeqId(self.next_id);
        self.next_id += 1;
        Ok((slot, id))
    }

    /// Admits a sequence: runs its prompt through the prefill and returns its first new token
    /// (as [`BatchDecoder::step`] reports tokens). A sequence whose first token already ends it
    /// (a budget of one, a stop token) never takes a slot. Errors, with nothing admitted: every
    /// slot taken, an empty prompt or one with ids outside the vocabulary, a prompt and budget
    /// past the capacity, an invalid sampling spec (the error names the field).
    pub fn add(&mut self, prompt: &[i32], params: SeqParams) -> Result<SeqToken> {
        let (slot, id) = self.admit(prompt, &params)?;
        let sampled = params.sampled();
        let logits = self.prefill_prompt(prompt)?;
        let mut history = Vec::new();
        if sampled {
            history = vec![-1; self.capacity];
            history[..prompt.len()].copy_from_slice(prompt);
        }
        let at = prompt.len() - 1;
        let token = match sampled {
            true => self.samplers.draw(&logits, &params.sampling, [params.seed, 0], &history, at)?,
            false if logits.iter().any(|x| !x.is_finite()) => {
                return Err(ModelError::NonFinite { position: at })
            }
            false => argmax(&logits),
        };
        if let Some(h) = history.get_mut(prompt.len()) {
            *h = token;
        }
        let seq =
            Seq { id, last: token, pos: prompt.len(), produced: 1, params, history, pending: Vec::new() };
        let finished = seq.finished();
        if !finished {
            let at = [slot as i32];
            self.copy.run(&[(SLOT, &at as &dyn HostData)])?;
            self.slots[slot] = Some(seq);
        }
        Ok(SeqToken { id, token: Ok(token), finished })
    }

    /// Runs `prompt` (at positions 0..) through the single-sequence prefill, chunk by chunk
    /// (the last part through the short prefill when it fits; see [`SHORT_PART`]); the logits
    /// of its last row.
    fn prefill_prompt(&mut self, prompt: &[i32]) -> Result<Vec<f32>> {
        let mut logits = Vec::new();
        let mut offset = 0;
        while offset < prompt.len() {
            let left = prompt.len() - offset;
            let (exe, rows) = match self.prefill_short.as_mut() {
                Some(short) if left <= self.short => (short, self.short),
                _ => (&mut self.prefill, self.chunk),
            };
            let part = &prompt[offset..offset + left.min(rows)];
            let mut ids = part.to_vec();
            ids.resize(rows, 0);
            let positions: Vec<i32> = (offset..offset + rows).map(|p| p as i32).collect();
            let (off, row) = ([offset as i32], [part.len() as i32 - 1]);
            let inputs: [(&str, &dyn HostData); 4] =
                [(INPUT_IDS, &ids), (POSITIONS, &positions), (OFFSET, &off), (LOGIT_ROW, &row)];
            let out = exe.run(&inputs)?;
            logits = out.first().map(|t| t.to_f32_vec()).unwrap_or_default();
            offset += part.len();
        }
        if logits.len() != self.vocab {
            return Err(ModelError::OutputSize { batch: 1, dim: self.vocab, got: logits.len() });
        }
        Ok(logits)
    }

    /// Takes sequence `id` out of the batch; its slot is free for the next [`BatchDecoder::add`].
    /// An id that is not in the batch (never added, finished or removed) is an error.
    pub fn remove(&mut self, id: SeqId) -> Result<()> {
        let slot = self.slots.iter_mut().find(|s| s.as_ref().is_some_and(|s| s.id == id));
        match slot {
            Some(s) => {
                *s = None;
                Ok(())
            }
            None => Err(ModelError::invalid(format!(
                "{id} is not in the batch (finished, removed or never added)"
            ))),
        }
    }

    /// One decode step of every sequence in the batch: one run, one new token each, in slot
    /// order. Sequences that finish leave the batch. Nothing to do (an empty batch) gives an
    /// empty list without a run.
    pub fn step(&mut self) -> Result<Vec<SeqToken>> {
        if self.slots.iter().all(Option::is_none) {
            return Ok(Vec::new());
        }
        if self.slots.iter().flatten().any(|q| !q.pending.is_empty()) {
            return self.step_mixed();
        }
        let n = self.slots.len();
        // A free slot computes token 0 at position 0 (finite, ignored; its cache is rewritten
        // whole when a sequence joins it).
        let (mut ids, mut pos) = (vec![0i32; n], vec![0i32; n]);
        for (s, seq) in self.slots.iter().enumerate() {
            if let Some(q) = seq {
                ids[s] = q.last;
                pos[s] = i32::try_from(q.pos)
                    .map_err(|_| ModelError::invalid(format!("position {} is past i32", q.pos)))?;
            }
        }
        let inputs: [(&str, &dyn HostData); 3] = [(INPUT_IDS, &ids), (POSITIONS, &pos), (OFFSETS, &pos)];
        let any_sampled = self.slots.iter().flatten().any(|q| q.params.sampled());
        let out = match any_sampled {
            true => self.step_logits.run(&inputs)?,
            false => self.step.run(&inputs)?,
        };
        let (tokens, logits) = self.step_outputs(&out, any_sampled)?;
        Ok(self.advance(tokens, &logits, &vec![true; n]))
    }

    /// The greedy token per slot of a step's outputs, and the logits (slots × vocab) when the
    /// step returned them; the error when their sizes are not the batch's.
    pub(super) fn step_outputs(
        &self,
        out: &[rlx_ir::Tensor],
        with_logits: bool,
    ) -> Result<(Vec<i32>, Vec<f32>)> {
        let n = self.slots.len();
        let logits = match with_logits {
            true => out.get(1).map(|t| t.to_f32_vec()).unwrap_or_default(),
            false => Vec::new(),
        };
        if with_logits && logits.len() != n * self.vocab {
            return Err(ModelError::OutputSize { batch: n, dim: self.vocab, got: logits.len() });
        }
        let tokens: Vec<i32> =
            out.first().map(|t| t.to_f64_vec()).unwrap_or_default().iter().map(|&t| t as i32).collect();
        if tokens.len() != n {
            return Err(ModelError::OutputSize { batch: n, dim: 1, got: tokens.len() });
        }
        Ok((tokens, logits))
    }

    /// Hands out this run's token of every slot that `produces` says made one (`tokens`, the
    /// device's greedy token per slot; `logits`, slots × vocab, when a sampled sequence is in
    /// the batch): drawn by its sampler when sampled, else the device's. A sequence's `last`
    /// and `pos` are those of the token the run fed. Sequences that finish or fail leave.
    pub(super) fn advance(&mut self, tokens: Vec<i32>, logits: &[f32], produces: &[bool]) -> Vec<SeqToken> {
        let mut events = Vec::new();
        let samplers = &mut self.samplers;
        let vocab = self.vocab;
        for (s, (slot, device_token)) in self.slots.iter_mut().zip(tokens).enumerate() {
            let Some(seq) = slot else { continue };
            if !produces.get(s).copied().unwrap_or(false) {
                continue;
            }
            let id = seq.id;
            let token = match seq.params.sampled() {
                true => {
                    let row = &logits[s * vocab..(s + 1) * vocab];
                    let key = [seq.params.seed, seq.produced as u32];
                    samplers.draw(row, &seq.params.sampling, key, &seq.history, seq.pos)
                }
                false if device_token == NON_FINITE_TOKEN => Err(ModelError::NonFinite { position: seq.pos }),
                false => Ok(device_token),
            };
            let token = match token {
                Ok(t) => t,
                Err(e) => {
                    // This sequence's failure only: it leaves, the others go on.
                    events.push(SeqToken { id, token: Err(e), finished: true });
                    *slot = None;
                    continue;
                }
            };
            seq.last = token;
            seq.pos += 1;
            seq.produced += 1;
            if let Some(h) = seq.history.get_mut(seq.pos) {
                *h = token;
            }
            let finished = seq.finished();
            events.push(SeqToken { id, token: Ok(token), finished });
            if finished {
                *slot = None;
            }
        }
        events
    }
}

impl SeqParams {
    /// Whether tokens are drawn by a sampler rather than picked by the device's argmax.
    pub(super) fn sampled(&self) -> bool {
        !self.sampling.is_greedy() || self.sampling.repetition_penalty != 1.0
    }
}

impl Seq {
    /// Whether `last` ends the sequence: the budget reached or a stop token.
    pub(super) fn finished(&self) -> bool {
        self.produced >= self.params.max_new || self.params.stop.contains(&self.last)
    }
}

/// Refuses batched caches the device cannot hold: one layer's keys for every slot must fit the
/// device's largest tensor, and on the CPU every layer's keys and values the host's memory.
fn check_slots_room(dec: &Decoder, slots: usize, capacity: usize) -> Result<()> {
    let c = &dec.config;
    let caps = dec.session.capabilities();
    let bytes = dec.kv_dtype().storage_bytes() as u64;
    let per_slot = (capacity as u64).saturating_mul((c.num_key_value_heads * c.head_dim) as u64 * bytes);
    let one = per_slot.saturating_mul(slots as u64);
    let all = one.saturating_mul(2 * c.num_hidden_layers as u64);
    let limit = caps.max_tensor_bytes;
    let fit = |per: u64| limit / per.max(1);
    if one > limit {
        return Err(ModelError::invalid(format!(
            "{slots} streams of {capacity} positions need {one} bytes for one layer's keys, more than \
             the {limit} bytes {} holds in one tensor: at most {} streams fit; ask for fewer streams \
             or a smaller capacity",
            dec.session.device(),
            fit(per_slot)
        )));
    }
    if dec.session.device() == rlx_runtime::Device::Cpu && all > limit {
        return Err(ModelError::invalid(format!(
            "{slots} streams of {capacity} positions need {all} bytes of KV cache, more than the host's \
             {limit}: at most {} streams fit; ask for fewer streams or a smaller capacity",
            fit(per_slot.saturating_mul(2 * c.num_hidden_layers as u64))
        )));
    }
    Ok(())
}
