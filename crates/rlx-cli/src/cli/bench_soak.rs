//! `rlx bench soak`: many runs of one workload on each device, with memory readings, and the
//! same workload from several threads (issue 12 §3).
//!
//! Per device and workload: compile once, run once for the reference output, warm up, then
//! run `--runs` times in all, checking every output against the reference bit for bit.
//! Readings after warm-up, at the middle and at the end: resident memory (VmRSS of
//! /proc/self/status) and the device's live objects and buffer bytes
//! (`Session::live_objects`, counted by the drivers). It fails (non-zero exit) when resident
//! memory or device bytes grow by more than 1% from the first reading to the last, when the
//! live object count grows at all, or when any output differs.
//!
//! Then threads (`--threads N`): N sessions in N threads; for graphs also one session shared
//! by N threads, each compiling its own executable (`Session` is `Sync`); and one executable
//! (or embedder) shared by N threads behind a mutex (`Executable::run` takes `&mut self`, so
//! the API serializes runs of one executable: it is `Send`, not `Sync`). Every output of every
//! thread must equal the single-threaded reference bit for bit.

use super::bench_args::SoakArgs;
use super::fetch::resolve_model_dir;
use rlx::prelude::Device;
use rlx::runtime::{Executable, LiveObjects, Session};
use rlx_models::{BertConfig, Embedder, EmbedderOptions};
use rlx_parity::{Built, CaseCtx};
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// The soak workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SoakWorkload {
    /// One BERT encoder layer of MiniLM's shape (hidden 384, 12 heads, FFN 1536) on x [seq, 384]
    /// (--soak-seq, default 128).
    BertLayer,
    /// all-MiniLM-L6-v2 `embed_batch` of 1 sentence.
    #[value(name = "embed-b1")]
    Embed1,
    /// all-MiniLM-L6-v2 `embed_batch` of 64 sentences.
    #[value(name = "embed-b64")]
    Embed64,
}

impl SoakWorkload {
    fn name(self) -> &'static str {
        match self {
            SoakWorkload::BertLayer => "bert-layer",
            SoakWorkload::Embed1 => "embed-b1",
            SoakWorkload::Embed64 => "embed-b64",
        }
    }
}

/// Options of the soak workload: the devices, the runs and thread checks
/// ([`SoakArgs`]) and the model folder (default: the cached all-MiniLM-L6-v2).
#[derive(Clone, Debug)]
pub struct SoakOptions {
    pub devices: Vec<Device>,
    pub args: SoakArgs,
    pub model_dir: Option<PathBuf>,
}

const SENTENCES: [&str; 4] = [
    "A man is eating food.",
    "Two dogs are running through a field of tall green grass on a sunny afternoon.",
    "It is raining.",
    "Sentence embeddings map text to vectors whose cosine similarity reflects meaning.",
];

/// The BERT-layer graph with seeded data (the same on every device and thread).
pub fn bert_layer(seq: usize) -> Res<Built> {
    let seq = seq.max(1);
    let cfg = BertConfig {
        num_hidden_layers: 1,
        hidden_size: 384,
        num_attention_heads: 12,
        intermediate_size: 1536,
        ..BertConfig::base()
    };
    let mut c = CaseCtx::new("soak_bert_layer");
    let x = c.input_f32("x", &[seq, cfg.hidden_size], -1.0, 1.0)?;
    let out = rlx_models::encoder_layers(&mut c, &cfg, x, None, 1, seq)?;
    c.fill_params(rlx_parity::trained_like)?;
    Ok(c.finish(&[out])?)
}

/// A workload ready to run on one device.
enum Runner {
    Graph { session: Box<Session>, exe: Box<Executable>, built: Box<Built> },
    Embed { emb: Box<Embedder>, batch: usize },
}

fn sentences(batch: usize) -> Vec<&'static str> {
    SENTENCES.iter().copied().cycle().take(batch).collect()
}

