//! Fine-tuning a BERT-family sentence embedder on (anchor, positive) pairs with
//! sentence-transformers' MultipleNegativesRankingLoss: in a batch of B pairs, each anchor's
//! positive is its class among all B positives (the other B − 1 are its negatives).
//!
//! - [`Pairs`]: the training text, from a TSV file of `anchor<TAB>positive` lines.
//! - [`FineTuneOptions`]: batch, epochs, AdamW's rate and decay, warmup, clipping, precision,
//!   with sentence-transformers' defaults.
//! - [`EmbedderFineTune`]: the model's weights in device states and one compiled training step
//!   ([`Trainer`]); [`EmbedderFineTune::save`] writes a model folder that [`crate::Embedder`]
//!   (and sentence-transformers) load.
//!
//! Every step has one shape: the B anchors and B positives are one batch of 2B sentences padded
//! to the longest tokenized sentence of the whole data set (capped at the model's maximum), so
//! the step compiles once. Padding changes nothing but the work: keys are masked and the mean
//! pooling counts real tokens only.

use crate::bert::config::{read_model_config, ModelConfig};
use crate::bert::graph::{pooled_embeddings, weight_shapes, WeightSource};
use crate::bert::tokenizer::SentenceTokenizer;
use crate::common::safetensors::{Precision, SafetensorsFile};
use crate::common::trainer::{StepReport, TrainConfig, Trainer};
use crate::decoder::train_data::shuffle;
use crate::error::{ModelError, Result};
use rlx_ir::{DType, Graph, IrError, NodeId, Tensor};
use rlx_nn::prelude::*;
use rlx_nn::{transformers_decays, Decay, GradScaler, LrSchedule, StepOpts};
use rlx_runtime::{CompileOptions, HostData, Session};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Names of the training step's inputs: I32 [2B, S], anchors in rows 0..B, positives after.
pub const TRAIN_IDS: &str = "input_ids";
/// See [`TRAIN_IDS`].
pub const TRAIN_TYPES: &str = "token_type_ids";
/// See [`TRAIN_IDS`].
pub const TRAIN_MASK: &str = "attention_mask";

/// Sentence pairs to train on: `anchors[i]` and `positives[i]` mean the same.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pairs {
    /// The first sentence of each pair.
    pub anchors: Vec<String>,
    /// The second sentence of each pair.
    pub positives: Vec<String>,
}

impl Pairs {
    /// Pairs from `(anchor, positive)` tuples.
    pub fn new(pairs: impl IntoIterator<Item = (String, String)>) -> Pairs {
        let (anchors, positives) = pairs.into_iter().unzip();
        Pairs { anchors, positives }
    }

    /// Reads a TSV file: one `anchor<TAB>positive` pair per line. Blank lines are skipped; a
    /// line with another number of fields, or an empty field, is an error naming the line.
    pub fn read_tsv(path: &Path) -> Result<Pairs> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ModelError::Io { path: path.to_path_buf(), source })?;
        Pairs::parse_tsv(&path.display().to_string(), &text)
    }

    /// [`Pairs::read_tsv`] on text already read; `name` is used in errors.
    pub fn parse_tsv(name: &str, text: &str) -> Result<Pairs> {
        let mut pairs = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let fields: Vec<&str> = line.split('\t').collect();
            match fields.as_slice() {
                [a, p] if !a.trim().is_empty() && !p.trim().is_empty() => {
                    pairs.push((a.to_string(), p.to_string()))
                }
                _ => {
                    return Err(ModelError::InvalidInput {
                        reason: format!(
                            "{name} line {}: expected `anchor<TAB>positive` (two non-empty fields), found {} \
                             field(s)",
                            i + 1,
                            fields.len()
                        ),
                    })
                }
            }
        }
        Ok(Pairs::new(pairs))
    }

    /// The number of pairs.
    pub fn len(&self) -> usize {
        self.anchors.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.anchors.is_empty()
    }
}

