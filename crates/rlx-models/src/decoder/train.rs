//! Training a decoder on a text file with the next-token loss: [`DecoderFineTune`] holds a
//! dense decoder's weights in device states and one compiled training step ([`Trainer`]).
//!
//! - The model folder gives config.json and tokenizer.json, and the weights from its
//!   safetensors when it has them (a fine-tune), else a seeded init like transformers'
//!   (training from scratch: [`init_weight`]).
//! - The text is tokenized once with no special tokens ([`tokens_from_text`]) and cut into
//!   consecutive, non-overlapping windows of `seq_len + 1` tokens; a step takes `batch_size`
//!   windows in order (or a seeded shuffle of the windows per epoch), inputs the first
//!   `seq_len` tokens of each, targets the last `seq_len` ([`TokenWindows`]).
//! - The loss is the mean next-token cross-entropy over every position of the batch (rlx-nn's
//!   `cross_entropy`), what transformers' `LlamaForCausalLM(labels=…)` computes on the same
//!   windows. Every step has one shape, so the step compiles once; the rope tables of positions
//!   0..seq_len are constants of the graph.
//! - [`DecoderFineTune::save`] writes a folder that [`crate::Decoder`] (and transformers) load.
//! - With [`DecoderTrainOptions::lora`] only low-rank adapters train (PEFT's LoRA, the
//!   `decoder::lora` module): the base weights are constants of the graph, each targeted linear's
//!   weight is `W + s·B·A`, and `save` writes the merged weights plus PEFT's adapter files.

use crate::common::checkpoint::{Checkpoint, INDEX_FILE, SINGLE_FILE};
use crate::common::safetensors::Precision;
use crate::common::tokenizer::causal_tokenizer;
use crate::common::trainer::{prepare_folder, same_folder};
use crate::common::trainer::{StepReport, TrainConfig, Trainer};
use crate::decoder::config::DecoderConfig;
use crate::decoder::graph::{decoder_logits_given, decoder_weight_shapes};
pub use crate::decoder::lora::LoraOptions;
use crate::decoder::lora::{check_lora_options, LoraPlan};
use crate::decoder::rope::rope_tables;
pub use crate::decoder::train_data::{init_weight, tokens_from_text, TokenWindows};
use crate::decoder::train_data::{initializer_range, refuse_untrainable};
use crate::error::{ModelError, Result};
use rlx_ir::{DType, Graph, IrError, NodeId, Tensor};
use rlx_nn::prelude::*;
use rlx_nn::transformers_decays;
use rlx_runtime::{CompileOptions, HostData, Session};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use tokenizers::Tokenizer;

/// Name of the step's token input: I32 [batch, seq_len], each window's first seq_len tokens.
pub const TRAIN_IDS: &str = "input_ids";
/// Name of the step's target input: I32 [batch, seq_len], each window's last seq_len tokens.
pub const TRAIN_LABELS: &str = "labels";

/// How a decoder trains. The defaults are transformers' `Trainer`'s (AdamW at 5e-5, no weight
/// decay, no warmup, linear decay to 0, gradients clipped to norm 1), on windows of 128
/// tokens, 8 a step, in the text's order.
#[derive(Clone, Debug, PartialEq)]
pub struct DecoderTrainOptions {
    /// Windows per step.
    pub batch_size: usize,
    /// Tokens a window predicts (a window holds one more); at most the model's
    /// `max_position_embeddings`.
    pub seq_len: usize,
    /// Passes over the text (ignored when `max_steps` is set).
    pub epochs: usize,
    /// Stop after this many steps, going round the text as often as that needs (`None`:
    /// `epochs` passes).
    pub max_steps: Option<usize>,
    /// AdamW's peak learning rate.
    pub lr: f32,
    /// Steps of linear warmup from 0, then linear decay to 0 at the last step.
    pub warmup_steps: u64,
    /// AdamW's decoupled weight decay, on every weight but the biases and norm weights
    /// (transformers' parameter groups, `rlx_nn::transformers_decays`).
    pub weight_decay: f32,
    /// Clip the gradients to this global norm (`None`: no clipping).
    pub max_grad_norm: Option<f32>,
    /// Shuffle the windows each epoch with this seed (`None`: the text's order every epoch,
    /// what a comparison with another framework wants).
    pub shuffle_seed: Option<u64>,
    /// The seed of the initial weights when the folder has no safetensors.
    pub init_seed: u64,
    /// [`Precision::F32`], or [`Precision::Mixed`] (f16 tensor-core operands, f32 weights,
    /// dynamic loss scaling). [`Precision::F16`] is refused: the weights being trained stay f32.
    pub precision: Precision,
    /// Activation checkpointing at the norms (`StepOpts::recompute`): the same gradients and
    /// less memory, for about one more forward of compute.
    pub recompute: bool,
    /// `Some`: train only LoRA adapters of the targeted linears (PEFT's), the base weights
    /// frozen; `None`: train every weight. LoRA needs a folder with weights; its adapters'
    /// init is seeded with `init_seed`, and `weight_decay` applies to them.
    pub lora: Option<LoraOptions>,
}

