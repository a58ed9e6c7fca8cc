//! Generation over the device-resident KV cache ([`super::cached`]).
//!
//! A [`Generator`] is two executables compiled as one group (`Session::compile_group`), so
//! they share the weights and the cache states: a prefill graph of `chunk` rows and a decode
//! graph of one row, both over a cache of `capacity` positions. A prompt goes through the
//! prefill graph chunk by chunk; then every new token is one decode run that uploads its id,
//! its position and the offset, and reads back one token. The decoder keeps the generator of
//! the last capacity and compiles a larger one only when a generation needs more room.
//!
//! Memory is reserved for what a generation uses, not for what it may ask: the first generator
//! holds the prompt and up to [`MIN_CAPACITY`] new tokens (capped by the request and the
//! model's context); when the sequence reaches its capacity, a generator of twice the room is
//! compiled and the tokens so far go through its prefill again (rebuilding the cache), so a
//! request for 10⁸ tokens that stops after ten never reserves 10⁸ positions. Before a generator
//! is built, its KV cache and rope tables are checked against the device's largest tensor and
//! (on the CPU) the host's memory: an error saying how many positions fit, never an
//! allocation abort.

use super::cached::{
    cached_decoder_graph, StepOutput, LOGIT_ROW, NON_FINITE_TOKEN, OFFSET, POSITIONS, PREV_TOKENS, RNG_KEY,
};
use super::graph::INPUT_IDS;
use super::model::Decoder;
use crate::common::weights::set_weights;
use crate::error::{ModelError, Result};
use rlx_nn::SamplingSpec;
use rlx_runtime::{CompileOptions, Executable, HostData};

/// Smallest cache a generation compiles (positions); capacities are powers of two from here.
pub const MIN_CAPACITY: usize = 256;

/// The prefill and decode executables over one cache capacity.
pub struct Generator {
    capacity: usize,
    chunk: usize,
    output: StepOutput,
    prefill: Executable,
    decode: Executable,
}

impl std::fmt::Debug for Generator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generator").field("capacity", &self.capacity).field("chunk", &self.chunk).finish()
    }
}

/// The inputs of a sampling step beyond the tokens: the random key and, with a repetition
/// penalty, the tokens so far (padded with −1 to the capacity).
struct Draw<'a> {
    key: Option<[u32; 2]>,
    prev: Option<&'a [i32]>,
}

/// One run of a cached step: `ids` (padded to the graph's rows) at positions `offset..`, the
/// token of row `row` out.
fn step(exe: &mut Executable, ids: &[i32], offset: usize, row: usize, draw: &Draw<'_>) -> Result<i32> {
    let positions: Vec<i32> = (offset..offset + ids.len()).map(|p| p as i32).collect();
    let off = [offset as i32];
    let row = [row as i32];
    let mut inputs: Vec<(&str, &dyn HostData)> =
        vec![(INPUT_IDS, &ids), (POSITIONS, &positions), (OFFSET, &off), (LOGIT_ROW, &row)];
    if let Some(key) = &draw.key {
        inputs.push((RNG_KEY, key));
    }
    if let Some(prev) = &draw.prev {
        inputs.push((PREV_TOKENS, prev));
    }
    let out = exe.run(&inputs)?;
    let token = out.first().and_then(|t| t.to_f64_vec().first().copied());
    let token = token.map(|t| t as i32).ok_or_else(|| ModelError::OutputSize {
        batch: 1,
        dim: 1,
        got: out.first().map_or(0, |t| t.numel()),
    })?;
    if token == NON_FINITE_TOKEN {
        return Err(ModelError::NonFinite { position: offset + row.first().map_or(0, |&r| r as usize) });
    }
    Ok(token)
}

/// Runs `ids` (at positions 0..) through the prefill graph chunk by chunk, filling the cache;
/// the token the last row gives.
fn prefill(g: &mut Generator, ids: &[i32], draw: &Draw<'_>) -> Result<i32> {
    let mut token = 0;
    for (i, part) in ids.chunks(g.chunk).enumerate() {
        let mut padded = part.to_vec();
        padded.resize(g.chunk, 0);
        token = step(&mut g.prefill, &padded, i * g.chunk, part.len() - 1, draw)?;
    }
    Ok(token)
}