/// How a fine-tune runs. The defaults are sentence-transformers' (`fit`): AdamW at 2e-5 with
/// weight decay 0.01, a linear schedule, gradients clipped to norm 1, scale 20.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FineTuneOptions {
    /// Pairs per step (the in-batch negatives of each anchor are the other B − 1 positives).
    pub batch_size: usize,
    /// Passes over the data; a partial last batch of an epoch is left out.
    pub epochs: usize,
    /// AdamW's peak learning rate.
    pub lr: f32,
    /// Steps of linear warmup from 0 (`None`: 10 % of all steps).
    pub warmup_steps: Option<u64>,
    /// AdamW's decoupled weight decay, on every weight but the biases and LayerNorm weights
    /// (transformers' and sentence-transformers' parameter groups,
    /// `rlx_nn::transformers_decays`).
    pub weight_decay: f32,
    /// Clip the gradients to this global norm (`None`: no clipping).
    pub max_grad_norm: Option<f32>,
    /// The loss's similarity scale.
    pub scale: f32,
    /// Truncate sentences to this many tokens (`None`: the model's `max_seq_length`).
    pub max_seq_length: Option<usize>,
    /// Shuffle the pairs each epoch with this seed (`None`: the file's order every epoch).
    pub shuffle_seed: Option<u64>,
    /// [`Precision::F32`], or [`Precision::Mixed`] (f16 tensor-core operands, f32 weights,
    /// dynamic loss scaling). [`Precision::F16`] is refused: the weights being trained stay f32.
    pub precision: Precision,
    /// Activation checkpointing at the layer norms (`StepOpts::recompute`): the same gradients
    /// and less memory, for about one more forward of compute.
    pub recompute: bool,
}

impl Default for FineTuneOptions {
    fn default() -> Self {
        FineTuneOptions {
            batch_size: 32,
            epochs: 1,
            lr: 2e-5,
            warmup_steps: None,
            weight_decay: 0.01,
            max_grad_norm: Some(1.0),
            scale: 20.0,
            max_seq_length: None,
            shuffle_seed: Some(42),
            precision: Precision::F32,
            recompute: false,
        }
    }
}

/// A sentence embedder being fine-tuned on one device.
pub struct EmbedderFineTune {
    trainer: Trainer,
    tokenizer: SentenceTokenizer,
    config: ModelConfig,
    source: PathBuf,
    opts: FineTuneOptions,
    seq: usize,
    steps_per_epoch: usize,
}

impl std::fmt::Debug for EmbedderFineTune {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbedderFineTune")
            .field("source", &self.source)
            .field("opts", &self.opts)
            .field("seq", &self.seq)
            .field("steps", &self.trainer.steps())
            .finish()
    }
}

