//! Token sampling as a composite: [`Graph::sample_tokens`] decomposes into top-k, compare,
//! where, exp, cumsum, reduce, gather and one [`rlx_ir::Op::Random`] draw, so it runs on every
//! backend and gives the same tokens everywhere for the same key.

use rlx_ir::{DType, Graph, IrError, NodeId, Shape, Tensor};

const OP: &str = "sample_tokens";

/// The number of candidates kept when [`SamplingSpec::top_k`] is `None`: 50, transformers'
/// `GenerationConfig` default. Sampling then never looks past the 50 largest logits (after the
/// repetition penalty); pass `top_k: Some(vocab)` to sample from the whole vocabulary.
pub const DEFAULT_TOP_K: usize = 50;

/// How [`Graph::sample_tokens`] picks one token per row of logits. `Default` is greedy.
///
/// The steps, in transformers' order: repetition penalty, temperature, top-k, top-p, draw.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SamplingSpec {
    /// Logits are divided by it before the softmax. `0` means greedy: the argmax of the
    /// (penalised) logits; top-k and top-p are then irrelevant. Must be finite and ≥ 0.
    pub temperature: f32,
    /// Keep only the `k` largest logits (1 ≤ k ≤ vocab). `None` means [`DEFAULT_TOP_K`]
    /// (or the vocabulary, if smaller).
    pub top_k: Option<usize>,
    /// Nucleus sampling: keep the smallest prefix of the sorted candidates whose probability
    /// mass reaches `top_p` (always at least one token), in (0, 1]; `1.0` keeps every candidate.
    pub top_p: f32,
    /// transformers' repetition penalty on the tokens in `prev_tokens`: a logit > 0 is divided
    /// by it, any other multiplied by it. `1.0` is off; must be finite and > 0.
    pub repetition_penalty: f32,
}

impl Default for SamplingSpec {
    fn default() -> Self {
        SamplingSpec::greedy()
    }
}

impl SamplingSpec {
    /// Argmax decoding, no penalty.
    pub fn greedy() -> Self {
        SamplingSpec { temperature: 0.0, top_k: None, top_p: 1.0, repetition_penalty: 1.0 }
    }

    /// Sampling at `temperature` with no top-k beyond [`DEFAULT_TOP_K`], no top-p, no penalty.
    pub fn with_temperature(temperature: f32) -> Self {
        SamplingSpec { temperature, ..SamplingSpec::greedy() }
    }

    /// Whether this spec decodes greedily (temperature 0).
    pub fn is_greedy(&self) -> bool {
        self.temperature == 0.0
    }

    /// Checks every field against a vocabulary of `vocab` tokens and returns the number of
    /// candidates sampled from (the effective top-k). Errors name the field, its value and the
    /// fix; `shape` is the logits' shape, for the message.
    pub fn validate(&self, vocab: usize, shape: &Shape) -> Result<usize, IrError> {
        let bad = |attr: &'static str, reason: String| IrError::Attribute {
            op: OP,
            attr,
            shape: shape.clone(),
            reason,
        };
        let t = self.temperature;
        if !(t.is_finite() && t >= 0.0) {
            return Err(bad(
                "temperature",
                format!(
                    "temperature = {t} must be finite and ≥ 0 (0 = greedy, 1 = the model's distribution)"
                ),
            ));
        }
        let p = self.top_p;
        if !(p > 0.0 && p <= 1.0) {
            return Err(bad("top_p", format!("top_p = {p} must be in (0, 1]; use 1.0 to turn top-p off")));
        }
        let r = self.repetition_penalty;
        if !(r.is_finite() && r > 0.0) {
            return Err(bad(
                "repetition_penalty",
                format!("repetition_penalty = {r} must be finite and > 0; use 1.0 to turn it off"),
            ));
        }
        match self.top_k {
            None => Ok(DEFAULT_TOP_K.min(vocab)),
            Some(k) if (1..=vocab).contains(&k) => Ok(k),
            Some(k) => Err(bad(
                "top_k",
                format!(
                    "top_k = {k} must be in 1..={vocab} (the vocabulary); use None for the default \
                     of {DEFAULT_TOP_K} or {vocab} to sample from every token"
                ),
            )),
        }
    }
}