impl Decoder {
    /// The cache capacity a generation of `total` positions compiles: a power of two of at
    /// least [`MIN_CAPACITY`], at most `max_position_embeddings`, at least `total`.
    pub fn capacity_for(&self, total: usize) -> usize {
        total.max(MIN_CAPACITY).next_power_of_two().min(self.config.max_position_embeddings).max(total)
    }

    /// The kernel times of the generator's last decode step (see
    /// `rlx_runtime::Executable::kernel_times`; empty unless the backend times launches).
    pub fn decode_kernel_times(&self) -> Vec<(&'static str, std::time::Duration)> {
        self.generator.as_ref().map(|g| g.decode.kernel_times()).unwrap_or_default()
    }

    /// The capacity of the compiled generator, if one is.
    pub fn generator_capacity(&self) -> Option<usize> {
        self.generator.as_ref().map(|g| g.capacity)
    }

    /// Refuses a cache of `capacity` positions whose buffers the device cannot hold: each
    /// layer's key (and value) state and each rope table must fit the device's largest tensor,
    /// and on the CPU all of them together the host's memory. Checked before anything is
    /// allocated; the error names the sizes and how many positions would fit.
    pub fn check_cache_room(&self, capacity: usize) -> Result<()> {
        let c = &self.config;
        let caps = self.session.capabilities();
        let per_position = |cols: usize, bytes: u64| (cols as u64).saturating_mul(bytes);
        let kv_bytes = self.kv_dtype().storage_bytes() as u64;
        let state = per_position(c.num_key_value_heads.saturating_mul(c.head_dim), kv_bytes);
        let rope = per_position(c.head_dim / 2, 4);
        // Keys and values of every layer, the cos and sin tables.
        let all = state.saturating_mul(2).saturating_mul(c.num_hidden_layers as u64).saturating_add(rope * 2);
        let n = capacity as u64;
        let (largest, total) = (state.max(rope).saturating_mul(n), all.saturating_mul(n));
        let limit = caps.max_tensor_bytes;
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        let too_big = |what: &str, need: u64, have: u64, per: u64| {
            ModelError::invalid(format!(
                "a KV cache of {capacity} positions needs {:.2} GiB for {what}, more than the {:.2} GiB \
                 {} can hold: at most {} positions fit; ask for fewer tokens (--max-tokens) or a \
                 shorter prompt",
                gib(need),
                gib(have),
                self.session.device(),
                have / per.max(1)
            ))
        };
        if largest > limit {
            return Err(too_big("one layer's keys", largest, limit, state.max(rope)));
        }
        if self.session.device() == rlx_runtime::Device::Cpu && total > limit {
            return Err(too_big("every layer's keys and values", total, limit, all));
        }
        Ok(())
    }

    /// The generator for at least `total` positions and this output: the current one when it
    /// fits, else a new one (the old one is dropped first, so two never hold the weights at
    /// once).
    fn generator_for(&mut self, total: usize, output: StepOutput) -> Result<&mut Generator> {
        if self.generator.as_ref().is_none_or(|g| g.capacity < total || g.output != output) {
            let capacity = self.capacity_for(total);
            self.check_cache_room(capacity)?;
            self.generator = None;
            let chunk = self.opts.prefill_chunk.min(capacity);
            let p = self.opts.precision;
            let kv = self.kv_dtype();
            let q = &self.quant;
            let prefill = cached_decoder_graph(&self.config, chunk, capacity, p, kv, output, q)?;
            let decode = cached_decoder_graph(&self.config, 1, capacity, p, kv, output, q)?;
            let opts = CompileOptions { precision: p, ..Default::default() };
            let mut exes = self.session.compile_group(&[&prefill, &decode], &opts)?.into_iter();
            let (Some(mut prefill), Some(decode)) = (exes.next(), exes.next()) else {
                return Err(ModelError::invalid(
                    "internal: compiling the generator gave fewer than 2 executables",
                ));
            };
            // The group shares params: setting them once sets them for both.
            set_weights(&mut prefill, &self.weights)?;
            self.generator = Some(Generator { capacity, chunk, output, prefill, decode });
        }
        self.generator
            .as_mut()
            .ok_or_else(|| ModelError::invalid("internal: no generator after compiling one"))
    }