/// Every output as f32 bits, concatenated: what "bit for bit" compares.
fn bits(outs: &[Vec<f32>]) -> Vec<u32> {
    outs.iter().flatten().map(|x| x.to_bits()).collect()
}

fn run_graph(exe: &mut Executable, built: &Built) -> Res<Vec<u32>> {
    let outs = exe.run(&built.feeds())?;
    let outs: Vec<Vec<f32>> =
        outs.iter().map(|t| t.data().to_f64_vec().iter().map(|&x| x as f32).collect()).collect();
    Ok(bits(&outs))
}

impl Runner {
    fn new(device: Device, w: SoakWorkload, o: &SoakOptions) -> Res<Runner> {
        match w {
            SoakWorkload::BertLayer => {
                let built = bert_layer(o.args.seq)?;
                let session = Session::new(device)?;
                let exe = built.compile(&session)?;
                Ok(Runner::Graph { session: Box::new(session), exe: Box::new(exe), built: Box::new(built) })
            }
            SoakWorkload::Embed1 | SoakWorkload::Embed64 => {
                let batch = if w == SoakWorkload::Embed1 { 1 } else { 64 };
                let opts = EmbedderOptions { batch_size: 64, ..EmbedderOptions::default() };
                Ok(Runner::Embed {
                    emb: Box::new(Embedder::load(&model_dir(&o.model_dir)?, device, opts)?),
                    batch,
                })
            }
        }
    }

    fn run(&mut self) -> Res<Vec<u32>> {
        match self {
            Runner::Graph { exe, built, .. } => run_graph(exe, built),
            Runner::Embed { emb, batch } => Ok(bits(&emb.embed_batch(&sentences(*batch))?)),
        }
    }

    fn live(&self) -> Option<LiveObjects> {
        match self {
            Runner::Graph { session, .. } => session.live_objects(),
            Runner::Embed { emb, .. } => emb.session().live_objects(),
        }
    }
}

fn model_dir(dir: &Option<PathBuf>) -> Res<PathBuf> {
    Ok(resolve_model_dir(dir.clone())?)
}

/// Resident memory of this process in bytes (Linux), `None` elsewhere.
pub fn rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[derive(Clone, Copy, Debug)]
pub struct Reading {
    pub rss: Option<u64>,
    pub live: Option<LiveObjects>,
}

/// One soak's outcome.
#[derive(Debug)]
pub struct SoakRow {
    pub device: String,
    pub workload: &'static str,
    pub runs: usize,
    pub seconds: f64,
    /// After warm-up, middle, last.
    pub readings: [Reading; 3],
    pub mismatches: usize,
}

fn growth(first: Option<u64>, last: Option<u64>) -> Option<f64> {
    let (f, l) = (first? as f64, last? as f64);
    Some(if f == 0.0 { l } else { (l - f) / f * 100.0 })
}

impl SoakRow {
    pub fn rss_growth(&self) -> Option<f64> {
        growth(self.readings[0].rss, self.readings[2].rss)
    }
    pub fn device_growth(&self) -> Option<f64> {
        let b = |r: &Reading| r.live.map(|l| l.buffer_bytes.max(0) as u64);
        growth(b(&self.readings[0]), b(&self.readings[2]))
    }
    /// Why the row fails, if it does.
    pub fn problems(&self) -> Vec<String> {
        let mut p = Vec::new();
        if let Some(g) = self.rss_growth().filter(|&g| g > 1.0) {
            p.push(format!("resident memory grew {g:.2}%"));
        }
        if let Some(g) = self.device_growth().filter(|&g| g > 1.0) {
            p.push(format!("device memory grew {g:.2}%"));
        }
        if let (Some(a), Some(b)) = (self.readings[0].live, self.readings[2].live) {
            if b.objects() > a.objects() {
                p.push(format!("live objects grew from {} to {}", a.objects(), b.objects()));
            }
        }
        if self.mismatches > 0 {
            p.push(format!("{} runs differ from the first", self.mismatches));
        }
        p
    }
}