/// Token sampling (greedy, temperature, top-k, top-p, repetition penalty) from primitive ops.
pub trait SampleExt: AsMut<Graph> {
    /// One token per row of `logits` (`[B, V]`, any float dtype, computed in f32), picked as
    /// `spec` says, with randomness from `key` (U32 \[2\] = `[seed, offset]`, e.g. from
    /// [`Graph::rng_key`]; unused when greedy). `prev_tokens` (I32 `[B, P]`, `-1` = no token)
    /// are the tokens the repetition penalty applies to. Returns I32 `[B]`.
    ///
    /// Semantics, per row:
    /// 1. NaN logits become −∞ and +∞ becomes `f32::MAX`, so a NaN is never picked while any
    ///    other token remains. A row with no finite logit at all gives token 0.
    /// 2. Repetition penalty (transformers' rule: `l > 0 ? l / p : l · p`) on the logits of the
    ///    tokens in `prev_tokens`. The penalty only lowers logits, so the top-k after it lie in
    ///    the top `k + P` before it: those candidates are taken first (one top-k), penalised, and
    ///    re-ranked (a second top-k). This is exact, not an approximation; cost is a
    ///    `[B, k + P, P]` comparison. Ties keep the candidate order (larger original logit,
    ///    then lower token id).
    /// 3. Temperature 0: the argmax (the first on ties).
    /// 4. Otherwise the `k` candidates ([`SamplingSpec::top_k`], [`DEFAULT_TOP_K`] when unset)
    ///    get probabilities `softmax((l − max) / T)`; top-p keeps the candidates whose
    ///    *preceding* mass is below `top_p` (so the smallest prefix reaching it, at least one).
    /// 5. One `u` ~ Uniform[0, 1) per row (element `b` of `random_uniform(key, [B, 1])`); the
    ///    token is the first kept candidate whose cumulative kept mass exceeds `u · total`.
    ///
    /// Errors: logits not rank 2 with V ≥ 1 and B ≥ 1, key not U32 \[2\], `prev_tokens` not
    /// I32 `[B, P]`, or an invalid spec ([`SamplingSpec::validate`]). Atomic: on error the
    /// graph is unchanged.
    fn sample_tokens(
        &mut self,
        logits: NodeId,
        key: NodeId,
        spec: &SamplingSpec,
        prev_tokens: Option<NodeId>,
    ) -> Result<NodeId, IrError> {
        self.as_mut().atomically(|g| {
            let lt = g.ty_for(OP, logits)?.clone();
            let (b, v) = match lt.shape.dims() {
                &[b, v] if b >= 1 && v >= 1 => (b, v),
                _ => {
                    return Err(attr(
                        "logits",
                        &lt.shape,
                        "logits must be [batch, vocab] with batch ≥ 1 and vocab ≥ 1; reshape \
                         (e.g. take the last position's row) first",
                    ))
                }
            };
            if !lt.dtype.is_float() {
                return Err(IrError::DType {
                    op: OP,
                    operand: 0,
                    got: lt.dtype,
                    expected: "f32, f16 or bf16 logits (cast them first)".into(),
                });
            }
            let k = spec.validate(v, &lt.shape)?;
            let kt = g.ty_for(OP, key)?.clone();
            if kt.dtype != DType::U32 || kt.shape.dims() != [2] {
                return Err(IrError::DType {
                    op: OP,
                    operand: 1,
                    got: kt.dtype,
                    expected: format!(
                        "a U32 [2] key = [seed, offset] (got {kt}); make one with Graph::rng_key"
                    ),
                });
            }
            let prev = match prev_tokens {
                Some(p) => check_prev(g, p, b, &lt.shape)?,
                None => None,
            };
            let prev = prev.filter(|_| spec.repetition_penalty != 1.0);
            let x = clean_logits(g, logits, lt.dtype)?;
            let n_prev = match prev {
                Some((_, n)) => n,
                None => 0,
            };
            if spec.is_greedy() && n_prev == 0 {
                return g.argmax(x, 1, false);
            }
            let keep = if spec.is_greedy() { 1 } else { k };
            let c = v.min(keep.saturating_add(n_prev));
            let (mut vals, mut idx) = g.topk(x, c, 1, true)?;
            if let Some((p, n)) = prev {
                vals = penalise(g, vals, idx, p, [b, c, n], spec.repetition_penalty)?;
                if spec.is_greedy() {
                    let pos = g.argmax(vals, 1, true)?;
                    let tok = take_rows(g, idx, pos, b, c)?;
                    return g.reshape(tok, &[b]);
                }
                let (v2, pos) = g.topk(vals, keep, 1, true)?;
                idx = take_rows(g, idx, pos, b, c)?;
                vals = v2;
            }
            draw(g, vals, idx, key, spec, b, keep)
        })
    }
}

impl SampleExt for Graph {}

/// `prev` checked as I32 [B, P]; `None` when P = 0.
fn check_prev(
    g: &mut Graph,
    prev: NodeId,
    b: usize,
    logits: &Shape,
) -> Result<Option<(NodeId, usize)>, IrError> {
    let pt = g.ty_for(OP, prev)?.clone();
    if pt.dtype != DType::I32 {
        return Err(IrError::DType {
            op: OP,
            operand: 2,
            got: pt.dtype,
            expected: "i32 token ids (cast them first)".into(),
        });
    }
    match pt.shape.dims() {
        &[pb, n] if pb == b => Ok((n > 0).then_some((prev, n))),
        _ => Err(IrError::ShapeMismatch {
            op: OP,
            shapes: vec![logits.clone(), pt.shape.clone()].into(),
            reason: format!(
                "prev_tokens must be [batch, P] = [{b}, P] (pad short rows with -1, which matches no token)"
            ),
        }),
    }
}

