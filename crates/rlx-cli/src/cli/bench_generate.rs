//! `rlx bench generate`: a random-init decoder LLM of a real shape (`--decoder`) generating
//! over the device-resident KV cache, batch 1: prefill tokens/s for a prompt of
//! `--prefill-tokens` (time to the first token: the prompt through the cache in one chunk, and
//! the first token read back) and decode tokens/s over `--decode-tokens` greedy steps (each one
//! uploads a token id and its position, reads back one token). A first, untimed generation
//! compiles the graphs and warms the device; each figure is the median over `--iters`
//! generations.

use super::bench::{median, progress};
use super::bench_args::{CommonArgs, DecoderArgs};
use rlx::prelude::{Device, Session};
use rlx_models::decoder::{Decoder, DecoderOptions};
use std::io::Write as _;
use std::time::{Duration, Instant};

/// Options of the generate workload.
#[derive(Clone, Debug)]
pub struct BenchGenerateOptions<'a> {
    pub common: &'a CommonArgs,
    pub decoder: &'a DecoderArgs,
    /// Store every matrix whose rows are whole blocks of this format quantized (`--quant`).
    pub quant: Option<rlx::ir::QuantType>,
}

/// One device's figures.
struct Row {
    device: String,
    load: Duration,
    first: Duration,
    prefill: Duration,
    decode_step: Duration,
    tokens: Vec<i32>,
}

fn measure(o: &BenchGenerateOptions<'_>, device: Device) -> Result<Row, Box<dyn std::error::Error>> {
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
    let mut dec = match o.quant {
        Some(q) => Decoder::random_quantized(session, cfg, opts, 7, q)?,
        None => Decoder::random(session, cfg, opts, 7)?,
    };
    let load = t.elapsed();
    // Token ids spread over the vocabulary (the values do not change the work).
    let prompt: Vec<i32> = (0..o.decoder.prefill_tokens as i32).map(|i| (i * 7919 + 11) % vocab).collect();
    let n = o.decoder.decode_tokens.max(2);
    let t = Instant::now();
    let tokens = dec.generate(&prompt, n, |_| true)?;
    let first = t.elapsed();
    progress(&format!(
        "generate {} on {device}: loaded in {:.1} s, first generation (compile + run) {:.1} s",
        o.decoder.shape.name(),
        load.as_secs_f64(),
        first.as_secs_f64()
    ));
    print_kernel_times(&format!("decode step on {device}"), &dec.decode_kernel_times());
    let (mut prefill, mut step) = (Vec::new(), Vec::new());
    for _ in 0..o.common.iters.max(1) {
        let start = Instant::now();
        let mut first_at = None;
        let again = dec.generate(&prompt, n, |_| {
            first_at.get_or_insert_with(|| start.elapsed());
            true
        })?;
        let total = start.elapsed();
        let first_at = first_at.unwrap_or(total);
        if again != tokens {
            return Err(format!("{device}: a repeated greedy generation gave other tokens").into());
        }
        prefill.push(first_at);
        step.push((total - first_at) / (n as u32 - 1));
    }
    Ok(Row {
        device: device.to_string(),
        load,
        first,
        prefill: median(prefill),
        decode_step: median(step),
        tokens,
    })
}

/// The "same tokens" column: `yes` when `tokens` equal the first device's, else how many
/// leading tokens agree (`-` without a reference).
pub fn same_tokens(reference: Option<&[i32]>, tokens: &[i32]) -> String {
    match reference {
        Some(t) if t == tokens => "yes".to_string(),
        Some(t) => {
            let agree = t.iter().zip(tokens).take_while(|(a, b)| a == b).count();
            format!("first {agree}")
        }
        None => "-".into(),
    }
}

/// With `RLX_PROFILE=1`: the GPU time of a run by kernel, largest first (to stderr).
pub fn print_kernel_times(what: &str, times: &[(&'static str, Duration)]) {
    if times.is_empty() {
        return;
    }
    let mut by: Vec<(&str, Duration, usize)> = Vec::new();
    for &(name, t) in times {
        match by.iter_mut().find(|(n, _, _)| *n == name) {
            Some(e) => {
                e.1 += t;
                e.2 += 1;
            }
            None => by.push((name, t, 1)),
        }
    }
    by.sort_by_key(|e| std::cmp::Reverse(e.1));
    let total: Duration = times.iter().map(|(_, t)| *t).sum();
    progress(&format!("{what}: {} launches, {:.3} ms of GPU time", times.len(), total.as_secs_f64() * 1e3));
    for (name, t, n) in by.iter().take(16) {
        progress(&format!("  {:>8.3} ms {n:>5} × {name}", t.as_secs_f64() * 1e3));
    }
}

pub fn run(o: &BenchGenerateOptions<'_>) -> Result<(), Box<dyn std::error::Error>> {
    let mut rows = Vec::new();
    for &d in &o.common.devices {
        match measure(o, d) {
            Ok(r) => rows.push(r),
            Err(e) => progress(&format!("generate on {d}: skipped: {e}")),
        }
    }
    let mut out = super::stdout::stdout();
    writeln!(
        out,
        "{:<34} {:<8} {:>9} {:>11} {:>14} {:>12} {:>13}  same tokens",
        "workload", "device", "load s", "prefill ms", "prefill tok/s", "decode ms", "decode tok/s"
    )?;
    let reference = rows.first().map(|r| r.tokens.clone());
    for r in &rows {
        let quant = o.quant.map_or(String::new(), |q| format!(" {q}"));
        let label = format!(
            "generate {} {}+{} {}{quant}",
            o.decoder.shape.name(),
            o.decoder.prefill_tokens,
            o.decoder.decode_tokens,
            o.common.precision
        );
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let same = same_tokens(reference.as_deref(), &r.tokens);
        writeln!(
            out,
            "{label:<34} {:<8} {:>9.1} {:>11.2} {:>14.0} {:>12.3} {:>13.1}  {same}",
            r.device,
            r.load.as_secs_f64() + r.first.as_secs_f64(),
            ms(r.prefill),
            o.decoder.prefill_tokens as f64 / r.prefill.as_secs_f64().max(1e-12),
            ms(r.decode_step),
            1.0 / r.decode_step.as_secs_f64().max(1e-12),
        )?;
    }
    Ok(())
}