impl EmbedderFineTune {
    /// Loads the model in `dir` (config.json, model.safetensors, tokenizer.json) onto
    /// `session` and compiles the training step for `pairs` (which fix the padded length).
    pub fn new(
        dir: &Path,
        session: &Session,
        pairs: &Pairs,
        opts: FineTuneOptions,
    ) -> Result<EmbedderFineTune> {
        check_options(&opts)?;
        if let Some(missing) = crate::bert::embedder::missing_files(dir) {
            return Err(ModelError::NoModel { dir: dir.to_path_buf(), missing });
        }
        let config = read_model_config(dir)?;
        let max_len = opts.max_seq_length.unwrap_or(config.max_seq_length).min(config.max_seq_length);
        let tokenizer = SentenceTokenizer::from_file(&dir.join("tokenizer.json"), max_len)?;
        let b = opts.batch_size;
        if pairs.len() < b {
            return Err(ModelError::invalid(format!(
                "{} pair(s) make no full batch of {b}; give more pairs or a smaller --batch-size",
                pairs.len()
            )));
        }
        let steps_per_epoch = pairs.len() / b;
        let longest = [&pairs.anchors, &pairs.positives]
            .iter()
            .map(|s| {
                let refs: Vec<&str> = s.iter().map(String::as_str).collect();
                tokenizer.lengths(&refs).map(|l| l.into_iter().max().unwrap_or(1))
            })
            .collect::<Result<Vec<usize>>>()?;
        let seq = longest.into_iter().max().unwrap_or(1).max(1);

        let total = (steps_per_epoch * opts.epochs) as u64;
        let warmup = opts.warmup_steps.unwrap_or(total.div_ceil(10)).min(total);
        let weights = weight_shapes(&config.bert, config.pooling)?;
        let cfg = TrainConfig {
            opts: step_opts(&opts, &weights),
            schedule: LrSchedule { base: opts.lr, warmup, total, kind: Decay::Linear },
            loss_scale: (opts.precision == Precision::Mixed).then(GradScaler::default),
            compile: CompileOptions { precision: opts.precision, ..CompileOptions::default() },
        };
        let bert = config.bert.clone();
        let pooling = config.pooling;
        let names: Vec<String> = weights.iter().map(|(n, _)| n.clone()).collect();
        let forward = move |g: &mut Graph, w: &[NodeId]| -> std::result::Result<NodeId, IrError> {
            let map: HashMap<String, NodeId> = names.iter().cloned().zip(w.iter().copied()).collect();
            let ids = g.input(TRAIN_IDS, &[2 * b, seq], DType::I32)?;
            let types = g.input(TRAIN_TYPES, &[2 * b, seq], DType::I32)?;
            let mask = g.input(TRAIN_MASK, &[2 * b, seq], DType::I32)?;
            let pooled = pooled_embeddings(g, &bert, pooling, [ids, types, mask], WeightSource::Given(&map))?;
            let anchors = g.narrow(pooled, 0, 0, b)?;
            let positives = g.narrow(pooled, 0, b, b)?;
            g.multiple_negatives_ranking(anchors, positives, opts.scale)
        };
        let mut trainer = Trainer::new(session, "bert_finetune", &weights, cfg, forward)?;
        let file = SafetensorsFile::open(&dir.join("model.safetensors"))?;
        for (name, dims) in &weights {
            let value = file.load(name, dims, Precision::F32)?.into_f32_tensor(dims)?;
            trainer.set_weight(name, &value)?;
        }
        Ok(EmbedderFineTune {
            trainer,
            tokenizer,
            config,
            source: dir.to_path_buf(),
            opts,
            seq,
            steps_per_epoch,
        })
    }

    /// The padded sentence length every step uses.
    pub fn seq_len(&self) -> usize {
        self.seq
    }

    /// Full batches per epoch.
    pub fn steps_per_epoch(&self) -> usize {
        self.steps_per_epoch
    }

    /// Steps over all epochs.
    pub fn total_steps(&self) -> usize {
        self.steps_per_epoch * self.opts.epochs
    }

    /// Steps taken so far.
    pub fn steps(&self) -> u64 {
        self.trainer.steps()
    }

    /// The model's config.
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// The pair indices of each step of `epoch` (counted from 0), in order: the data's order,
    /// or a seeded shuffle of it, cut into full batches.
    pub fn epoch_batches(&self, pairs: usize, epoch: usize) -> Vec<Vec<usize>> {
        let mut order: Vec<usize> = (0..pairs).collect();
        if let Some(seed) = self.opts.shuffle_seed {
            shuffle(&mut order, seed.wrapping_add(epoch as u64));
        }
        order.chunks_exact(self.opts.batch_size).map(<[usize]>::to_vec).collect()
    }

    /// One optimizer step on a batch of exactly `batch_size` pairs.
    pub fn step(&mut self, anchors: &[&str], positives: &[&str]) -> Result<StepReport> {
        let b = self.opts.batch_size;
        if anchors.len() != b || positives.len() != b {
            return Err(ModelError::invalid(format!(
                "a step takes {b} anchors and {b} positives, got {} and {}",
                anchors.len(),
                positives.len()
            )));
        }
        let all: Vec<&str> = anchors.iter().chain(positives).copied().collect();
        let t = self.tokenizer.batch(&all)?;
        let (ids, types, mask) = pad_to(&t, self.seq)?;
        let feeds: [(&str, &dyn HostData); 3] =
            [(TRAIN_IDS, &ids), (TRAIN_TYPES, &types), (TRAIN_MASK, &mask)];
        self.trainer.step(&feeds)
    }

