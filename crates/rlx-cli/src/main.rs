//! The `rlx` command-line tool: `rlx devices` (backends and calibration), `rlx demo` (a small
//! graph end to end), `rlx bench` (timings), sentence embeddings with `rlx embed` and
//! `rlx similarity`, causal language models (decoder LLMs from safetensors or GGUF, Qwen3-MoE
//! included, and Mamba-1) with `rlx generate` and `rlx logits`, the OpenAI-compatible server
//! `rlx serve`, fine-tuning with `rlx train`, and the model cache with `rlx fetch` and `rlx models`. Results go to stdout
//! through a checked writer; progress and statistics go to stderr.

mod cli;

use clap::{Parser, Subcommand};
use rlx::prelude::{Device, Precision};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "rlx", version, about = "rlx: compile a neural-network graph once, run it many times")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Where a model runs and at what precision: the options every model command shares.
#[derive(clap::Args)]
pub struct Target {
    /// cpu, gpu, vulkan or auto (auto honours RLX_DEVICE).
    #[arg(long, default_value = "auto")]
    device: Device,
    /// f32 (f32 math), mixed (matmul operands rounded to f16 for tensor cores) or f16
    /// (also f16 weights on the device).
    #[arg(long, default_value = "f32")]
    precision: Precision,
}

