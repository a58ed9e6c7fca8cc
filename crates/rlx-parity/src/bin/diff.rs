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

use rlx_parity::diff::{failure_reason, failure_report, run_differential, tally_table, DiffConfig};
use rlx_parity::random_graph::GraphSpec;
use rlx_runtime::{Device, Session};
use std::process::ExitCode;
use std::time::Instant;

const USAGE: &str = "usage: diff [--devices cpu,vulkan,gpu] [--cases N] [--seed S] [--steps N] \
                     [--shrink N] [--replay FILE|SPEC]\n  \
                     --devices LIST  devices to test against the CPU reference (default: \
                     cpu,vulkan,gpu)\n  \
                     --cases N       random graphs per device (default 64)\n  \
                     --seed S        seed of the graph stream (default 12: CI's)\n  \
                     --steps N       ops per graph at most (default 12)\n  \
                     --shrink N      shrink steps per failure at most (default 256)\n  \
                     --replay X      run the specs of file X (one per line) or the spec X itself";

struct Args {
    devices: Vec<Device>,
    cfg: DiffConfig,
    replay: Option<String>,
}

fn parse(args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut out = Args {
        devices: vec![Device::Cpu, Device::Vulkan, Device::Gpu],
        cfg: DiffConfig::default(),
        replay: None,
    };
    let mut args = args.peekable();
    while let Some(a) = args.next() {
        let mut value = |what: &str| args.next().ok_or(format!("{a} needs {what}"));
        let number = |v: String| v.parse::<u64>().map_err(|e| format!("{a} {v}: {e}"));
        match a.as_str() {
            "--devices" => {
                out.devices = value("a list")?
                    .split(',')
                    .map(|d| d.parse::<Device>().map_err(|e| e.to_string()))
                    .collect::<Result<_, _>>()?;
            }
            "--cases" => out.cfg.cases = number(value("a count")?)? as usize,
            "--seed" => out.cfg.seed = number(value("a number")?)?,
            "--steps" => out.cfg.max_steps = number(value("a count")?)?.max(1) as usize,
            "--shrink" => out.cfg.max_shrink = number(value("a count")?)? as usize,
            "--replay" => out.replay = Some(value("a file or a spec")?),
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unexpected argument '{other}'")),
        }
    }
    Ok(out)
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("diff: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let open = |d: Device| Session::new(d).map_err(|e| format!("diff: cannot open {d}: {e}"));
    let sessions: Result<Vec<Session>, String> = args.devices.iter().map(|&d| open(d)).collect();
    let (sessions, cpu) = match (sessions, open(Device::Cpu)) {
        (Ok(s), Ok(c)) => (s, c),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let refs: Vec<&Session> = sessions.iter().collect();
    match &args.replay {
        Some(what) => replay(&refs, &cpu, what),
        None => random(&refs, &cpu, &args.cfg),
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
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
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
                return ExitCode::from(2);
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
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