/// Soaks workload `w` on `device` for `runs` runs (at least 3).
pub fn soak(device: Device, w: SoakWorkload, o: &SoakOptions) -> Res<(SoakRow, Vec<u32>)> {
    let runs = o.args.runs.max(3);
    let mut r = Runner::new(device, w, o)?;
    let reference = r.run()?;
    let warmup = (runs / 20).clamp(1, 200);
    let middle = warmup + (runs - warmup) / 2;
    let read = |r: &Runner| Reading { rss: rss_bytes(), live: r.live() };
    let mut readings = [read(&r); 3];
    let (mut mismatches, t) = (0, Instant::now());
    for i in 1..runs {
        if r.run()? != reference {
            mismatches += 1;
        }
        let done = i + 1;
        if done == warmup {
            readings[0] = read(&r);
        } else if done == middle {
            readings[1] = read(&r);
        }
        if done % 1000 == 0 {
            eprintln!("soak {device} {}: {done}/{runs}", w.name());
        }
    }
    readings[2] = read(&r);
    let row = SoakRow {
        device: device.to_string(),
        workload: w.name(),
        runs,
        seconds: t.elapsed().as_secs_f64(),
        readings,
        mismatches,
    };
    Ok((row, reference))
}

/// One thread check's outcome.
#[derive(Debug)]
pub struct ThreadRow {
    pub device: String,
    pub workload: &'static str,
    pub mode: &'static str,
    pub threads: usize,
    pub runs: usize,
    pub differing: usize,
    pub error: Option<String>,
}

fn tally<F>(threads: usize, reference: &[u32], body: F) -> (usize, usize, Option<String>)
where
    F: Fn(usize) -> Res<Vec<Vec<u32>>> + Sync,
{
    let results: Vec<Res<Vec<Vec<u32>>>> = std::thread::scope(|s| {
        let body = &body;
        let handles: Vec<_> = (0..threads).map(|i| s.spawn(move || body(i))).collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a thread panicked".into()))).collect()
    });
    let (mut runs, mut differing, mut error) = (0, 0, None);
    for r in results {
        match r {
            Ok(outs) => {
                runs += outs.len();
                differing += outs.iter().filter(|o| o.as_slice() != reference).count();
            }
            Err(e) => error = Some(e.to_string()),
        }
    }
    (runs, differing, error)
}

/// The thread checks of `w` on `device` against the single-threaded `reference`.
pub fn threads(o: &SoakOptions, device: Device, w: SoakWorkload, reference: &[u32]) -> Vec<ThreadRow> {
    let n = o.args.threads.max(1);
    let k = o.args.thread_runs.max(1);
    let row = |mode, (runs, differing, error): (usize, usize, Option<String>)| ThreadRow {
        device: device.to_string(),
        workload: w.name(),
        mode,
        threads: n,
        runs,
        differing,
        error,
    };
    // Progress on stderr: a thread check that stops making progress shows which mode it is in.
    let announce = |mode: &str| eprintln!("soak {device} {}: {n} threads x {k} runs, {mode}", w.name());
    let repeat = |r: &mut Runner| (0..k).map(|_| r.run()).collect::<Res<Vec<_>>>();
    announce("session per thread");
    let mut rows =
        vec![row("session per thread", tally(n, reference, |_| repeat(&mut Runner::new(device, w, o)?)))];
    if w == SoakWorkload::BertLayer {
        announce("one session, N executables");
        let shared = bert_layer(o.args.seq).and_then(|b| Ok((Session::new(device)?, b)));
        rows.push(row(
            "one session, N executables",
            match &shared {
                Ok((session, built)) => tally(n, reference, |_| {
                    let mut exe = built.compile(session)?;
                    (0..k).map(|_| run_graph(&mut exe, built)).collect()
                }),
                Err(e) => (0, 0, Some(e.to_string())),
            },
        ));
    }
    announce("one executable, mutex");
    let one = Runner::new(device, w, o).map(Mutex::new);
    rows.push(row(
        "one executable, mutex",
        match &one {
            Ok(m) => tally(n, reference, |_| {
                (0..k)
                    .map(|_| m.lock().map_err(|_| "a thread panicked holding the executable")?.run())
                    .collect()
            }),
            Err(e) => (0, 0, Some(e.to_string())),
        },
    ));
    rows
}

