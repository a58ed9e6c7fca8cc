//! `rlx bench generate --streams N` (N > 1): N sequences of the bench prompt decoded together
//! by one [`BatchDecoder`] (one compiled batched step, one cache slot per stream). A round adds
//! the N sequences one after the other (each add is one prefill and gives that stream's first
//! token), or with `--join enqueue` enqueues them all (their prompts go into the cache together,
//! a chunk per mixed step), then steps the batch until every stream has its `--decode-tokens`. Reported, each
//! the median over `--iters` rounds after an untimed first one (compile and warm-up):
//!
//! - time to first token: from the start of the round to a stream's first token, averaged over
//!   the streams (with `add`, stream i waits for the i prefills before its own);
//! - per-stream decode tokens/s: one token per stream per step, so 1 / step time (the median
//!   over the steps that carry no prompt);
//! - aggregate decode tokens/s: N / step time;
//! - aggregate end-to-end tokens/s: all N · decode-tokens new tokens over the round's time.
//!
//! Every stream holds the same prompt, so every stream must give the same tokens: a stream
//! that does not is an error, as is a round that differs from the first.

use super::bench::{median, progress};
use super::bench_args::Join;
use super::bench_generate::BenchGenerateOptions;
use rlx::prelude::{Device, Session};
use rlx_models::decoder::{Decoder, DecoderOptions};
use rlx_models::{BatchDecoder, SeqParams};
use std::collections::BTreeMap;
use std::io::Write as _;
use std::time::{Duration, Instant};

/// One device's figures.
struct Row {
    device: String,
    load: Duration,
    first: Duration,
    ttft: Duration,
    step: Duration,
    round: Duration,
    tokens: Vec<i32>,
}

/// What one round measured.
struct Round {
    /// The streams' tokens (all equal, checked).
    tokens: Vec<i32>,
    /// Mean time to first token.
    ttft: Duration,
    /// Median step.
    step: Duration,
    /// The round's wall time.
    total: Duration,
}

/// One round: every stream added, then stepped to its end.
fn round(
    b: &mut BatchDecoder,
    prompt: &[i32],
    (streams, join): (usize, Join),
    n: usize,
) -> Result<Round, Box<dyn std::error::Error>> {
    let start = Instant::now();
    let mut tokens = BTreeMap::new();
    let mut ttft = Duration::ZERO;
    for _ in 0..streams {
        match join {
            Join::Add => {
                let t = b.add(prompt, SeqParams::greedy(n))?;
                ttft += start.elapsed();
                tokens.insert(t.id, vec![t.token?]);
            }
            Join::Enqueue => {
                b.enqueue(prompt, SeqParams::greedy(n))?;
            }
        }
    }
    let mut steps = Vec::new();
    while b.active() > 0 {
        let s = Instant::now();
        let prompt_left = b.pending_tokens() > 0;
        let events = b.step()?;
        if !prompt_left {
            steps.push(s.elapsed());
        }
        for e in events {
            let t = tokens.entry(e.id).or_insert_with(Vec::new);
            if t.is_empty() {
                ttft += start.elapsed();
            }
            t.push(e.token?);
        }
    }
    let total = start.elapsed();
    let mut all = tokens.into_values();
    let first = all.next().unwrap_or_default();
    if all.any(|t| t != first) {
        return Err("streams of the same prompt gave different tokens".into());
    }
    Ok(Round { tokens: first, ttft: ttft / streams.max(1) as u32, step: median(steps), total })
}

fn measure(
    o: &BenchGenerateOptions<'_>,
    device: Device,
    streams: usize,
) -> Result<Row, Box<dyn std::error::Error>> {
    let cfg = o.decoder.shape.config()?;
    let vocab = cfg.vocab_size as i32;
    let t = Instant::now();
    let opts = DecoderOptions {
        precision: o.common.precision,
        prefill_chunk: o.decoder.prefill_tokens.max(1),
        kv_cache: o.decoder.kv_cache,
        ..Default::default()
    };
    let session = Session::new(device)?;
    let dec = match o.quant {
        Some(q) => Decoder::random_quantized(session, cfg, opts, 7, q)?,
        None => Decoder::random(session, cfg, opts, 7)?,
    };
    // Token ids spread over the vocabulary, as the one-stream workload's.
    let prompt: Vec<i32> = (0..o.decoder.prefill_tokens as i32).map(|i| (i * 7919 + 11) % vocab).collect();
    let n = o.decoder.decode_tokens.max(2);
    let capacity = dec.capacity_for(prompt.len() + n - 1);
    let mut b = BatchDecoder::new(&dec, streams, capacity)?;
    let load = t.elapsed();
    let t = Instant::now();
    let join = o.decoder.join;
    let tokens = round(&mut b, &prompt, (streams, join), n)?.tokens;
    let first = t.elapsed();
    progress(&format!(
        "generate {} × {streams} streams on {device}: loaded and compiled in {:.1} s, first round {:.1} s",
        o.decoder.shape.name(),
        load.as_secs_f64(),
        first.as_secs_f64()
    ));
    super::bench_generate::print_kernel_times(
        &format!("batched step of {streams} on {device}"),
        &b.step_kernel_times(),
    );
    let (mut ttft, mut step, mut total) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..o.common.iters.max(1) {
        let r = round(&mut b, &prompt, (streams, join), n)?;
        if r.tokens != tokens {
            return Err(format!("{device}: a repeated round gave other tokens").into());
        }
        ttft.push(r.ttft);
        step.push(r.step);
        total.push(r.total);
    }
    Ok(Row {
        device: device.to_string(),
        load,
        first,
        ttft: median(ttft),
        step: median(step),
        round: median(total),
        tokens,
    })
}

/// The table of `--streams N` (N > 1); see the module doc.
pub fn run(o: &BenchGenerateOptions<'_>, streams: usize) -> Result<(), Box<dyn std::error::Error>> {
    let mut rows = Vec::new();
    for &d in &o.common.devices {
        match measure(o, d, streams) {
            Ok(r) => rows.push(r),
            Err(e) => progress(&format!("generate × {streams} streams on {d}: skipped: {e}")),
        }
    }
    let mut out = super::stdout::stdout();
    writeln!(
        out,
        "{:<40} {:<8} {:>9} {:>9} {:>10} {:>15} {:>15} {:>15}  same tokens",
        "workload", "device", "load s", "ttft ms", "step ms", "stream tok/s", "decode tok/s", "end-to-end/s"
    )?;
    let reference = rows.first().map(|r| r.tokens.clone());
    let n = o.decoder.decode_tokens.max(2);
    for r in &rows {
        let quant = o.quant.map_or(String::new(), |q| format!(" {q}"));
        let join = match o.decoder.join {
            Join::Add => "",
            Join::Enqueue => " enqueued",
        };
        let label = format!(
            "generate {} {}+{} ×{streams} {}{quant}{join}",
            o.decoder.shape.name(),
            o.decoder.prefill_tokens,
            n,
            o.common.precision
        );
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let per_s = |count: f64, d: Duration| count / d.as_secs_f64().max(1e-12);
        let same = super::bench_generate::same_tokens(reference.as_deref(), &r.tokens);
        writeln!(
            out,
            "{label:<40} {:<8} {:>9.1} {:>9.2} {:>10.3} {:>15.1} {:>15.1} {:>15.1}  {same}",
            r.device,
            r.load.as_secs_f64() + r.first.as_secs_f64(),
            ms(r.ttft),
            ms(r.step),
            per_s(1.0, r.step),
            per_s(streams as f64, r.step),
            per_s((streams * n) as f64, r.round),
        )?;
    }
    Ok(())
}