impl Default for DecoderTrainOptions {
    fn default() -> Self {
        DecoderTrainOptions {
            batch_size: 8,
            seq_len: 128,
            epochs: 1,
            max_steps: None,
            lr: 5e-5,
            warmup_steps: 0,
            weight_decay: 0.0,
            max_grad_norm: Some(1.0),
            shuffle_seed: None,
            init_seed: 0,
            precision: Precision::F32,
            recompute: false,
            lora: None,
        }
    }
}

/// A decoder being trained on one device.
pub struct DecoderFineTune {
    trainer: Trainer,
    config: DecoderConfig,
    source: PathBuf,
    opts: DecoderTrainOptions,
    data: TokenWindows,
    from_scratch: bool,
    lora: Option<LoraPlan>,
}

impl std::fmt::Debug for DecoderFineTune {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecoderFineTune")
            .field("source", &self.source)
            .field("opts", &self.opts)
            .field("tokens", &self.data.tokens().len())
            .field("from_scratch", &self.from_scratch)
            .field("lora_modules", &self.lora.as_ref().map(|l| l.modules().len()))
            .field("steps", &self.trainer.steps())
            .finish()
    }
}

impl DecoderFineTune {
    /// Loads the decoder in `dir` (config.json, tokenizer.json, and model.safetensors or a
    /// sharded checkpoint when present, else a seeded init) onto `session`, tokenizes `text`
    /// and compiles the training step.
    ///
    /// Errors: options out of range, a GGUF file, a quantized, mixture-of-experts or Mamba
    /// model, no tokenizer.json, a `seq_len` beyond the model's positions, a text too short for
    /// one batch, weights that do not fit the config.
    pub fn new(
        dir: &Path,
        session: &Session,
        text: &str,
        opts: DecoderTrainOptions,
    ) -> Result<DecoderFineTune> {
        check_options(&opts)?;
        refuse_untrainable(dir)?;
        let config = DecoderConfig::from_file(&dir.join("config.json"))?;
        let all_weights = decoder_weight_shapes(&config)?;
        let lora = match &opts.lora {
            Some(l) => Some(LoraPlan::new(l, dir, &all_weights)?),
            None => None,
        };
        if opts.seq_len > config.max_position_embeddings {
            return Err(ModelError::invalid(format!(
                "seq_len {} is beyond the model's max_position_embeddings {}; use --seq-len {} or less",
                opts.seq_len, config.max_position_embeddings, config.max_position_embeddings
            )));
        }
        let weights = match &lora {
            Some(plan) => plan.trainable(),
            None => all_weights.clone(),
        };
        let tokenizer = training_tokenizer(dir)?;
        let tokens = tokens_from_text(&tokenizer, text, config.vocab_size)?;
        let data = TokenWindows::new(tokens, opts.seq_len, opts.batch_size, opts.shuffle_seed)?;
        let total = opts.max_steps.unwrap_or(data.steps_per_epoch() * opts.epochs) as u64;
        let mixed = opts.precision == Precision::Mixed;
        let cfg = TrainConfig {
            opts: step_opts(&opts, &weights),
            schedule: LrSchedule {
                base: opts.lr,
                warmup: opts.warmup_steps.min(total),
                total,
                kind: Decay::Linear,
            },
            loss_scale: mixed.then(GradScaler::default),
            compile: CompileOptions { precision: opts.precision, ..CompileOptions::default() },
        };
        let (b, s) = (opts.batch_size, opts.seq_len);
        let positions: Vec<usize> = (0..s).collect();
        let rope = rope_tables(&config, &positions);
        let names: Vec<String> = all_weights.iter().map(|(n, _)| n.clone()).collect();
        let model = config.clone();
        let plan = lora.as_ref();
        let forward = move |g: &mut Graph, w: &[NodeId]| -> std::result::Result<NodeId, IrError> {
            let nodes = match plan {
                Some(plan) => plan.weight_nodes(g, w)?,
                None => w.to_vec(),
            };
            let map: HashMap<String, NodeId> = names.iter().cloned().zip(nodes).collect();
            let ids = g.input(TRAIN_IDS, &[b, s], DType::I32)?;
            let labels = g.input(TRAIN_LABELS, &[b, s], DType::I32)?;
            let cos = g.constant(Tensor::from_f32([s, rope.half], rope.cos.clone())?)?;
            let sin = g.constant(Tensor::from_f32([s, rope.half], rope.sin.clone())?)?;
            let logits = decoder_logits_given(g, &model, ids, [cos, sin], &map)?;
            g.cross_entropy(logits, labels, CrossEntropyOpts::default())
        };
        let mut trainer = Trainer::new(session, "decoder_train", &weights, cfg, forward)?;
        let from_scratch = !(dir.join(SINGLE_FILE).is_file() || dir.join(INDEX_FILE).is_file());
        if let Some(plan) = &lora {
            for (name, value) in plan.init(opts.init_seed)? {
                trainer.set_weight(&name, &value)?;
            }
        } else if from_scratch {
            let std = initializer_range(dir);
            for (i, (name, dims)) in weights.iter().enumerate() {
                let v = init_weight(name, dims, std, opts.init_seed.wrapping_add(i as u64));
                trainer.set_weight(name, &Tensor::from_f32(dims.clone(), v)?)?;
            }
        } else {
            let file = Checkpoint::open(dir)?;
            for (name, dims) in &weights {
                let value = file.load(name, dims, Precision::F32)?.into_f32_tensor(dims)?;
                trainer.set_weight(name, &value)?;
            }
        }
        Ok(DecoderFineTune { trainer, config, source: dir.to_path_buf(), opts, data, from_scratch, lora })
    }

