//! Per-sequence sampling for the [`super::BatchDecoder`]: each sampled sequence's token is drawn
//! from its own row of logits by a one-row sampler graph (`Graph::sample_tokens` with the
//! sequence's spec), keyed `[seed, t]` for its t-th token exactly as `Decoder::sample` keys
//! it, with its own history for the repetition penalty. The draw sees that row, that seed and
//! that history only, so a sequence's tokens never depend on its neighbours.
//!
//! Why not in the batched step itself: `Graph::rng_key` is one U32 \[2\] key per run and a
//! sampling spec (temperature, top-k, top-p, penalty) is fixed when a graph is built, while
//! each sequence brings its own seed and spec. The step returns the logits of every row when a
//! sampled sequence is in the batch; the samplers run on a session of the same device, one
//! compiled graph per distinct spec.

use super::cached::{PREV_TOKENS, RNG_KEY};
use crate::error::{ModelError, Result};
use rlx_ir::{DType, Graph};
use rlx_nn::prelude::*;
use rlx_nn::SamplingSpec;
use rlx_runtime::{CompileOptions, Device, Executable, HostData, Session};

/// Name of the sampler graph's input: F32 [1, vocab].
const LOGITS: &str = "logits";

/// The samplers of one batched decoder: a session opened when first needed, one executable per
/// spec.
pub(super) struct Samplers {
    device: Device,
    vocab: usize,
    capacity: usize,
    session: Option<Session>,
    exes: Vec<(SamplingSpec, Executable)>,
}

impl Samplers {
    pub fn new(device: Device, vocab: usize, capacity: usize) -> Samplers {
        Samplers { device, vocab, capacity, session: None, exes: Vec::new() }
    }

    /// Compiles the sampler of `spec` unless there is one (an invalid spec is an error naming
    /// the field).
    pub fn prepare(&mut self, spec: &SamplingSpec) -> Result<()> {
        if self.exes.iter().any(|(s, _)| s == spec) {
            return Ok(());
        }
        let mut g = Graph::new("batch_sampler");
        let logits = g.input(LOGITS, &[1, self.vocab], DType::F32)?;
        let key = g.rng_key(RNG_KEY)?;
        let prev = match spec.repetition_penalty != 1.0 {
            true => Some(g.input(PREV_TOKENS, &[1, self.capacity], DType::I32)?),
            false => None,
        };
        let token = g.sample_tokens(logits, key, spec, prev)?;
        g.set_outputs(&[token])?;
        let session = match self.session.take() {
            Some(s) => s,
            None => Session::new(self.device)?,
        };
        let exe = session.compile_with(&g, &CompileOptions::default());
        self.session = Some(session);
        self.exes.push((*spec, exe?));
        Ok(())
    }

    /// The token `spec` draws from `logits` (one row) with `key` = `[seed, t]`; `history` is the
    /// sequence's tokens so far, −1 past them, one per cache position (read only with a
    /// repetition penalty). Logits with a NaN or an infinity are [`ModelError::NonFinite`] at
    /// `position`, as `Decoder::sample` reports them.
    pub fn draw(
        &mut self,
        logits: &[f32],
        spec: &SamplingSpec,
        key: [u32; 2],
        history: &[i32],
        position: usize,
    ) -> Result<i32> {
        if logits.iter().any(|x| !x.is_finite()) {
            return Err(ModelError::NonFinite { position });
        }
        self.prepare(spec)?;
        let Some((_, exe)) = self.exes.iter_mut().find(|(s, _)| s == spec) else {
            return Err(ModelError::InvalidInput {
                reason: "internal: no sampler after compiling one".into(),
            });
        };
        let mut inputs: Vec<(&str, &dyn HostData)> = vec![(LOGITS, &logits), (RNG_KEY, &key)];
        if spec.repetition_penalty != 1.0 {
            inputs.push((PREV_TOKENS, &history));
        }
        let out = exe.run(&inputs)?;
        let token = out.first().and_then(|t| t.to_f64_vec().first().copied());
        token.map(|t| t as i32).ok_or_else(|| ModelError::OutputSize {
            batch: 1,
            dim: 1,
            got: out.first().map_or(0, |t| t.numel()),
        })
    }
}