    /// Runs every epoch over `pairs`, calling `progress` after each step (for a progress bar
    /// or a log); returns the reports of the steps it took. After [`EmbedderFineTune::resume`]
    /// the steps the checkpoint had taken are passed over (the batch order is fixed by the
    /// seed), so an interrupted run ends where an uninterrupted one would.
    pub fn train(&mut self, pairs: &Pairs, mut progress: impl FnMut(&StepReport)) -> Result<Vec<StepReport>> {
        let done = usize::try_from(self.steps()).unwrap_or(usize::MAX);
        let mut reports = Vec::with_capacity(self.total_steps().saturating_sub(done));
        for epoch in 0..self.opts.epochs {
            let batches = self.epoch_batches(pairs.len(), epoch);
            let skip = done.saturating_sub(epoch * self.steps_per_epoch).min(batches.len());
            for idx in &batches[skip..] {
                let a: Vec<&str> = idx.iter().map(|&i| pairs.anchors[i].as_str()).collect();
                let p: Vec<&str> = idx.iter().map(|&i| pairs.positives[i].as_str()).collect();
                let r = self.step(&a, &p)?;
                progress(&r);
                reports.push(r);
            }
        }
        Ok(reports)
    }

    /// The last step's kernel launches with their GPU times (Vulkan with `RLX_PROFILE=1`).
    pub fn kernel_times(&self) -> Vec<(&'static str, std::time::Duration)> {
        self.trainer.kernel_times()
    }

    /// The current weights, read from the device: `(HF name, f32 tensor)`.
    pub fn weights(&mut self) -> Result<Vec<(String, Tensor)>> {
        self.trainer.weights()
    }

    /// Saves weights, optimizer moments and the step count, to resume with
    /// [`EmbedderFineTune::resume`].
    pub fn save_checkpoint(&mut self, path: &Path) -> Result<()> {
        self.trainer.save_checkpoint(path)
    }

    /// Restores a checkpoint of this model and these options.
    pub fn resume(&mut self, path: &Path) -> Result<()> {
        self.trainer.resume(path)
    }

    /// Writes the fine-tuned model to the folder `out`: `model.safetensors` with the trained
    /// weights (f32), and the source folder's config, tokenizer and sentence-transformers files,
    /// so that [`crate::Embedder::load`] and sentence-transformers read it.
    pub fn save(&mut self, out: &Path) -> Result<()> {
        self.trainer.save_folder(&self.source, out, &MODEL_FILES)
    }
}

/// The files of a sentence-transformers model folder besides the weights, copied by
/// [`EmbedderFineTune::save`] when the source has them.
const MODEL_FILES: [&str; 10] = [
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "modules.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    "1_Pooling/config.json",
    "README.md",
];

/// The fine-tune's optimizer step: AdamW with PyTorch's betas and ε at `o`'s rate and decay,
/// non-finite steps skipped, and sentence-transformers' (transformers') two parameter groups:
/// no weight decay on the biases and LayerNorm weights ([`transformers_decays`]).
fn step_opts(o: &FineTuneOptions, weights: &[(String, Vec<usize>)]) -> StepOpts {
    StepOpts {
        optimizer: Optimizer::AdamW { beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: o.weight_decay },
        clip_grad_norm: o.max_grad_norm,
        skip_nonfinite: true,
        loss_scale: o.precision == Precision::Mixed,
        recompute: o.recompute,
        decay: Some(weights.iter().map(|(name, _)| transformers_decays(name)).collect()),
    }
}

fn check_options(o: &FineTuneOptions) -> Result<()> {
    if o.batch_size < 2 {
        return Err(ModelError::invalid(format!(
            "batch size {}: the ranking loss needs at least 2 pairs per step (the other pairs are the negatives)",
            o.batch_size
        )));
    }
    if o.epochs == 0 {
        return Err(ModelError::invalid("epochs must be at least 1"));
    }
    if !(o.scale.is_finite() && o.scale > 0.0) {
        return Err(ModelError::invalid(format!(
            "scale {}: use a finite value > 0 (sentence-transformers uses 20)",
            o.scale
        )));
    }
    if o.precision == Precision::F16 {
        return Err(ModelError::invalid(
            "precision f16 keeps weights f16, which a fine-tune cannot update; use mixed (f16 compute, f32 weights) \
             or f32",
        ));
    }
    Ok(())
}

