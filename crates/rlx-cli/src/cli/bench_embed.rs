//! `rlx bench embed`: all-MiniLM-L6-v2 throughput on each device: sentences per second at
//! batch 1 and 64, and tokens per second for one sequence of 128 and of 512 tokens.
//! Compilation and the first (warm-up) runs are excluded; each figure is the median over the
//! timed runs of one `embed_batch` call (tokenize, upload, compute, read back), or for the
//! single sequences one `run_tokens` call (already tokenized: upload, compute, read back).

use super::bench::median;
use super::bench_args::CommonArgs;
use super::fetch::resolve_model_dir;
use rlx::prelude::Precision;
use rlx_models::{Embedder, EmbedderOptions, TokenBatch};
use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Batch sizes measured.
pub const BATCHES: [usize; 2] = [1, 64];

/// Token counts of the single-sequence rows (special tokens included; the model has 512
/// positions).
pub const SEQUENCE_TOKENS: [usize; 2] = [128, 512];

/// Sentences of everyday length (8 to 30 tokens), cycled to fill a batch.
const SENTENCES: [&str; 8] = [
    "A man is eating food.",
    "A man is riding a white horse on an enclosed ground.",
    "The new movie is awesome, everybody in the theatre loved it and wants to see it again.",
    "Two dogs are running through a field of tall green grass on a sunny afternoon.",
    "How do I compile a neural network graph once and run it many times?",
    "Sentence embeddings map text to vectors whose cosine similarity reflects meaning.",
    "It is raining.",
    "The quarterly report shows revenue grew by twelve percent while costs stayed flat.",
];

/// Options of the embed workload: the common bench options (its precision other than f32
/// also compares each device's embeddings with its own f32 ones, printing the smallest
/// cosine) and the model folder (default: the cached all-MiniLM-L6-v2).
#[derive(Clone, Debug)]
pub struct BenchEmbedOptions<'a> {
    pub common: &'a CommonArgs,
    pub model_dir: Option<PathBuf>,
}

/// One sequence of exactly `n` tokens (n ≥ 2): the tokenized sentences' words cycled between
/// the tokenizer's first and last special tokens ([CLS] and [SEP]).
fn long_sequence(emb: &Embedder, n: usize) -> Result<TokenBatch, Box<dyn std::error::Error>> {
    let text = SENTENCES.join(" ");
    let t = emb.tokenizer().batch(&[text.as_str()])?;
    let (Some(&first), Some(&last)) = (t.input_ids.first(), t.input_ids.last()) else {
        return Err("the tokenizer gave no tokens".into());
    };
    let body = &t.input_ids[1..t.input_ids.len().saturating_sub(1)];
    if body.is_empty() || n < 2 {
        return Err(format!("cannot make a sequence of {n} tokens").into());
    }
    let mut ids = vec![first];
    ids.extend(body.iter().copied().cycle().take(n - 2));
    ids.push(last);
    Ok(TokenBatch {
        batch: 1,
        seq: n,
        input_ids: ids,
        token_type_ids: vec![0; n],
        attention_mask: vec![1; n],
    })
}

/// The median time of `iters` calls of `f`, after `warmup` (at least one) untimed ones.
fn time<E>(warmup: usize, iters: usize, mut f: impl FnMut() -> Result<(), E>) -> Result<Duration, E> {
    for _ in 0..warmup.max(1) {
        f()?;
    }
    let mut times = Vec::with_capacity(iters);
    for _ in 0..iters {
        let t = Instant::now();
        f()?;
        times.push(t.elapsed());
    }
    Ok(median(times))
}

/// Runs the workload and prints a table on stdout (progress on stderr).
pub fn run(o: &BenchEmbedOptions<'_>) -> Result<(), Box<dyn std::error::Error>> {
    let dir = resolve_model_dir(o.model_dir.clone())?;
    let iters = o.common.iters.max(1);
    let mut rows = Vec::new();
    let mut sequences = Vec::new();
    let mut cosines = Vec::new();
    for &device in &o.common.devices {
        let opts =
            EmbedderOptions { batch_size: 64, precision: o.common.precision, ..EmbedderOptions::default() };
        let mut emb = match Embedder::load(&dir, device, opts) {
            Ok(e) => e,
            Err(e) => {
                eprintln!("embed on {device}: skipped ({e})");
                continue;
            }
        };
        for batch in BATCHES {
            let sentences: Vec<&str> = SENTENCES.iter().copied().cycle().take(batch).collect();
            eprintln!("embed: {device}, batch {batch}: compiling and warming up");
            let t = time(o.common.warmup, iters, || emb.embed_batch(&sentences).map(drop))?;
            let per_s = batch as f64 / t.as_secs_f64().max(1e-12);
            rows.push((emb.device().to_string(), batch, t, per_s));
        }
        for n in SEQUENCE_TOKENS {
            let tokens = long_sequence(&emb, n)?;
            eprintln!("embed: {device}, one sequence of {n} tokens: compiling and warming up");
            let t = time(o.common.warmup, iters, || emb.run_tokens(&tokens).map(drop))?;
            let per_s = n as f64 / t.as_secs_f64().max(1e-12);
            sequences.push((emb.device().to_string(), n, t, per_s));
        }
        if o.common.precision != Precision::F32 {
            let sentences: Vec<&str> = SENTENCES.to_vec();
            let reference =
                Embedder::load(&dir, device, EmbedderOptions { batch_size: 64, ..Default::default() })?
                    .embed_batch(&sentences)?;
            let got = emb.embed_batch(&sentences)?;
            let worst =
                got.iter().zip(&reference).map(|(a, b)| rlx_models::cosine(a, b)).fold(1.0f32, f32::min);
            eprintln!(
                "embed: {device}, {}: smallest cosine to its f32 embeddings {worst:.6}",
                o.common.precision
            );
            cosines.push((device.to_string(), worst));
        }
    }
    let mut out = super::stdout::stdout();
    writeln!(out, "precision {}", o.common.precision)?;
    writeln!(out, "{:<8} {:>6} {:>12} {:>14}", "device", "batch", "ms/batch", "sentences/s")?;
    for (device, batch, t, per_s) in rows {
        writeln!(out, "{device:<8} {batch:>6} {:>12.3} {per_s:>14.1}", t.as_secs_f64() * 1e3)?;
    }
    writeln!(out, "{:<8} {:>6} {:>12} {:>14}", "device", "tokens", "ms/sequence", "tokens/s")?;
    for (device, n, t, per_s) in sequences {
        writeln!(out, "{device:<8} {n:>6} {:>12.3} {per_s:>14.1}", t.as_secs_f64() * 1e3)?;
    }
    for (device, worst) in cosines {
        writeln!(out, "{device:<8} smallest cosine to f32: {worst:.6}")?;
    }
    Ok(())
}
