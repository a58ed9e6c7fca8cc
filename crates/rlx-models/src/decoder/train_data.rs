//! What a decoder's training run reads and starts from, apart from the step itself:
//!
//! - [`tokens_from_text`]: a text file's tokens, and [`TokenWindows`]: those tokens cut into
//!   consecutive, non-overlapping windows of `seq_len + 1` tokens, the batches of each epoch
//!   (in order, or a seeded shuffle of the windows).
//! - [`init_weight`]: the seeded initialisation of a model trained from scratch, the one
//!   transformers' `LlamaPreTrainedModel._init_weights` uses.
//! - [`refuse_untrainable`]: the models training refuses (GGUF files, quantized checkpoints,
//!   Mamba), before anything is loaded.

use crate::error::{ModelError, Result};
use std::path::Path;
use tokenizers::Tokenizer;

/// The token ids of `text`, with no special tokens added (no BOS or EOS anywhere: the text is
/// one stream, and a window starts wherever the cut falls). Each id must be below `vocab`
/// (the model's vocabulary size).
pub fn tokens_from_text(tokenizer: &Tokenizer, text: &str, vocab: usize) -> Result<Vec<i32>> {
    // The whole text is one stream: a tokenizer.json that truncates or pads (BERT's, at 512)
    // would cut it, so neither applies here.
    let mut whole = tokenizer.clone();
    whole.with_padding(None);
    whole
        .with_truncation(None)
        .map_err(|e| ModelError::Tokenize { reason: format!("turning truncation off: {e}") })?;
    let enc = whole.encode(text, false).map_err(|e| ModelError::Tokenize { reason: e.to_string() })?;
    enc.get_ids()
        .iter()
        .map(|&id| match i32::try_from(id) {
            Ok(v) if (id as usize) < vocab => Ok(v),
            _ => Err(ModelError::invalid(format!(
                "the tokenizer gave the id {id}, outside the model's vocabulary of {vocab}; the \
                 tokenizer.json and config.json (vocab_size) do not belong together"
            ))),
        })
        .collect()
}

/// A token stream cut into windows of `seq_len + 1` tokens: window w is
/// `tokens[w·(seq_len+1) .. (w+1)·(seq_len+1)]` (a step's inputs are a window's first
/// `seq_len` tokens, its targets the last `seq_len`). Tokens past the last whole window are
/// not used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenWindows {
    tokens: Vec<i32>,
    seq_len: usize,
    batch_size: usize,
    shuffle_seed: Option<u64>,
}

impl TokenWindows {
    /// Cuts `tokens`; an error (naming the counts and the fix) when they make no full batch of
    /// `batch_size` windows.
    pub fn new(
        tokens: Vec<i32>,
        seq_len: usize,
        batch_size: usize,
        shuffle_seed: Option<u64>,
    ) -> Result<Self> {
        let w = TokenWindows { tokens, seq_len, batch_size, shuffle_seed };
        if w.steps_per_epoch() == 0 {
            let need = batch_size * (seq_len + 1);
            return Err(ModelError::invalid(format!(
                "the text has {} token(s): {} window(s) of seq_len + 1 = {} tokens, fewer than one batch of \
                 {batch_size} (which needs {need} tokens); give a longer text, or a smaller --seq-len or \
                 --batch-size",
                w.tokens.len(),
                w.windows(),
                seq_len + 1
            )));
        }
        Ok(w)
    }

    /// Every token of the text.
    pub fn tokens(&self) -> &[i32] {
        &self.tokens
    }

    /// Whole windows in the text.
    pub fn windows(&self) -> usize {
        self.tokens.len() / (self.seq_len + 1)
    }

    /// Full batches per epoch (a partial last batch is left out).
    pub fn steps_per_epoch(&self) -> usize {
        self.windows() / self.batch_size.max(1)
    }

    /// Window `w`'s `seq_len + 1` tokens.
    pub fn window(&self, w: usize) -> &[i32] {
        let n = self.seq_len + 1;
        self.tokens.get(w * n..(w + 1) * n).unwrap_or(&[])
    }

