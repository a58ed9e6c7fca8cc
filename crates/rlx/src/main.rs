//! The `rlx` command-line tool: `rlx devices`, `rlx demo` and `rlx bench`.

mod cli;

use clap::{Parser, Subcommand};
use rlx::prelude::Device;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "rlx", version, about = "rlx: compile a neural-network graph once, run it many times")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List every backend, whether it is available here, and why not.
    Devices,
    /// Build a small MLP graph, compile it, run it, and print the result.
    Demo {
        /// cpu, gpu, vulkan or auto (auto honours RLX_DEVICE).
        #[arg(long, default_value = "auto")]
        device: Device,
        /// Also print the optimized graph.
        #[arg(long)]
        dump: bool,
    },
    /// Time workloads on devices: compute and end-to-end `run` time, TFLOP/s, ratio to the CPU.
    /// Prints a table (stdout), progress (stderr), and optionally writes JSON.
    Bench {
        /// Devices to measure, in order (repeat the flag); the first one's output is the
        /// reference for the "rel err" column.
        #[arg(long = "device", default_values = ["cpu", "vulkan"])]
        devices: Vec<Device>,
        /// Write the results as JSON to this file.
        #[arg(long)]
        json: Option<std::path::PathBuf>,
        /// Timed runs per workload and device (the median is reported).
        #[arg(long, default_value_t = 10)]
        iters: usize,
        /// Timed runs of the tiny workload.
        #[arg(long, default_value_t = 1000)]
        tiny_iters: usize,
        /// Untimed runs before timing (at least one always runs).
        #[arg(long, default_value_t = 2)]
        warmup: usize,
        /// n of the n³ matmul workload.
        #[arg(long, default_value_t = 1024)]
        matmul_size: usize,
        /// Encoder layers of the bert workload (BERT-base has 12).
        #[arg(long, default_value_t = 12)]
        bert_layers: usize,
        /// Batch of the bert workload (sequence 128; input x [batch·128, 768]).
        #[arg(long, default_value_t = 8)]
        bert_batch: usize,
        /// Workloads to run (default: all).
        #[arg(value_enum)]
        workloads: Vec<cli::bench::Workload>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result: Result<(), Box<dyn std::error::Error>> = match cli.command {
        Command::Devices => {
            cli::devices::run();
            Ok(())
        }
        Command::Demo { device, dump } => cli::demo::run(device, dump).map_err(Into::into),
        Command::Bench {
            devices,
            json,
            iters,
            tiny_iters,
            warmup,
            matmul_size,
            bert_layers,
            bert_batch,
            workloads,
        } => {
            use cli::bench::{BenchOptions, Workload};
            let workloads = if workloads.is_empty() {
                vec![Workload::Tiny, Workload::Matmul, Workload::Bert]
            } else {
                workloads
            };
            let options = BenchOptions {
                devices,
                workloads,
                json,
                iters,
                tiny_iters,
                warmup,
                matmul_size,
                bert_layers,
                bert_batch,
            };
            cli::bench::run(&options)
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            let mut source = e.source();
            while let Some(s) = source {
                eprintln!("  caused by: {s}");
                source = s.source();
            }
            ExitCode::FAILURE
        }
    }
}