    /// The model's config.
    pub fn config(&self) -> &DecoderConfig {
        &self.config
    }

    /// The training text's windows.
    pub fn data(&self) -> &TokenWindows {
        &self.data
    }

    /// Whether the weights started from the seeded init (the folder had no safetensors).
    pub fn from_scratch(&self) -> bool {
        self.from_scratch
    }

    /// Full batches per epoch.
    pub fn steps_per_epoch(&self) -> usize {
        self.data.steps_per_epoch()
    }

    /// Steps of the whole run: `max_steps`, or `epochs` passes.
    pub fn total_steps(&self) -> usize {
        self.opts.max_steps.unwrap_or(self.data.steps_per_epoch() * self.opts.epochs)
    }

    /// Steps taken so far.
    pub fn steps(&self) -> u64 {
        self.trainer.steps()
    }

    /// One optimizer step on `batch`: `batch_size` windows of `seq_len + 1` token ids,
    /// row-major (what [`TokenWindows::batch`] gives).
    pub fn step(&mut self, batch: &[i32]) -> Result<StepReport> {
        let (b, s) = (self.opts.batch_size, self.opts.seq_len);
        if batch.len() != b * (s + 1) {
            return Err(ModelError::invalid(format!(
                "a step takes {b} windows of {} tokens ({} ids), got {} ids",
                s + 1,
                b * (s + 1),
                batch.len()
            )));
        }
        let vocab = self.config.vocab_size;
        if let Some(bad) = batch.iter().find(|&&t| t < 0 || t as usize >= vocab) {
            return Err(ModelError::invalid(format!(
                "token id {bad} is outside the model's vocabulary of {vocab}"
            )));
        }
        let mut ids = Vec::with_capacity(b * s);
        let mut labels = Vec::with_capacity(b * s);
        for w in batch.chunks_exact(s + 1) {
            ids.extend_from_slice(&w[..s]);
            labels.extend_from_slice(&w[1..]);
        }
        let ids = Tensor::from_i32([b, s], ids)?;
        let labels = Tensor::from_i32([b, s], labels)?;
        let feeds: [(&str, &dyn HostData); 2] = [(TRAIN_IDS, &ids), (TRAIN_LABELS, &labels)];
        self.trainer.step(&feeds)
    }

    /// Runs the remaining steps of the run, calling `progress` after each; returns their
    /// reports. After [`DecoderFineTune::resume`] the steps the checkpoint had taken are
    /// passed over (the window order is fixed by the options), so an interrupted run ends
    /// where an uninterrupted one would.
    pub fn train(&mut self, mut progress: impl FnMut(&StepReport)) -> Result<Vec<StepReport>> {
        let done = usize::try_from(self.steps()).unwrap_or(usize::MAX);
        let total = self.total_steps();
        let mut reports = Vec::with_capacity(total.saturating_sub(done));
        for k in done..total {
            let batch = self.data.batch(k);
            let r = self.step(&batch)?;
            progress(&r);
            reports.push(r);
        }
        Ok(reports)
    }

