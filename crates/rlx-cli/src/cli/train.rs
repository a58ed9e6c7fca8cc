//! `rlx train embedder`: fine-tune a sentence embedder on a TSV file of pairs with the
//! in-batch-negatives ranking loss, on any device, and write the fine-tuned model folder.
//! A progress bar (stderr, on a terminal) shows the loss and pairs/s; `--log` writes one JSON
//! line per step (step, loss, learning rate, gradient norm, skipped, seconds since the
//! first step began) for plotting or comparing. With `RLX_PROFILE=1` (Vulkan) the last step's
//! GPU time is printed by kernel.

use super::fetch::resolve_embedder;
use super::progress;
use rlx::prelude::{Device, Precision, Session};
use rlx_models::{EmbedderFineTune, FineTuneOptions, Pairs, StepReport};
use std::io::Write as _;
use std::path::PathBuf;
use std::time::Instant;

/// What `rlx train` trains.
#[derive(clap::Subcommand)]
pub enum TrainCommand {
    /// Fine-tune a BERT-family sentence embedder (all-minilm-l6-v2, or a folder or hub repo) on
    /// `anchor<TAB>positive` pairs with sentence-transformers' MultipleNegativesRankingLoss and
    /// AdamW; writes a model folder that `rlx embed --model` and sentence-transformers load.
    Embedder(EmbedderArgs),
    /// Train a dense decoder (Llama, Qwen2, Qwen3, Mistral) on a text file with the next-token
    /// loss, from its checkpoint or from a seeded init; writes a folder `rlx generate` loads.
    Decoder(super::train_decoder::DecoderArgs),
}

/// Options of `rlx train embedder`.
#[derive(clap::Args, Debug)]
pub struct EmbedderArgs {
    /// The model to start from: a folder (config.json, model.safetensors, tokenizer.json), a
    /// built-in name or a hub repo (fetched when missing).
    #[arg(long, default_value = rlx_models::DEFAULT_MODEL)]
    model: PathBuf,
    /// The training pairs: one `anchor<TAB>positive` per line.
    #[arg(long)]
    pairs: PathBuf,
    /// Where to write the fine-tuned model folder.
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
    /// Passes over the pairs.
    #[arg(long, default_value_t = 1)]
    epochs: usize,
    /// Pairs per step.
    #[arg(long, default_value_t = 32)]
    batch_size: usize,
    /// AdamW's peak learning rate (linear warmup, then linear decay to 0).
    #[arg(long, default_value_t = 2e-5)]
    lr: f32,
    /// Warmup steps (default: 10 % of all steps).
    #[arg(long)]
    warmup_steps: Option<u64>,
    /// AdamW's weight decay (not on biases and norm weights, as in transformers' Trainer).
    #[arg(long, default_value_t = 0.01)]
    weight_decay: f32,
    /// Clip gradients to this global norm (0: no clipping).
    #[arg(long, default_value_t = 1.0)]
    max_grad_norm: f32,
    /// Truncate sentences to this many tokens (default: the model's max_seq_length).
    #[arg(long)]
    max_seq_length: Option<usize>,
    /// The shuffle's seed.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Keep the file's order in every epoch.
    #[arg(long)]
    no_shuffle: bool,
    /// Write one JSON line per step here.
    #[arg(long)]
    log: Option<PathBuf>,
    /// Resume from a checkpoint written by --checkpoint.
    #[arg(long)]
    resume: Option<PathBuf>,
    /// Write a checkpoint (weights, optimizer state, step) here at the end, to resume later.
    #[arg(long)]
    checkpoint: Option<PathBuf>,
}

impl EmbedderArgs {
    fn options(&self) -> FineTuneOptions {
        FineTuneOptions {
            batch_size: self.batch_size,
            epochs: self.epochs,
            lr: self.lr,
            warmup_steps: self.warmup_steps,
            weight_decay: self.weight_decay,
            max_grad_norm: (self.max_grad_norm > 0.0).then_some(self.max_grad_norm),
            max_seq_length: self.max_seq_length,
            shuffle_seed: (!self.no_shuffle).then_some(self.seed),
            precision: self.precision,
            recompute: self.recompute,
            ..FineTuneOptions::default()
        }
    }
}

/// Runs `rlx train`.
pub fn run(cmd: &TrainCommand) -> Result<(), Box<dyn std::error::Error>> {
    match cmd {
        TrainCommand::Embedder(args) => embedder(args),
        TrainCommand::Decoder(args) => super::train_decoder::run(args),
    }
}