#[derive(Subcommand)]
enum Command {
    /// List every backend, whether it is available here, and why not, with its calibration.
    Devices {
        /// Measure every available device again (matmul rate, bandwidth, dispatch cost) and
        /// update the calibration cache that Device::Auto ranks by.
        #[arg(long)]
        calibrate: bool,
    },
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
    Bench(cli::bench_args::BenchArgs),
    /// Download a model into the cache (does nothing when it is there): all-minilm-l6-v2, or a
    /// Hugging Face hub repo (owner/name; owner/name-GGUF:Q4_K_M for one GGUF file) into the
    /// hub's cache (HF_HOME, HF_ENDPOINT and HF_TOKEN are honoured). Prints the model's path.
    Fetch {
        /// The model to fetch.
        #[arg(default_value = rlx_models::DEFAULT_MODEL)]
        model: String,
        /// A hub repo's branch, tag or commit (default main).
        #[arg(long)]
        revision: Option<String>,
        /// Download nothing: re-check the cached model's files against their recorded sizes
        /// and hashes and say what is wrong (a non-zero exit when anything is).
        #[arg(long)]
        verify: bool,
    },
    /// List the cached models (rlx's own and the Hugging Face hub cache's) with revision, size
    /// and path, or remove one.
    Models {
        /// Remove this model from the cache (a built-in name, or owner/name: every revision).
        #[arg(long, value_name = "NAME")]
        remove: Option<String>,
    },
    /// Sentence embeddings (all-MiniLM-L6-v2): one L2-normalised vector per sentence on stdout.
    Embed {
        #[command(flatten)]
        target: Target,
        /// json: one array of arrays; text: one line of values per sentence.
        #[arg(long, value_enum, default_value = "json")]
        format: cli::embed::Format,
        /// Sentences per model run.
        #[arg(long, default_value_t = 32)]
        batch: usize,
        /// A folder with config.json, model.safetensors and tokenizer.json, or a model name:
        /// all-minilm-l6-v2 or a hub repo (owner/name), fetched when missing (default: the
        /// cached all-minilm-l6-v2). `--model-dir` is the same option.
        #[arg(long = "model", visible_alias = "model-dir", value_name = "MODEL")]
        model_dir: Option<std::path::PathBuf>,
        /// A hub model's branch, tag or commit (default main).
        #[arg(long)]
        revision: Option<String>,
        /// Read sentences from this file, one per line (`-` for stdin), before the arguments.
        #[arg(long)]
        file: Option<std::path::PathBuf>,
        /// Sentences to embed.
        sentences: Vec<String>,
    },
    /// Continue a prompt with a causal LM, streaming the text (or token ids) to stdout; stats go
    /// to stderr.
    ///
    /// Models: a Hugging Face checkpoint folder (Llama, Qwen2, Qwen3, Qwen3-MoE mixture of
    /// experts, Mistral; Mamba-1) or a GGUF file (recognised by its magic number; F32, F16,
    /// BF16 and llama.cpp's block-quantized types). Each token is greedy (the argmax) or
    /// sampled (temperature, top-k, top-p, repetition penalty, seeded): the checkpoint's
    /// generation_config.json decides as transformers does unless the flags say otherwise; a
    /// GGUF file is greedy unless --temperature is given.
    Generate(cli::generate::GenerateOptions),
    /// Write a causal LM's logits over a prompt (one forward pass) as raw little-endian f32
    /// [tokens, vocabulary], for comparisons with another implementation; a NaN or infinity
    /// is an error and nothing is written.
    Logits {
        /// The checkpoint folder or .gguf file, or a hub name, as for `rlx generate`.
        #[arg(long)]
        model: std::path::PathBuf,
        /// A hub model's branch, tag or commit (default main).
        #[arg(long)]
        revision: Option<String>,
        #[command(flatten)]
        target: Target,
        /// The prompt as comma-separated token ids.
        #[arg(long, value_delimiter = ',', allow_negative_numbers = true, required = true)]
        prompt_ids: Vec<i32>,
        /// Where to write the logits.
        #[arg(long)]
        out: std::path::PathBuf,
    },
    /// Serve a language model and/or an embedding model over the OpenAI HTTP API (chat,
    /// completions, embeddings) until ctrl-c or SIGTERM.
    Serve(cli::serve::ServeOptions),
    /// Train on any device: `rlx train embedder` fine-tunes a sentence embedder on pairs.
    #[command(subcommand)]
    Train(cli::train::TrainCommand),
    /// Print the cosine similarity of two sentences' embeddings.
    Similarity {
        /// cpu, gpu, vulkan or auto (auto honours RLX_DEVICE).
        #[arg(long, default_value = "auto")]
        device: Device,
        /// As for `rlx embed` (`--model-dir` is the same option).
        #[arg(long = "model", visible_alias = "model-dir", value_name = "MODEL")]
        model_dir: Option<std::path::PathBuf>,
        /// A hub model's branch, tag or commit (default main).
        #[arg(long)]
        revision: Option<String>,
        a: String,
        b: String,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result: Result<(), Box<dyn std::error::Error>> = match cli.command {
        Command::Devices { calibrate } => cli::devices::run(calibrate).map_err(Into::into),
        Command::Demo { device, dump } => cli::demo::run(device, dump),
        Command::Bench(args) => args.run(),
        Command::Fetch { model, revision, verify } => cli::fetch::run(&model, revision.as_deref(), verify),
        Command::Models { remove } => cli::models::run(remove.as_deref()),
        Command::Generate(mut options) => {
            cli::fetch::resolve_lm(&mut options.model, options.revision.as_deref())
                .and_then(|()| cli::generate::run(&options))
        }
        Command::Embed {
            target: Target { device, precision },
            format,
            batch,
            model_dir,
            revision,
            file,
            sentences,
        } => cli::embed::run(cli::embed::EmbedOptions {
            device,
            format,
            batch,
            precision,
            model_dir,
            revision,
            file,
            sentences,
        }),
        Command::Logits { mut model, revision, target: Target { device, precision }, prompt_ids, out } => {
            cli::fetch::resolve_lm(&mut model, revision.as_deref()).and_then(|()| {
                cli::logits::run(&cli::logits::LogitsOptions { model, device, precision, prompt_ids, out })
            })
        }
        Command::Similarity { device, model_dir, revision, a, b } => {
            cli::similarity::run(device, model_dir, revision.as_deref(), &a, &b)
        }
        Command::Serve(options) => cli::serve::run(&options),
        Command::Train(cmd) => cli::train::run(&cmd),
    };
    // What a command left in stdout's buffer is written now, so that a failure is reported.
    let result = result.and_then(|()| {
        std::io::Write::flush(&mut std::io::stdout()).map_err(|e| cli::stdout::context(e).into())
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprint!("{}", error_report(e.as_ref()));
            ExitCode::FAILURE
        }
    }
}

/// The text `rlx` prints for a failed command: `error: ` and the error, then one `caused by:`
/// line per source in its chain, leaving out a source whose text the line before already
/// contains (errors that include their cause in their own message would print it twice).
fn error_report(e: &dyn std::error::Error) -> String {
    let mut out = format!("error: {e}\n");
    let mut previous = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !previous.contains(&text) {
            out.push_str(&format!("  caused by: {text}\n"));
        }
        previous = text;
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{error_report, Cli};
    use clap::CommandFactory;

    /// An error with an optional source, for the chain tests.
    #[derive(Debug)]
    struct Chained(String, Option<Box<Chained>>);

    impl std::fmt::Display for Chained {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(&self.0)
        }
    }

    impl std::error::Error for Chained {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
        }
    }

    fn chain(texts: &[&str]) -> Chained {
        texts.iter().rev().fold(None, |inner, t| Some(Chained(t.to_string(), inner.map(Box::new)))).unwrap()
    }

    /// A cause whose text the error already contains is not printed again.
    #[test]
    fn each_cause_is_printed_once() {
        let e = chain(&["loading model.safetensors: No such file", "No such file"]);
        assert_eq!(error_report(&e), "error: loading model.safetensors: No such file\n");
        let e = chain(&["X", "X"]);
        assert_eq!(error_report(&e), "error: X\n");
        // A cause that adds something is printed, under the line it explains.
        let e = chain(&["cannot load the model", "bad header", "bad header"]);
        assert_eq!(error_report(&e), "error: cannot load the model\n  caused by: bad header\n");
    }

    /// clap's own checks of the whole command line (unique argument ids across flattened
    /// groups, defaults that parse), which it otherwise runs only when a command is parsed.
    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }
}
