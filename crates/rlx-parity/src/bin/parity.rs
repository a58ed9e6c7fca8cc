//! `parity <device> [--all] [--filter TEXT] [--list]`: runs the parity table on a device (cpu,
//! gpu, vulkan, auto) against the CPU and prints the failure table (every row with `--all`) and
//! the summary line. Exit status: 0 all passed, 1 some failed, 2 bad usage or the
//! device cannot be opened. Built for machines without a Rust toolchain (the H100).

use rlx_parity::{cases, run_table};
use rlx_runtime::Device;
use std::process::ExitCode;

const USAGE: &str = "usage: parity <cpu|gpu|vulkan|auto> [--all] [--filter TEXT] [--list]\n  \
                     --all          print every case, not only the failures\n  \
                     --filter TEXT  run only the cases whose name contains TEXT\n  \
                     --list         print the case names and exit";

struct Args {
    device: Option<Device>,
    all: bool,
    list: bool,
    filter: Option<String>,
}

fn parse(args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut out = Args { device: None, all: false, list: false, filter: None };
    let mut args = args.peekable();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--all" => out.all = true,
            "--list" => out.list = true,
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
    let mut table = cases();
    if let Some(f) = &args.filter {
        table.retain(|c| c.name.contains(f.as_str()));
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