    /// The last step's kernel launches with their GPU times (Vulkan with `RLX_PROFILE=1`).
    pub fn kernel_times(&self) -> Vec<(&'static str, std::time::Duration)> {
        self.trainer.kernel_times()
    }

    /// The trained weights, read from the device: `(HF name, f32 tensor)`; with LoRA, the
    /// adapters (`<module>.lora_A.weight`, `<module>.lora_B.weight`).
    pub fn weights(&mut self) -> Result<Vec<(String, Tensor)>> {
        self.trainer.weights()
    }

    /// Every weight of the model as it now computes: with LoRA the merged `W + s·B·A` of the
    /// adapted linears and the frozen base elsewhere, else [`DecoderFineTune::weights`].
    pub fn merged_weights(&mut self) -> Result<Vec<(String, Tensor)>> {
        let trained = self.trainer.weights()?;
        match &self.lora {
            Some(plan) => plan.merged(&trained),
            None => Ok(trained),
        }
    }

    /// The LoRA options and the module paths that have an adapter, when training LoRA.
    pub fn lora_modules(&self) -> Option<(&LoraOptions, Vec<String>)> {
        self.lora.as_ref().map(|p| (p.options(), p.modules()))
    }

    /// Elements trained and elements of the whole model (with LoRA: the adapters, and the
    /// base plus the adapters, as PEFT's `print_trainable_parameters` counts).
    pub fn parameter_counts(&self) -> (usize, usize) {
        match &self.lora {
            Some(plan) => plan.parameter_counts(),
            None => {
                let n = decoder_weight_shapes(&self.config)
                    .map(|w| w.iter().map(|(_, d)| d.iter().product::<usize>()).sum())
                    .unwrap_or(0);
                (n, n)
            }
        }
    }

    /// Saves weights, optimizer moments and the step count, to resume with
    /// [`DecoderFineTune::resume`].
    pub fn save_checkpoint(&mut self, path: &Path) -> Result<()> {
        self.trainer.save_checkpoint(path)
    }

    /// Restores a checkpoint of this model and these options.
    pub fn resume(&mut self, path: &Path) -> Result<()> {
        self.trainer.resume(path)
    }

    /// Writes the trained model to the folder `out`: `model.safetensors` with the weights
    /// (f32) and the source folder's config, generation config and tokenizer files, so that
    /// `rlx generate --model out` ([`crate::Decoder`]) and transformers load it.
    ///
    /// With LoRA, `model.safetensors` holds the merged weights ([`DecoderFineTune::merged_weights`])
    /// and PEFT's `adapter_model.safetensors` and `adapter_config.json` (whose base model is the
    /// source folder) are written beside it; saving into the source folder is refused, since it
    /// would replace the base weights the adapter applies to.
    pub fn save(&mut self, out: &Path) -> Result<()> {
        let Some(plan) = &self.lora else {
            return self.trainer.save_folder(&self.source, out, &MODEL_FILES);
        };
        if same_folder(&self.source, out) {
            return Err(ModelError::invalid(format!(
                "{} is the LoRA fine-tune's base model folder: saving there would replace the base weights \
                 that the adapter applies to; save to another folder",
                out.display()
            )));
        }
        prepare_folder(&self.source, out, &MODEL_FILES)?;
        let adapters = self.trainer.weights()?;
        let merged = plan.merged(&adapters)?;
        crate::common::safetensors::write_f32(&out.join(SINGLE_FILE), &merged, None)?;
        plan.write_adapter(out, &self.source, &adapters)
    }
}

/// The files of a decoder folder besides the weights, copied by [`DecoderFineTune::save`]
/// when the source has them.
const MODEL_FILES: [&str; 7] = [
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
    "README.md",
];

/// The tokenizer.json of the folder, required for training on text.
fn training_tokenizer(dir: &Path) -> Result<Tokenizer> {
    causal_tokenizer(dir)?.ok_or_else(|| {
        ModelError::invalid(format!(
            "{} has no tokenizer.json; training on text needs the model's tokenizer (copy it into the folder)",
            dir.display()
        ))
    })
}