    /// Greedy generation over the KV cache: `n` new tokens, each the argmax (computed on the
    /// device; the first index on ties, NaN the largest) of the logits after the prompt and the
    /// tokens so far. `on_token` sees each token as it comes and may stop the generation by
    /// returning `false`. Returns the new tokens. No end-of-sequence stop of its own.
    pub fn generate(
        &mut self,
        prompt: &[i32],
        n: usize,
        on_token: impl FnMut(i32) -> bool,
    ) -> Result<Vec<i32>> {
        self.sample(prompt, n, &SamplingSpec::greedy(), 0, on_token)
    }

    /// Generation over the KV cache with tokens drawn on the device by `spec` (temperature,
    /// top-k, top-p, repetition penalty over the prompt and the tokens so far; see
    /// `rlx_nn::SampleExt::sample_tokens`). Token `t` (0 for the first) draws with the key
    /// `[seed, t]`, so a seed gives the same tokens on every device. A greedy spec without a
    /// penalty is [`Decoder::generate`]. An invalid spec is an error naming the field.
    pub fn sample(
        &mut self,
        prompt: &[i32],
        n: usize,
        spec: &SamplingSpec,
        seed: u32,
        mut on_token: impl FnMut(i32) -> bool,
    ) -> Result<Vec<i32>> {
        let used = self.check_room(prompt, n)?;
        if n == 0 {
            return Ok(Vec::new());
        }
        let output = if spec.is_greedy() && spec.repetition_penalty == 1.0 {
            StepOutput::Token
        } else {
            StepOutput::Sample(*spec)
        };
        let sampled = matches!(output, StepOutput::Sample(_));
        let penalised = output.penalised();
        // Room for the prompt and the first tokens; doubled as the generation reaches it.
        let mut room = used.min(prompt.len().saturating_add(MIN_CAPACITY));
        let g = self.generator_for(room, output)?;
        // The tokens so far (prompt and generated), −1 past them: what the repetition penalty
        // looks at, one entry per cache position.
        let mut history = vec![-1i32; if penalised { g.capacity } else { 0 }];
        for (h, &t) in history.iter_mut().zip(prompt) {
            *h = t;
        }
        let draw0 = Draw { key: sampled.then_some([seed, 0]), prev: penalised.then_some(&history[..]) };
        let mut token = prefill(g, prompt, &draw0)?;
        let mut seq = prompt.to_vec();
        let mut out = Vec::new();
        loop {
            out.push(token);
            seq.push(token);
            let pos = seq.len() - 1;
            if let Some(h) = history.get_mut(pos) {
                *h = token;
            }
            let go_on = on_token(token);
            if out.len() == n || !go_on {
                return Ok(out);
            }
            let capacity = self.generator.as_ref().map_or(0, |g| g.capacity);
            if pos >= capacity {
                // Full: a generator of twice the room, its cache rebuilt from the tokens so far.
                room = used.min(capacity.saturating_mul(2)).max(pos + 1);
                let g = self.generator_for(room, output)?;
                if penalised {
                    history.resize(g.capacity, -1);
                }
                let d = Draw { key: sampled.then_some([seed, 0]), prev: penalised.then_some(&history[..]) };
                prefill(g, &seq[..pos], &d)?;
            }
            let g = self
                .generator
                .as_mut()
                .ok_or_else(|| ModelError::invalid("internal: no generator after compiling one"))?;
            let d = Draw {
                key: sampled.then_some([seed, out.len() as u32]),
                prev: penalised.then_some(&history[..]),
            };
            token = step(&mut g.decode, &[token], pos, 0, &d)?;
        }
    }
}
