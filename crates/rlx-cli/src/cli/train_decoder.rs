//! `rlx train decoder`: train a dense decoder (Llama, Qwen2, Qwen3, Mistral) on a text file with
//! the next-token loss, on any device, from its checkpoint or (a folder with only config.json and
//! tokenizer.json) from a seeded init, and write a model folder `rlx generate --model` loads.
//! A progress bar (stderr, on a terminal) shows the loss and tokens/s; `--log` writes one JSON
//! line per step with the fields of `rlx train embedder`'s log (step, loss, lr, grad_norm,
//! skipped, loss_scale, elapsed_s). With `RLX_PROFILE=1` (Vulkan) the last step's GPU time is
//! printed by kernel. With `--lora-rank R` only PEFT-style LoRA adapters of the
//! `--lora-targets` linears train (the base weights frozen); the output folder holds the merged
//! model and PEFT's adapter_model.safetensors and adapter_config.json.

use super::fetch::resolve_lm;
use super::train::StepLog;
use rlx::prelude::{Device, Precision, Session};
use rlx_models::{DecoderFineTune, DecoderTrainOptions, LoraOptions};
use std::path::PathBuf;
use std::time::Instant;

/// Options of `rlx train decoder`.
#[derive(clap::Args, Debug)]
pub struct DecoderArgs {
    /// The model: a folder with config.json and tokenizer.json (and model.safetensors to
    /// fine-tune; without weights it trains from a seeded init), or a hub repo (fetched).
    #[arg(long)]
    model: PathBuf,
    /// The training text (UTF-8), tokenized as one stream with no special tokens.
    #[arg(long)]
    text: PathBuf,
    /// Where to write the trained model folder.
    #[arg(long)]
    out: PathBuf,
    /// cpu, gpu, vulkan or auto (auto honours RLX_DEVICE).
    #[arg(long, default_value = "auto")]
    device: Device,
    /// f32, or mixed (f16 tensor-core operands, f32 weights, dynamic loss scaling).
    #[arg(long, default_value = "f32")]
    precision: Precision,
    /// Recompute activations in the backward instead of keeping them (checkpoints at the
    /// norms): the same gradients and less memory, for about one more forward of compute.
    #[arg(long)]
    recompute: bool,
    /// Tokens each window predicts (a window holds one more); at most the model's positions.
    #[arg(long, default_value_t = 128)]
    seq_len: usize,
    /// Windows per step.
    #[arg(long, default_value_t = 8)]
    batch_size: usize,
    /// Passes over the text.
    #[arg(long, default_value_t = 1)]
    epochs: usize,
    /// Stop after this many steps, going round the text as often as needed (overrides
    /// --epochs).
    #[arg(long)]
    max_steps: Option<usize>,
    /// AdamW's peak learning rate (linear warmup, then linear decay to 0).
    #[arg(long, default_value_t = 5e-5)]
    lr: f32,
    /// Warmup steps.
    #[arg(long, default_value_t = 0)]
    warmup_steps: u64,
    /// AdamW's weight decay (not on biases and norm weights, as in transformers' Trainer).
    #[arg(long, default_value_t = 0.0)]
    weight_decay: f32,
    /// Clip gradients to this global norm (0: no clipping).
    #[arg(long, default_value_t = 1.0)]
    max_grad_norm: f32,
    /// The seed of the initial weights (a folder without weights) and of --shuffle.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Shuffle the windows each epoch (default: the text's order).
    #[arg(long)]
    shuffle: bool,
    /// Write one JSON line per step here.
    #[arg(long)]
    log: Option<PathBuf>,
    /// Resume from a checkpoint written by --checkpoint.
    #[arg(long)]
    resume: Option<PathBuf>,
    /// Write a checkpoint (weights, optimizer state, step) here at the end, to resume later.
    #[arg(long)]
    checkpoint: Option<PathBuf>,
    /// Train LoRA adapters of this rank (PEFT's) instead of every weight; the base weights stay
    /// frozen. The output folder holds the merged model plus adapter_model.safetensors and
    /// adapter_config.json.
    #[arg(long)]
    lora_rank: Option<usize>,
    /// LoRA's alpha: the adapters' update is scaled by alpha / rank.
    #[arg(long, default_value_t = 16.0, requires = "lora_rank")]
    lora_alpha: f32,
    /// The linears that get an adapter: module names, comma-separated (PEFT's target_modules).
    #[arg(long, value_delimiter = ',', default_value = "q_proj,v_proj", requires = "lora_rank")]
    lora_targets: Vec<String>,
}