fn embedder(args: &EmbedderArgs) -> Result<(), Box<dyn std::error::Error>> {
    let dir = resolve_embedder(Some(&args.model), None)?;
    let pairs = Pairs::read_tsv(&args.pairs)?;
    let session = Session::new(args.device)?;
    eprintln!("fine-tuning {} on {} ({} pairs)", dir.display(), session.device(), pairs.len());
    let started = Instant::now();
    let mut ft = EmbedderFineTune::new(&dir, &session, &pairs, args.options())?;
    eprintln!(
        "compiled the training step in {:.1} s: {} steps of {} pairs, sentences padded to {} tokens",
        started.elapsed().as_secs_f64(),
        ft.total_steps(),
        args.batch_size,
        ft.seq_len()
    );
    if let Some(path) = &args.resume {
        ft.resume(path)?;
        eprintln!("resumed from {} at step {}", path.display(), ft.steps());
    }
    let remaining = ft.total_steps().saturating_sub(ft.steps() as usize);
    let mut steps = StepLog::new(remaining, args.log.as_deref(), args.batch_size, "pairs")?;
    let reports = ft.train(&pairs, |r| steps.record(r))?;
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

/// What both `rlx train` commands show while they train: a progress bar with the loss and the
/// rate, one JSON line per step in `--log` (step, loss, lr, grad_norm, skipped, loss_scale,
/// elapsed_s), and a summary line at the end.
pub(super) struct StepLog {
    bar: indicatif::ProgressBar,
    log: Option<(PathBuf, std::io::BufWriter<std::fs::File>)>,
    log_err: Option<std::io::Error>,
    t0: Instant,
    per_step: usize,
    unit: &'static str,
}

impl StepLog {
    /// A log of `steps` steps, each of `per_step` `unit`s (pairs, tokens), writing JSON lines
    /// to `log` when given.
    pub(super) fn new(
        steps: usize,
        log: Option<&std::path::Path>,
        per_step: usize,
        unit: &'static str,
    ) -> Result<StepLog, Box<dyn std::error::Error>> {
        let log = match log {
            Some(p) => Some((
                p.to_path_buf(),
                std::io::BufWriter::new(
                    std::fs::File::create(p).map_err(|e| format!("cannot write {}: {e}", p.display()))?,
                ),
            )),
            None => None,
        };
        let bar = progress::count("training", steps as u64);
        Ok(StepLog { bar, log, log_err: None, t0: Instant::now(), per_step, unit })
    }

    /// One step done.
    pub(super) fn record(&mut self, r: &StepReport) {
        let done = (self.bar.position() + 1) as f64 * self.per_step as f64;
        let rate = done / self.t0.elapsed().as_secs_f64().max(1e-9);
        self.bar.set_message(format!("loss {} · {rate:.0} {}/s", loss_text(r.loss), self.unit));
        self.bar.inc(1);
        if let Some((_, w)) = self.log.as_mut() {
            let line = serde_json::json!({
                "step": r.step, "loss": r.loss, "lr": r.lr, "grad_norm": r.grad_norm,
                "skipped": r.skipped, "loss_scale": r.loss_scale,
                "elapsed_s": self.t0.elapsed().as_secs_f64(),
            });
            if let Err(e) = writeln!(w, "{line}") {
                self.log_err.get_or_insert(e);
            }
        }
    }

    /// Clears the bar, reports a failed log write, and prints the summary of `reports`.
    pub(super) fn finish(mut self, reports: &[StepReport]) -> Result<(), Box<dyn std::error::Error>> {
        self.bar.finish_and_clear();
        if let Some((path, w)) = self.log.as_mut() {
            if let Some(e) = self.log_err.take() {
                return Err(format!("writing {}: {e}", path.display()).into());
            }
            w.flush().map_err(|e| format!("writing {}: {e}", path.display()))?;
        }
        let secs = self.t0.elapsed().as_secs_f64();
        let (first, last) = (reports.first().map(|r| r.loss), reports.last().map(|r| r.loss));
        let skipped = reports.iter().filter(|r| r.skipped).count();
        eprintln!(
            "{} steps in {secs:.1} s ({:.0} {}/s); loss {} → {}{}",
            reports.len(),
            (reports.len() * self.per_step) as f64 / secs.max(1e-9),
            self.unit,
            first.map_or("-".into(), loss_text),
            last.map_or("-".into(), loss_text),
            if skipped > 0 {
                format!(", {skipped} step(s) skipped (non-finite, loss scale lowered)")
            } else {
                String::new()
            }
        );
        Ok(())
    }
}

/// A loss for people: four decimals, or four significant digits when it is below 0.01.
fn loss_text(loss: f32) -> String {
    if loss.abs() >= 0.01 || loss == 0.0 || !loss.is_finite() {
        format!("{loss:.4}")
    } else {
        format!("{loss:.3e}")
    }
}

#[cfg(test)]
mod tests {
    use super::loss_text;

    #[test]
    fn small_losses_keep_their_digits() {
        assert_eq!(loss_text(2.34567), "2.3457");
        assert_eq!(loss_text(7.5587e-7), "7.559e-7");
        assert_eq!(loss_text(0.0), "0.0000");
        assert_eq!(loss_text(f32::NAN), "NaN");
    }
}
