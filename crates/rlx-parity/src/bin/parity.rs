//! `parity <device> [--all] [--filter TEXT] [--list] [--bench-cases] [--dump DIR]`: runs the
//! parity table on a device (cpu, gpu, vulkan, auto) against the CPU and prints the failure table
//! (every row with `--all`) and the summary line. With `--dump DIR` it instead runs each case on
//! the device alone and writes its data and outputs under DIR (see `rlx_parity::dump_case`) for
//! `scripts/check_ops_gpu_host.py`; `--bench-cases` picks the benchmark workloads instead of the
//! table. Exit status: 0 all passed (or dumped), 1 some failed, 2 bad usage or the device cannot
//! be opened. Built for machines without a Rust toolchain (the H200).

use clap::Parser;
use rlx_parity::cli::{exit_status, open, usage_error};
use rlx_parity::{bench_cases, cases, dump_case, run_table, Case};
use rlx_runtime::Device;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Runs the parity table on a device against the CPU reference.
#[derive(Parser)]
#[command(name = "parity")]
struct Args {
    /// cpu, gpu, vulkan or auto (not needed with --list)
    device: Option<Device>,
    /// Print every case, not only the failures
    #[arg(long)]
    all: bool,
    /// Run only the cases whose name contains TEXT (or one of several, comma-separated)
    #[arg(long, value_name = "TEXT")]
    filter: Option<String>,
    /// Print the case names and exit
    #[arg(long)]
    list: bool,
    /// The benchmark workloads instead of the parity table
    #[arg(long = "bench-cases")]
    bench: bool,
    /// Run on the device only and write each case's data and outputs under DIR
    #[arg(long, value_name = "DIR")]
    dump: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
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
        eprintln!("parity: no device given (cpu, gpu, vulkan or auto); see --help");
        return usage_error();
    };
    if let Some(dir) = &args.dump {
        return dump(device, &table, dir);
    }
    let report = match run_table(device, &table) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("parity: {e}");
            return usage_error();
        }
    };
    let total: f64 = report.rows.iter().map(|r| r.elapsed.as_secs_f64()).sum();
    if args.all || !report.failures().is_empty() {
        print!("{}", report.table(args.all));
    }
    println!("{} ({} cases in {total:.1} s)", report.summary(), report.rows.len());
    exit_status(report.failures().len())
}

/// `--dump`: every case on `device` alone, its files under `dir`; a case that fails is reported
/// and the rest still run.
fn dump(device: Device, table: &[Case], dir: &Path) -> ExitCode {
    let session = match open("parity", device) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return usage_error();
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
    exit_status(failed)
}