    /// The window order of `epoch` (from 0): `0, 1, 2, …`, or their seeded shuffle.
    pub fn epoch_order(&self, epoch: usize) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.windows()).collect();
        if let Some(seed) = self.shuffle_seed {
            shuffle(&mut order, seed.wrapping_add(epoch as u64));
        }
        order
    }

    /// The tokens of step `k` (from 0, counted over epochs): `batch_size` windows, row-major
    /// [batch_size, seq_len + 1].
    pub fn batch(&self, k: usize) -> Vec<i32> {
        let spe = self.steps_per_epoch().max(1);
        let (epoch, i) = (k / spe, k % spe);
        let order = self.epoch_order(epoch);
        let b = self.batch_size;
        order.iter().skip(i * b).take(b).flat_map(|&w| self.window(w).iter().copied()).collect()
    }
}

/// SplitMix64: the generator behind the shuffle and the init (a fixed, documented stream).
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1], 53 bits.
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }
}

/// `n` values uniform in (−bound, bound] from SplitMix64 seeded with `seed` (LoRA's lora_A
/// init, `kaiming_uniform_(a=√5)`, is this with bound 1/√fan_in).
pub(crate) fn uniform(n: usize, bound: f32, seed: u64) -> Vec<f32> {
    let mut rng = SplitMix(seed);
    (0..n).map(|_| ((2.0 * rng.unit() - 1.0) * f64::from(bound)) as f32).collect()
}