/// The batch's ids, types and mask as [rows, seq] tensors, padded on the right with zeros.
fn pad_to(t: &crate::bert::tokenizer::TokenBatch, seq: usize) -> Result<(Tensor, Tensor, Tensor)> {
    if t.seq > seq {
        return Err(ModelError::invalid(format!(
            "a sentence of {} tokens is longer than the {seq} the step was compiled for; give the training pairs \
             when the fine-tune is made",
            t.seq
        )));
    }
    let pad = |v: &[i32]| -> Result<Tensor> {
        let mut out = vec![0i32; t.batch * seq];
        for (row, chunk) in v.chunks(t.seq.max(1)).enumerate().take(t.batch) {
            out[row * seq..row * seq + chunk.len()].copy_from_slice(chunk);
        }
        Ok(Tensor::from_i32([t.batch, seq], out)?)
    };
    Ok((pad(&t.input_ids)?, pad(&t.token_type_ids)?, pad(&t.attention_mask)?))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn tsv_lines_with_other_field_counts_are_errors_naming_the_line() {
        let p = Pairs::parse_tsv("p.tsv", "a\tb\n\n c \t d \n").unwrap();
        assert_eq!(p.anchors, ["a", " c "]);
        assert_eq!(p.positives, ["b", " d "]);
        for bad in ["a\tb\nonly one field\n", "a\tb\nx\ty\tz\n", "a\tb\n\tx\n"] {
            let e = Pairs::parse_tsv("p.tsv", bad).unwrap_err().to_string();
            assert!(e.contains("p.tsv line 2"), "{e}");
        }
    }

    #[test]
    fn a_seeded_shuffle_is_a_permutation_fixed_by_its_seed() {
        let mut a: Vec<usize> = (0..100).collect();
        let mut b = a.clone();
        shuffle(&mut a, 7);
        shuffle(&mut b, 7);
        assert_eq!(a, b);
        assert_ne!(a, (0..100).collect::<Vec<_>>());
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..100).collect::<Vec<_>>());
        let mut c: Vec<usize> = (0..100).collect();
        shuffle(&mut c, 8);
        assert_ne!(a, c);
    }

    #[test]
    fn biases_and_layer_norm_weights_are_exempt_from_weight_decay() {
        let cfg = crate::bert::BertConfig {
            vocab_size: 16,
            hidden_size: 8,
            num_hidden_layers: 2,
            num_attention_heads: 2,
            intermediate_size: 16,
            max_position_embeddings: 8,
            ..crate::bert::BertConfig::base()
        };
        let weights = weight_shapes(&cfg, crate::bert::Pooling::Mean).unwrap();
        let decay = step_opts(&FineTuneOptions::default(), &weights).decay.unwrap();
        assert_eq!(decay.len(), weights.len());
        let flag: HashMap<&str, bool> =
            weights.iter().map(|(n, _)| n.as_str()).zip(decay.iter().copied()).collect();
        for (name, decays) in [
            ("embeddings.word_embeddings.weight", true),
            ("embeddings.LayerNorm.weight", false),
            ("embeddings.LayerNorm.bias", false),
            ("encoder.layer.0.attention.self.query.weight", true),
            ("encoder.layer.0.attention.self.query.bias", false),
            ("encoder.layer.1.attention.output.LayerNorm.weight", false),
            ("encoder.layer.1.intermediate.dense.weight", true),
            ("encoder.layer.1.output.dense.bias", false),
        ] {
            assert_eq!(flag.get(name), Some(&decays), "{name} in {:?}", flag.keys());
        }
        // Exactly the bias and LayerNorm weights are exempt, and those are the 1-D ones.
        for ((name, dims), decays) in weights.iter().zip(&decay) {
            let exempt = name.contains("bias") || name.contains("LayerNorm");
            assert_eq!(*decays, !exempt, "{name}");
            assert_eq!(dims.len() == 1, exempt, "{name} {dims:?}");
        }
    }

    #[test]
    fn bad_options_are_refused() {
        let base = FineTuneOptions::default();
        for o in [
            FineTuneOptions { batch_size: 1, ..base },
            FineTuneOptions { epochs: 0, ..base },
            FineTuneOptions { scale: f32::NAN, ..base },
            FineTuneOptions { precision: Precision::F16, ..base },
        ] {
            assert!(check_options(&o).is_err(), "{o:?}");
        }
        check_options(&base).unwrap();
    }
}
