//! `diff [--devices cpu,vulkan,gpu] [--cases N] [--seed S] [--steps N] [--shrink N]
//! [--replay FILE|SPEC]`: differential testing (issue 12 §2). Random well-typed graphs run
//! through each device's full pipeline (every optimizer pass on) and are compared with the CPU
//! reference run with every pass off. A failing case is shrunk to a minimal spec, printed with
//! its graph; add that line to `crates/rlx-parity/tests/diff_regressions.txt` and it runs in CI
//! from then on. `--replay` runs saved specs (a file of lines, `#` comments) instead.
//!
//! Prints one row per device (run, passed, mismatched, errors, worst err/tol) and the failures.
//! Exit status: 0 every case passed, 1 some failed, 2 bad usage or a device cannot be opened.
//! Built for machines without a Rust toolchain (the H200).

use clap::Parser;
use rlx_parity::cli::{exit_status, open, usage_error};
use rlx_parity::diff::{failure_reason, failure_report, run_differential, tally_table, DiffConfig};
use rlx_parity::random_graph::GraphSpec;
use rlx_runtime::{Device, Session};
use std::process::ExitCode;
use std::time::Instant;

/// Differential testing: random graphs on each device against the CPU reference.
#[derive(Parser)]
#[command(name = "diff")]
struct Args {
    /// Devices to test against the CPU reference
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "cpu,vulkan,gpu")]
    devices: Vec<Device>,
    #[command(flatten)]
    graphs: GraphOptions,
    /// Run the specs of file X (one per line) or the spec X itself
    #[arg(long, value_name = "X")]
    replay: Option<String>,
}

/// The random-graph stream: [`DiffConfig`]'s settings (defaults are its defaults, CI's).
#[derive(clap::Args)]
struct GraphOptions {
    /// Random graphs per device
    #[arg(long, value_name = "N", default_value_t = DiffConfig::default().cases)]
    cases: usize,
    /// Seed of the graph stream
    #[arg(long, value_name = "S", default_value_t = DiffConfig::default().seed)]
    seed: u64,
    /// Ops per graph at most
    #[arg(long, value_name = "N", default_value_t = DiffConfig::default().max_steps)]
    steps: usize,
    /// Shrink steps per failure at most
    #[arg(long, value_name = "N", default_value_t = DiffConfig::default().max_shrink)]
    shrink: usize,
}

impl GraphOptions {
    fn config(&self) -> DiffConfig {
        DiffConfig {
            cases: self.cases,
            seed: self.seed,
            max_steps: self.steps.max(1),
            max_shrink: self.shrink,
            ..DiffConfig::default()
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let sessions: Result<Vec<Session>, String> = args.devices.iter().map(|&d| open("diff", d)).collect();
    let (sessions, cpu) = match (sessions, open("diff", Device::Cpu)) {
        (Ok(s), Ok(c)) => (s, c),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("{e}");
            return usage_error();
        }
    };
    let refs: Vec<&Session> = sessions.iter().collect();
    match &args.replay {
        Some(what) => replay(&refs, &cpu, what),
        None => random(&refs, &cpu, &args.graphs.config()),
    }
}

fn random(devices: &[&Session], cpu: &Session, cfg: &DiffConfig) -> ExitCode {
    let t = Instant::now();
    let tallies = run_differential(devices, cpu, cfg);
    print!("{}", failure_report(&tallies));
    print!("{}", tally_table(&tallies));
    let failed: usize = tallies.iter().map(|t| t.failed()).sum();
    println!(
        "diff: {} cases x {} devices, seed {}, up to {} steps: {failed} failed ({:.1} s)",
        cfg.cases,
        devices.len(),
        cfg.seed,
        cfg.max_steps,
        t.elapsed().as_secs_f64()
    );
    exit_status(failed)
}

fn replay(devices: &[&Session], cpu: &Session, what: &str) -> ExitCode {
    let text = std::fs::read_to_string(what).unwrap_or_else(|_| what.to_string());
    let mut failed = 0;
    let mut run = 0;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let spec = match GraphSpec::parse(line) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("diff: {e}");
                return usage_error();
            }
        };
        for dev in devices {
            run += 1;
            match failure_reason(dev, cpu, &spec) {
                None => println!("ok   {} {spec}", dev.device()),
                Some(why) => {
                    failed += 1;
                    println!("FAIL {} {spec}: {why}", dev.device());
                }
            }
        }
    }
    println!("diff --replay: {run} runs, {failed} failed");
    exit_status(failed)
}
