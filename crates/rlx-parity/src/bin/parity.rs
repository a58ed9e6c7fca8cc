//! `parity <device> [--all] [--filter TEXT] [--list] [--bench-cases] [--dump DIR]`: runs the
//! parity table on a device (cpu, gpu, vulkan, auto) against the CPU and prints the failure table
//! (every row with `--all`) and the summary line. With `--dump DIR` it instead runs each case on
//! the device alone and writes its data and outputs under DIR (see `rlx_parity::dump_case`) for
//! `scripts/check_ops_gpu_host.py`; `--bench-cases` picks the benchmark workloads instead of the
//! table. Exit status: 0 all passed (or dumped), 1 some failed, 2 bad usage or the device cannot
//! be opened. Built for machines without a Rust toolchain (the H200).

use rlx_parity::{bench_cases, cases, dump_case, run_table, Case};
use rlx_runtime::{Device, Session};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "usage: parity <cpu|gpu|vulkan|auto> [--all] [--filter TEXT] [--list] \
                     [--bench-cases] [--dump DIR]\n  \
                     --all          print every case, not only the failures\n  \
                     --filter TEXT  run only the cases whose name contains TEXT (or one of \
                     several, comma-separated)\n  \
                     --list         print the case names and exit\n  \
                     --bench-cases  the benchmark workloads instead of the parity table\n  \
                     --dump DIR     run on the device only and write each case's data and \
                     outputs under DIR";

struct Args {
    device: Option<Device>,
    all: bool,
    list: bool,
    bench: bool,
    filter: Option<String>,
    dump: Option<PathBuf>,
}

fn parse(args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut out = Args { device: None, all: false, list: false, bench: false, filter: None, dump: None };
    let mut args = args.peekable();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--all" => out.all = true,
            "--list" => out.list = true,
            "--bench-cases" => out.bench = true,
            "--dump" => out.dump = Some(args.next().ok_or("--dump needs a folder")?.into()),
            "--filter" => out.filter = Some(args.next().ok_or("--filter needs a value")?),
            "-h" | "--help" => return Err(String::new()),
            d if out.device.is_none() && !d.starts_with('-') => {
                out.device = Some(d.parse::<Device>().map_err(|e| e.to_string())?);
            }
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
                eprintln!("parity: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let mut table = if args.bench { bench_cases() } else { cases() };
    if let Some(f) = &args.filter {
        table.retain(|c| f.split(',').any(|part| c.name.contains(part)));
    }
    if args.list {
        for c in &table {
            println!("{}  (tol {:.0e})", c.name, c.tol);
        }
        println!("{} cases", table.len());
        return ExitCode::SUCCESS;
    }
    let Some(device) = args.device else {
        eprintln!("parity: no device given\n{USAGE}");
        return ExitCode::from(2);
    };
    if let Some(dir) = &args.dump {
        return dump(device, &table, dir);
    }
    let report = match run_table(device, &table) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("parity: {e}");
            return ExitCode::from(2);
        }
    };
    let total: f64 = report.rows.iter().map(|r| r.elapsed.as_secs_f64()).sum();
    if args.all || !report.failures().is_empty() {
        print!("{}", report.table(args.all));
    }
    println!("{} ({} cases in {total:.1} s)", report.summary(), report.rows.len());
    if report.failures().is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `--dump`: every case on `device` alone, its files under `dir`; a case that fails is reported
/// and the rest still run.
fn dump(device: Device, table: &[Case], dir: &Path) -> ExitCode {
    let session = match Session::new(device) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("parity: cannot open {device}: {e}");
            return ExitCode::from(2);
        }
    };
    let mut failed = 0;
    for case in table {
        match dump_case(&session, case, dir) {
            Ok(folder) => println!("dumped {}", folder.display()),
            Err(e) => {
                failed += 1;
                eprintln!("parity: {e}");
            }
        }
    }
    println!("parity {device} --dump: {} dumped, {failed} failed", table.len() - failed);
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