fn mib(b: Option<u64>) -> String {
    b.map_or("n/a".into(), |b| format!("{:.1}", b as f64 / (1 << 20) as f64))
}

fn pct(g: Option<f64>) -> String {
    g.map_or("n/a".into(), |g| format!("{g:+.2}%"))
}

/// Runs every soak and thread check, prints the tables; `Err` when any fails.
pub fn run(o: &SoakOptions) -> Result<(), Box<dyn std::error::Error>> {
    let (mut rows, mut trows, mut errors) = (Vec::new(), Vec::new(), Vec::new());
    for &device in &o.devices {
        for &w in &o.args.soak {
            eprintln!("soak {device} {}: {} runs", w.name(), o.args.runs);
            match soak(device, w, o) {
                Ok((row, reference)) => {
                    rows.push(row);
                    if o.args.threads > 0 {
                        trows.extend(threads(o, device, w, &reference));
                    }
                }
                Err(e) => errors.push(format!("{device} {}: {e}", w.name())),
            }
        }
    }
    let mut out = super::stdout::stdout();
    writeln!(
        out,
        "{:<7} {:<10} {:>6} {:>8}  {:>23} {:>8}  {:>26} {:>8}  {:>14}  status",
        "device",
        "workload",
        "runs",
        "ms/run",
        "RSS MiB first/mid/last",
        "growth",
        "device MiB first/mid/last",
        "growth",
        "objects f/m/l"
    )?;
    let mut failed = !errors.is_empty();
    for r in &rows {
        let [a, b, c] = &r.readings;
        let dev = |x: &Reading| mib(x.live.map(|l| l.buffer_bytes.max(0) as u64));
        let obj = |x: &Reading| x.live.map_or("n/a".into(), |l| l.objects().to_string());
        let problems = r.problems();
        failed |= !problems.is_empty();
        writeln!(
            out,
            "{:<7} {:<10} {:>6} {:>8.3}  {:>23} {:>8}  {:>26} {:>8}  {:>14}  {}",
            r.device,
            r.workload,
            r.runs,
            r.seconds * 1e3 / r.runs as f64,
            format!("{}/{}/{}", mib(a.rss), mib(b.rss), mib(c.rss)),
            pct(r.rss_growth()),
            format!("{}/{}/{}", dev(a), dev(b), dev(c)),
            pct(r.device_growth()),
            format!("{}/{}/{}", obj(a), obj(b), obj(c)),
            if problems.is_empty() { "ok".to_string() } else { problems.join("; ") }
        )?;
    }
    if !trows.is_empty() {
        writeln!(
            out,
            "{:<7} {:<10} {:<27} {:>7} {:>6} {:>9}  status",
            "device", "workload", "threads", "N", "runs", "differing"
        )?;
        for t in &trows {
            let ok = t.error.is_none() && t.differing == 0 && t.runs == t.threads * o.args.thread_runs.max(1);
            failed |= !ok;
            let status = t.error.clone().unwrap_or_else(|| if ok { "ok".into() } else { "DIFFERS".into() });
            writeln!(
                out,
                "{:<7} {:<10} {:<27} {:>7} {:>6} {:>9}  {status}",
                t.device, t.workload, t.mode, t.threads, t.runs, t.differing
            )?;
        }
    }
    for e in &errors {
        writeln!(out, "error: {e}")?;
    }
    if failed {
        Err("soak: some checks failed (see the status column)".into())
    } else {
        Ok(())
    }
}
