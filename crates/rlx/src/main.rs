//! The `rlx` command-line tool: `rlx devices` and `rlx demo`.

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Devices => {
            cli::devices::run();
            Ok(())
        }
        Command::Demo { device, dump } => cli::demo::run(device, dump),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                eprintln!("  caused by: {s}");
                source = s.source();
            }
            ExitCode::FAILURE
        }
    }
}