/// A Fisher–Yates shuffle driven by SplitMix64: the order of a seed is fixed (both
/// fine-tunes, the embedder's pairs and the decoder's windows, shuffle with it).
pub(crate) fn shuffle(v: &mut [usize], seed: u64) {
    let mut rng = SplitMix(seed);
    for i in (1..v.len()).rev() {
        let j = (rng.next() % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
}

/// The initial value of weight `name` of `dims` for a model trained from scratch, as
/// transformers initialises a Llama-family model (`_init_weights`): RMSNorm weights (names
/// ending `norm.weight`) are ones, biases zeros, every other weight (embeddings, projections,
/// `lm_head`) normal(0, `std`) (config.json's `initializer_range`, 0.02 by default). Values are
/// drawn by Box–Muller from SplitMix64 seeded with `seed`; the draws are not PyTorch's (for a
/// comparison, start both sides from the same weights file), and the `pad_token_id` row of the
/// embeddings is not zeroed.
pub fn init_weight(name: &str, dims: &[usize], std: f32, seed: u64) -> Vec<f32> {
    let n: usize = dims.iter().product();
    if name.ends_with("norm.weight") {
        return vec![1.0; n];
    }
    if name.ends_with(".bias") {
        return vec![0.0; n];
    }
    let mut rng = SplitMix(seed);
    let mut out = Vec::with_capacity(n + 1);
    while out.len() < n {
        let (u1, u2) = (rng.unit(), rng.unit());
        let r = (-2.0 * u1.ln()).sqrt();
        let t = 2.0 * std::f64::consts::PI * u2;
        out.push((r * t.cos()) as f32 * std);
        out.push((r * t.sin()) as f32 * std);
    }
    out.truncate(n);
    out
}

/// Refuses, before loading anything, a model training cannot update: a GGUF file (its
/// weights are quantized or f16 blocks), a checkpoint with a `quantization_config`, a Mamba
/// model. Other unsupported configs (experts) are refused where they are parsed.
pub fn refuse_untrainable(dir: &Path) -> Result<()> {
    if crate::common::gguf::is_gguf(dir) {
        return Err(ModelError::invalid(format!(
            "{} is a GGUF file: its weights are quantized or half-precision blocks that training cannot \
             update; train from a Hugging Face folder (config.json, model.safetensors, tokenizer.json)",
            dir.display()
        )));
    }
    let path = dir.join("config.json");
    let text = std::fs::read_to_string(&path).map_err(|e| ModelError::io(&path, e))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|source| ModelError::Json { path: path.clone(), source })?;
    let bad = |reason: String| Err(ModelError::Config { path: path.clone(), reason });
    if v.get("quantization_config").is_some_and(|q| !q.is_null()) {
        return bad(
            "the checkpoint is quantized (quantization_config); training updates f32 weights: start from \
                    the unquantized model"
                .into(),
        );
    }
    let model_type = v.get("model_type").and_then(|t| t.as_str()).unwrap_or("");
    let mamba = model_type.contains("mamba")
        || v.get("architectures")
            .and_then(|a| a.as_array())
            .is_some_and(|a| a.iter().any(|c| c.as_str().is_some_and(|c| c.contains("Mamba"))));
    if mamba {
        return bad(format!(
            "model_type \"{model_type}\": Mamba models cannot be trained yet; `rlx train decoder` trains dense \
             Llama, Qwen2, Qwen3 and Mistral models"
        ));
    }
    Ok(())
}

/// config.json's `initializer_range` (transformers' default 0.02).
pub fn initializer_range(dir: &Path) -> f32 {
    std::fs::read_to_string(dir.join("config.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v.get("initializer_range").and_then(|r| r.as_f64()))
        .map_or(0.02, |r| r as f32)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn windows_are_consecutive_and_batches_follow_the_order() {
        let w = TokenWindows::new((0..23).collect(), 3, 2, None).unwrap();
        assert_eq!((w.windows(), w.steps_per_epoch()), (5, 2));
        assert_eq!(w.window(1), [4, 5, 6, 7]);
        assert_eq!(w.batch(0), [0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(w.batch(1), [8, 9, 10, 11, 12, 13, 14, 15]);
        // The next epoch starts over.
        assert_eq!(w.batch(2), w.batch(0));
        let e = TokenWindows::new((0..7).collect(), 3, 2, None).unwrap_err().to_string();
        assert!(e.contains("7 token(s)") && e.contains("needs 8 tokens") && e.contains("--seq-len"), "{e}");
    }

    #[test]
    fn a_seeded_shuffle_is_a_permutation_per_epoch() {
        let w = TokenWindows::new((0..400).collect(), 3, 4, Some(5)).unwrap();
        let (a, b) = (w.epoch_order(0), w.epoch_order(1));
        assert_ne!(a, b);
        assert_ne!(a, (0..100).collect::<Vec<_>>());
        let mut s = a.clone();
        s.sort_unstable();
        assert_eq!(s, (0..100).collect::<Vec<_>>());
        assert_eq!(a, TokenWindows::new((0..400).collect(), 3, 4, Some(5)).unwrap().epoch_order(0));
    }

    /// A tokenizer.json that truncates (BERT's do, at 512) must not cut the training text.
    #[test]
    fn a_truncating_tokenizer_does_not_cut_the_text() {
        let json = r#"{"version":"1.0","truncation":{"direction":"Right","max_length":4,"strategy":"LongestFirst","stride":0},
            "padding":null,"added_tokens":[],"normalizer":null,"pre_tokenizer":{"type":"Whitespace"},
            "post_processor":null,"decoder":null,
            "model":{"type":"WordLevel","vocab":{"[UNK]":0,"a":1,"b":2},"unk_token":"[UNK]"}}"#;
        let tok: Tokenizer = json.parse().unwrap();
        assert_eq!(tok.encode("a b a b a b a b a b", false).unwrap().get_ids().len(), 4);
        let ids = tokens_from_text(&tok, "a b a b a b a b a b", 3).unwrap();
        assert_eq!(ids, [1, 2, 1, 2, 1, 2, 1, 2, 1, 2]);
        let e = tokens_from_text(&tok, "a b", 2).unwrap_err().to_string();
        assert!(e.contains("id 2") && e.contains("vocabulary of 2"), "{e}");
    }

    #[test]
    fn init_is_seeded_normal_with_ones_for_norms() {
        let v = init_weight("model.layers.0.mlp.up_proj.weight", &[64, 128], 0.02, 9);
        assert_eq!(v, init_weight("model.layers.0.mlp.up_proj.weight", &[64, 128], 0.02, 9));
        let n = v.len() as f64;
        let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n;
        let sd = (v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n).sqrt();
        assert!(mean.abs() < 1e-3 && (sd - 0.02).abs() < 1e-3, "mean {mean} sd {sd}");
        assert_eq!(init_weight("model.norm.weight", &[4], 0.02, 1), [1.0; 4]);
        assert_eq!(init_weight("model.layers.0.self_attn.q_norm.weight", &[2], 0.02, 1), [1.0; 2]);
        assert_eq!(init_weight("model.layers.0.self_attn.q_proj.bias", &[2], 0.02, 1), [0.0; 2]);
    }
}