/// f32 logits with NaN → −∞ and +∞ → `f32::MAX`.
fn clean_logits(g: &mut Graph, logits: NodeId, dtype: DType) -> Result<NodeId, IrError> {
    let x = if dtype == DType::F32 { logits } else { g.cast(logits, DType::F32)? };
    let nan = g.ne(x, x)?;
    let ninf = g.scalar(f32::NEG_INFINITY)?;
    let x = g.where_(nan, ninf, x)?;
    let big = g.scalar(f32::MAX)?;
    g.minimum(x, big)
}

/// `vals` with transformers' repetition penalty applied where `idx` is in `prev`.
/// `dims` = [B, C, P].
fn penalise(
    g: &mut Graph,
    vals: NodeId,
    idx: NodeId,
    prev: NodeId,
    [b, c, n]: [usize; 3],
    penalty: f32,
) -> Result<NodeId, IrError> {
    let i3 = g.reshape(idx, &[b, c, 1])?;
    let p3 = g.reshape(prev, &[b, 1, n])?;
    let eq = g.eq(i3, p3)?;
    let hits = g.cast(eq, DType::I32)?;
    let hit = g.max(hits, &[2], false)?;
    let zero_i = g.constant(Tensor::from_i32(Shape::scalar(), vec![0])?)?;
    let seen = g.gt(hit, zero_i)?;
    let p = g.scalar(penalty)?;
    let down = g.div(vals, p)?;
    let up = g.mul(vals, p)?;
    let zero = g.scalar(0.0)?;
    let positive = g.gt(vals, zero)?;
    let pen = g.where_(positive, down, up)?;
    g.where_(seen, pen, vals)
}

/// Row-wise take: `data` [B, C], `pos` I32 [B, K] (positions within each row) → [B, K].
fn take_rows(g: &mut Graph, data: NodeId, pos: NodeId, b: usize, c: usize) -> Result<NodeId, IrError> {
    let base: Vec<i32> = (0..b).map(|r| (r * c) as i32).collect();
    let base = g.constant(Tensor::from_i32([b, 1], base)?)?;
    let flat_pos = g.add(pos, base)?;
    let flat = g.reshape(data, &[b * c])?;
    g.gather(flat, flat_pos, 0)
}

/// Steps 4 and 5 of [`Graph::sample_tokens`] on sorted candidates `vals` / `idx` [B, K].
fn draw(
    g: &mut Graph,
    vals: NodeId,
    idx: NodeId,
    key: NodeId,
    spec: &SamplingSpec,
    b: usize,
    k: usize,
) -> Result<NodeId, IrError> {
    let top = g.slice(vals, 1, 0, 1, 1)?;
    let ninf = g.scalar(f32::NEG_INFINITY)?;
    let finite = g.gt(top, ninf)?;
    let zero = g.scalar(0.0)?;
    // A row with no finite candidate computes on zeros (no NaN anywhere) and is replaced
    // by its first candidate at the end.
    let vals = g.where_(finite, vals, zero)?;
    let top = g.where_(finite, top, zero)?;
    let d = g.sub(vals, top)?;
    let t = g.scalar(spec.temperature)?;
    let z = g.div(d, t)?;
    let e = g.exp(z)?;
    let sum = g.sum(e, &[1], true)?;
    let probs = g.div(e, sum)?;
    let weights = if spec.top_p < 1.0 {
        let cum = g.cumsum(probs, 1)?;
        let before = g.sub(cum, probs)?;
        let p = g.scalar(spec.top_p)?;
        let kept = g.lt(before, p)?;
        g.where_(kept, probs, zero)?
    } else {
        probs
    };
    let cum = g.cumsum(weights, 1)?;
    let total = g.slice(cum, 1, k - 1, k, 1)?;
    let u = g.random_uniform(key, &[b, 1])?;
    let target = g.mul(u, total)?;
    let below = g.le(cum, target)?;
    let below = g.cast(below, DType::I32)?;
    let count = g.sum(below, &[1], true)?;
    // count < k whenever u · total < total, which holds for u < 1; the clamp only guards
    // the last candidate against rounding.
    let last = g.constant(Tensor::from_i32(Shape::scalar(), vec![(k - 1) as i32])?)?;
    let pos = g.minimum(count, last)?;
    let picked = take_rows(g, idx, pos, b, k)?;
    let picked = g.reshape(picked, &[b])?;
    let first = g.slice(idx, 1, 0, 1, 1)?;
    let first = g.reshape(first, &[b])?;
    let finite = g.reshape(finite, &[b])?;
    g.where_(finite, picked, first)
}

fn attr(a: &'static str, shape: &Shape, reason: &str) -> IrError {
    IrError::Attribute { op: OP, attr: a, shape: shape.clone(), reason: reason.into() }
}