impl DecoderArgs {
    fn options(&self) -> DecoderTrainOptions {
        DecoderTrainOptions {
            batch_size: self.batch_size,
            seq_len: self.seq_len,
            epochs: self.epochs,
            max_steps: self.max_steps,
            lr: self.lr,
            warmup_steps: self.warmup_steps,
            weight_decay: self.weight_decay,
            max_grad_norm: (self.max_grad_norm > 0.0).then_some(self.max_grad_norm),
            shuffle_seed: self.shuffle.then_some(self.seed),
            init_seed: self.seed,
            precision: self.precision,
            recompute: self.recompute,
            lora: self.lora_rank.map(|rank| LoraOptions {
                rank,
                alpha: self.lora_alpha,
                targets: self.lora_targets.clone(),
            }),
        }
    }
}

/// Runs `rlx train decoder`.
pub fn run(args: &DecoderArgs) -> Result<(), Box<dyn std::error::Error>> {
    let mut dir = args.model.clone();
    resolve_lm(&mut dir, None)?;
    let text = std::fs::read_to_string(&args.text)
        .map_err(|e| format!("cannot read {}: {e}", args.text.display()))?;
    let session = Session::new(args.device)?;
    eprintln!("training {} on {} ({} bytes of text)", dir.display(), session.device(), text.len());
    let started = Instant::now();
    let mut ft = DecoderFineTune::new(&dir, &session, &text, args.options())?;
    let tokens_per_step = args.batch_size * args.seq_len;
    eprintln!(
        "compiled the training step in {:.1} s: {} tokens, {} steps of {} windows of {} tokens{}",
        started.elapsed().as_secs_f64(),
        ft.data().tokens().len(),
        ft.total_steps(),
        args.batch_size,
        args.seq_len + 1,
        if ft.from_scratch() { format!(", from a seeded init (seed {})", args.seed) } else { String::new() }
    );
    if let Some((lora, modules)) = ft.lora_modules() {
        let (trained, total) = ft.parameter_counts();
        let layers = ft.config().num_hidden_layers;
        let shape = if modules.len() == lora.targets.len() * layers {
            format!("{} modules × {layers} layers", lora.targets.len())
        } else {
            format!("{} linears", modules.len())
        };
        eprintln!(
            "LoRA r={} alpha={} on {shape} ({}): {trained} trainable weights of {total} ({:.3}%)",
            lora.rank,
            lora.alpha,
            lora.targets.join(","),
            100.0 * trained as f64 / total.max(1) as f64
        );
    }
    if let Some(path) = &args.resume {
        ft.resume(path)?;
        eprintln!("resumed from {} at step {}", path.display(), ft.steps());
    }
    let remaining = ft.total_steps().saturating_sub(ft.steps() as usize);
    let mut steps = StepLog::new(remaining, args.log.as_deref(), tokens_per_step, "tokens")?;
    let reports = ft.train(|r| steps.record(r))?;
    steps.finish(&reports)?;
    super::bench_generate::print_kernel_times("the last training step", &ft.kernel_times());
    if let Some(path) = &args.checkpoint {
        ft.save_checkpoint(path)?;
        eprintln!("checkpoint: {}", path.display());
    }
    ft.save(&args.out)?;
    println!("{}", args.out.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use clap::Parser as _;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: DecoderArgs,
    }

    #[test]
    fn flags_become_options() {
        let cli = Cli::try_parse_from([
            "t",
            "--model",
            "m",
            "--text",
            "t.txt",
            "--out",
            "o",
            "--seq-len",
            "64",
            "--max-steps",
            "500",
            "--max-grad-norm",
            "0",
            "--shuffle",
            "--seed",
            "3",
        ])
        .unwrap();
        let o = cli.args.options();
        assert_eq!((o.seq_len, o.batch_size, o.max_steps), (64, 8, Some(500)));
        assert_eq!((o.max_grad_norm, o.shuffle_seed, o.init_seed), (None, Some(3), 3));
        assert_eq!(o.lora, None);
    }

    #[test]
    fn lora_flags_become_lora_options() {
        let base = ["t", "--model", "m", "--text", "t.txt", "--out", "o"];
        let cli = Cli::try_parse_from(base.iter().chain(&["--lora-rank", "4"])).unwrap();
        let want = LoraOptions { rank: 4, alpha: 16.0, targets: vec!["q_proj".into(), "v_proj".into()] };
        assert_eq!(cli.args.options().lora, Some(want));
        let flags = ["--lora-rank", "16", "--lora-alpha", "32", "--lora-targets", "q_proj,k_proj,o_proj"];
        let cli = Cli::try_parse_from(base.iter().chain(&flags)).unwrap();
        let lora = cli.args.options().lora.unwrap();
        assert_eq!(
            (lora.rank, lora.alpha, lora.targets.join(",")),
            (16, 32.0, "q_proj,k_proj,o_proj".into())
        );
        // Alpha or targets without a rank are a usage error, not silently ignored.
        assert!(Cli::try_parse_from(base.iter().chain(&["--lora-alpha", "8"])).is_err());
    }
}