fn check_options(o: &DecoderTrainOptions) -> Result<()> {
    if o.batch_size == 0 || o.seq_len == 0 {
        return Err(ModelError::invalid(format!(
            "batch size {} and seq_len {}: both must be at least 1",
            o.batch_size, o.seq_len
        )));
    }
    if o.epochs == 0 && o.max_steps.is_none() {
        return Err(ModelError::invalid("epochs must be at least 1 (or give max_steps)"));
    }
    if o.max_steps == Some(0) {
        return Err(ModelError::invalid("max_steps must be at least 1"));
    }
    if let Some(l) = &o.lora {
        check_lora_options(l)?;
    }
    if o.precision == Precision::F16 {
        return Err(ModelError::invalid(
            "precision f16 keeps weights f16, which training cannot update; use mixed (f16 compute, f32 weights) \
             or f32",
        ));
    }
    Ok(())
}

/// The decoder's optimizer step: AdamW with PyTorch's betas and ε at `o`'s rate and decay,
/// non-finite steps skipped, and transformers' two parameter groups: no weight decay on the
/// biases and norm weights ([`transformers_decays`]).
fn step_opts(o: &DecoderTrainOptions, weights: &[(String, Vec<usize>)]) -> StepOpts {
    StepOpts {
        optimizer: Optimizer::AdamW { beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: o.weight_decay },
        clip_grad_norm: o.max_grad_norm,
        skip_nonfinite: true,
        loss_scale: o.precision == Precision::Mixed,
        recompute: o.recompute,
        decay: Some(weights.iter().map(|(name, _)| transformers_decays(name)).collect()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn biases_and_norm_weights_are_exempt_from_weight_decay() {
        use crate::decoder::graph::tests::tiny;
        use crate::decoder::Architecture;
        // Llama; Qwen2 with q, k, v biases; Qwen3 with q and k norms.
        for arch in [Architecture::Llama, Architecture::Qwen2, Architecture::Qwen3] {
            let cfg = tiny(arch);
            let weights = decoder_weight_shapes(&cfg).unwrap();
            let decay = step_opts(&DecoderTrainOptions::default(), &weights).decay.unwrap();
            assert_eq!(decay.len(), weights.len());
            let flag: HashMap<&str, bool> =
                weights.iter().map(|(n, _)| n.as_str()).zip(decay.iter().copied()).collect();
            for (name, decays) in [
                ("model.embed_tokens.weight", true),
                ("model.layers.0.input_layernorm.weight", false),
                ("model.layers.1.post_attention_layernorm.weight", false),
                ("model.layers.0.self_attn.q_proj.weight", true),
                ("model.layers.1.mlp.down_proj.weight", true),
                ("model.norm.weight", false),
            ] {
                assert_eq!(flag.get(name), Some(&decays), "{name} in {:?}", flag.keys());
            }
            // The exempt weights are exactly the 1-D ones: biases and norm weights.
            for ((name, dims), decays) in weights.iter().zip(&decay) {
                assert_eq!(*decays, dims.len() > 1, "{name} {dims:?}");
            }
        }
        let exempt = |arch| {
            let weights = decoder_weight_shapes(&tiny(arch)).unwrap();
            weights.into_iter().map(|(n, _)| n).filter(|n| !transformers_decays(n)).collect::<Vec<_>>()
        };
        assert!(exempt(Architecture::Qwen2).contains(&"model.layers.0.self_attn.q_proj.bias".to_string()));
        assert!(exempt(Architecture::Qwen3).contains(&"model.layers.1.self_attn.k_norm.weight".to_string()));
        // LoRA's adapters decay, as PEFT's models under transformers' Trainer: they are neither
        // biases nor norm weights.
        let adapters: Vec<(String, Vec<usize>)> = ["q_proj.lora_A.weight", "v_proj.lora_B.weight"]
            .iter()
            .map(|n| (format!("model.layers.0.self_attn.{n}"), vec![8, 64]))
            .collect();
        let decay = step_opts(&DecoderTrainOptions::default(), &adapters).decay.unwrap();
        assert_eq!(decay, [true, true]);
    }

    #[test]
    fn bad_options_are_refused() {
        let base = DecoderTrainOptions::default();
        for o in [
            DecoderTrainOptions { batch_size: 0, ..base.clone() },
            DecoderTrainOptions { seq_len: 0, ..base.clone() },
            DecoderTrainOptions { epochs: 0, ..base.clone() },
            DecoderTrainOptions { max_steps: Some(0), ..base.clone() },
            DecoderTrainOptions { precision: Precision::F16, ..base.clone() },
        ] {
            assert!(check_options(&o).is_err(), "{o:?}");
        }
        check_options(&base).unwrap();
        check_options(&DecoderTrainOptions { epochs: 0, max_steps: Some(3), ..base.clone() }).unwrap();
    }
}
