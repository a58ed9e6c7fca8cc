//! The `rlx` command-line tool: `rlx devices`, `rlx demo`, `rlx bench`, and sentence embeddings
//! with `rlx fetch`, `rlx embed` and `rlx similarity`.

mod cli;

use clap::{Parser, Subcommand};
use rlx::prelude::{Device, MatmulKernel, Precision};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "rlx", version, about = "rlx: compile a neural-network graph once, run it many times")]
struct Cli {
    #[command(subcommand)]
    command: Command,
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
        /// M×K×N of the matmul workload instead of n³, e.g. 512x14336x4096.
        #[arg(long, value_parser = cli::bench::parse_dims::<3>)]
        matmul_shape: Option<[usize; 3]>,
        /// Store the matmul workload's b as [N, K], as a linear layer's weight.
        #[arg(long)]
        matmul_transpose_b: bool,
        /// Batch×heads×sequence×head-dim of the attention workload.
        #[arg(long, value_parser = cli::bench::parse_dims::<4>, default_value = "32x12x128x64")]
        attn_shape: [usize; 4],
        /// Make the attention workload causal.
        #[arg(long)]
        attn_causal: bool,
        /// Decoder shape of the prefill workload.
        #[arg(long, value_enum, default_value = "qwen2.5-0.5b")]
        decoder: cli::bench_decoder::DecoderShape,
        /// Prompt length of the prefill and generate workloads.
        #[arg(long, default_value_t = 512)]
        prefill_tokens: usize,
        /// New tokens of the generate workload.
        #[arg(long, default_value_t = 128)]
        decode_tokens: usize,
        /// Encoder layers of the bert workload (BERT-base has 12).
        #[arg(long, default_value_t = 12)]
        bert_layers: usize,
        /// Batch of the bert workload (sequence 128; input x [batch·128, 768]).
        #[arg(long, default_value_t = 8)]
        bert_batch: usize,
        /// f32 (f32 math), mixed (f32 storage, matmul operands rounded to f16 for tensor cores)
        /// or f16. The CPU always computes in f32.
        #[arg(long, default_value = "f32")]
        precision: Precision,
        /// Force every matmul onto one GPU kernel: tiled64, reg128 or coop (default: the
        /// backend picks per shape and device).
        #[arg(long)]
        matmul_kernel: Option<MatmulKernel>,
        /// Run the matmul workload on a weight of these quantized blocks (q8_0, q4_0, q4_k,
        /// q5_k, q6_k, q4_1, q8_asym, fp8_e4m3, fp8_e5m2, nvfp4; q5_0, q5_1, q2_k, q3_k,
        /// iq4_nl and iq4_xs on the CPU only for now) kept packed on the device, reporting GB/s
        /// of weight bytes; M×K×N from --matmul-shape (default 1×n×n, a decode step).
        #[arg(long)]
        quant: Option<rlx_ir::QuantType>,
        /// Only the `ops` workload's cases whose name contains this (see `parity --bench-cases
        /// --list`).
        #[arg(long = "case")]
        case_filter: Option<String>,
        /// Runs per device and workload of the soak workload.
        #[arg(long, default_value_t = 10_000)]
        runs: usize,
        /// Threads of the soak workload's thread checks (0: none).
        #[arg(long, default_value_t = 4)]
        threads: usize,
        /// Runs per thread in the soak workload's thread checks.
        #[arg(long, default_value_t = 20)]
        thread_runs: usize,
        /// Sequence length of the soak workload's BERT layer (x [seq, 384]).
        #[arg(long, default_value_t = 128)]
        soak_seq: usize,
        /// What the soak workload runs (comma-separated; default: all).
        #[arg(long, value_enum, value_delimiter = ',')]
        soak: Vec<cli::bench_soak::SoakWorkload>,
        /// Workloads to run (default: all).
        #[arg(value_enum)]
        workloads: Vec<cli::bench_embed::BenchWorkload>,
    },
    /// Download a model (all-minilm-l6-v2) into the cache; does nothing when it is there.
    Fetch {
        /// The model to fetch.
        #[arg(default_value = rlx_models::DEFAULT_MODEL)]
        model: String,
    },
    /// Sentence embeddings (all-MiniLM-L6-v2): one L2-normalised vector per sentence on stdout.
    Embed {
        /// cpu, gpu, vulkan or auto (auto honours RLX_DEVICE).
        #[arg(long, default_value = "auto")]
        device: Device,
        /// json: one array of arrays; text: one line of values per sentence.
        #[arg(long, value_enum, default_value = "json")]
        format: cli::embed::Format,
        /// Sentences per model run.
        #[arg(long, default_value_t = 32)]
        batch: usize,
        /// f32 (f32 math), mixed (matmul operands rounded to f16 for tensor cores) or f16
        /// (also f16 weights on the device).
        #[arg(long, default_value = "f32")]
        precision: Precision,
        /// A folder with config.json, model.safetensors and tokenizer.json (default: the
        /// cached all-minilm-l6-v2, fetched when missing).
        #[arg(long)]
        model_dir: Option<std::path::PathBuf>,
        /// Read sentences from this file, one per line (`-` for stdin), before the arguments.
        #[arg(long)]
        file: Option<std::path::PathBuf>,
        /// Sentences to embed.
        sentences: Vec<String>,
    },
    /// Continue a prompt with a decoder LLM (Llama, Qwen2, Qwen3, Mistral safetensors
    /// checkpoint), greedily, streaming tokens to stdout; stats go to stderr.
    Generate {
        /// The checkpoint folder: config.json, model.safetensors (or a sharded index) and, for a
        /// text prompt, tokenizer.json.
        #[arg(long)]
        model: std::path::PathBuf,
        /// cpu, gpu, vulkan or auto (auto honours RLX_DEVICE).
        #[arg(long, default_value = "auto")]
        device: Device,
        /// f32, mixed or f16.
        #[arg(long, default_value = "f32")]
        precision: Precision,
        /// Tokens to generate.
        #[arg(long, default_value_t = 32)]
        max_tokens: usize,
        /// Sampling temperature; 0 is greedy (the argmax).
        #[arg(long, default_value_t = 0.0)]
        temperature: f32,
        /// Sample among the k most likely tokens (default 50 when sampling).
        #[arg(long)]
        top_k: Option<usize>,
        /// Nucleus sampling: the smallest set of likeliest tokens whose probability reaches p.
        #[arg(long, default_value_t = 1.0)]
        top_p: f32,
        /// transformers' repetition penalty over the prompt and the tokens so far (1 is off).
        #[arg(long, default_value_t = 1.0)]
        repetition_penalty: f32,
        /// Seed of the random draws: one seed gives the same tokens on every device.
        #[arg(long, default_value_t = 0)]
        seed: u32,
        /// The prompt as comma-separated token ids instead of text.
        #[arg(long, value_delimiter = ',', allow_negative_numbers = true)]
        prompt_ids: Option<Vec<i32>>,
        /// Format the prompt as one user message with the model's chat template
        /// (tokenizer_config.json, chat_template.jinja or the GGUF file's).
        #[arg(long)]
        chat: bool,
        /// With --chat: a system message before the prompt.
        #[arg(long, requires = "chat")]
        system: Option<String>,
        /// Keep generating past the model's end-of-sequence tokens.
        #[arg(long)]
        ignore_eos: bool,
        /// The prompt text.
        prompt: Option<String>,
    },
    /// Write a decoder's logits over a prompt (one forward pass) as raw little-endian f32
    /// [tokens, vocabulary], for comparisons with another implementation.
    Logits {
        /// The checkpoint folder or .gguf file, as for `rlx generate`.
        #[arg(long)]
        model: std::path::PathBuf,
        /// cpu, gpu, vulkan or auto (auto honours RLX_DEVICE).
        #[arg(long, default_value = "auto")]
        device: Device,
        /// f32, mixed or f16.
        #[arg(long, default_value = "f32")]
        precision: Precision,
        /// The prompt as comma-separated token ids.
        #[arg(long, value_delimiter = ',', allow_negative_numbers = true, required = true)]
        prompt_ids: Vec<i32>,
        /// Where to write the logits.
        #[arg(long)]
        out: std::path::PathBuf,
    },
    /// Print the cosine similarity of two sentences' embeddings.
    Similarity {
        /// cpu, gpu, vulkan or auto (auto honours RLX_DEVICE).
        #[arg(long, default_value = "auto")]
        device: Device,
        /// As for `rlx embed`.
        #[arg(long)]
        model_dir: Option<std::path::PathBuf>,
        a: String,
        b: String,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result: Result<(), Box<dyn std::error::Error>> = match cli.command {
        Command::Devices { calibrate } => {
            cli::devices::run(calibrate);
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
            matmul_shape,
            matmul_transpose_b,
            attn_shape,
            attn_causal,
            decoder,
            prefill_tokens,
            decode_tokens,
            bert_layers,
            bert_batch,
            precision,
            matmul_kernel,
            quant,
            case_filter,
            runs,
            threads,
            thread_runs,
            soak_seq,
            soak,
            workloads,
        } => {
            use cli::bench::{BenchOptions, Workload};
            let embed = workloads.contains(&cli::bench_embed::BenchWorkload::Embed);
            let generate = workloads.contains(&cli::bench_embed::BenchWorkload::Generate);
            let soak_options = workloads.contains(&cli::bench_embed::BenchWorkload::Soak).then(|| {
                use cli::bench_soak::SoakWorkload as S;
                cli::bench_soak::SoakOptions {
                    devices: devices.clone(),
                    workloads: if soak.is_empty() { vec![S::BertLayer, S::Embed1, S::Embed64] } else { soak },
                    runs,
                    threads,
                    thread_runs,
                    seq: soak_seq,
                    model_dir: None,
                }
            });
            let generate_options = cli::bench_generate::BenchGenerateOptions {
                devices: devices.clone(),
                decoder,
                prefill_tokens,
                decode_tokens,
                iters,
                precision,
                quant,
            };
            let workloads = if workloads.is_empty() {
                vec![Workload::Tiny, Workload::Matmul, Workload::Bert, Workload::Attention]
            } else {
                workloads.iter().filter_map(|w| w.graph_workload()).collect()
            };
            let run_graphs = !workloads.is_empty();
            let embed_options = cli::bench_embed::BenchEmbedOptions {
                devices: devices.clone(),
                iters,
                warmup,
                model_dir: None,
                precision,
            };
            let options = BenchOptions {
                devices,
                workloads,
                json,
                iters,
                tiny_iters,
                warmup,
                matmul_size,
                matmul_shape,
                matmul_transpose_b,
                attn_shape,
                attn_causal,
                decoder,
                prefill_tokens,
                bert_layers,
                bert_batch,
                precision,
                matmul_kernel,
                quant,
                case_filter,
            };
            let graphs = if run_graphs { cli::bench::run(&options) } else { Ok(()) };
            graphs
                .and_then(|()| if embed { cli::bench_embed::run(&embed_options) } else { Ok(()) })
                .and_then(|()| if generate { cli::bench_generate::run(&generate_options) } else { Ok(()) })
                .and_then(|()| soak_options.as_ref().map_or(Ok(()), cli::bench_soak::run))
        }
        Command::Fetch { model } => cli::fetch::run(&model),
        Command::Generate {
            model,
            device,
            precision,
            max_tokens,
            temperature,
            top_k,
            top_p,
            repetition_penalty,
            seed,
            prompt_ids,
            chat,
            system,
            ignore_eos,
            prompt,
        } => cli::generate::run(&cli::generate::GenerateOptions {
            model,
            device,
            precision,
            max_tokens,
            sampling: rlx::prelude::SamplingSpec { temperature, top_k, top_p, repetition_penalty },
            seed,
            prompt_ids,
            chat,
            system,
            ignore_eos,
            prompt,
        }),
        Command::Embed { device, format, batch, precision, model_dir, file, sentences } => {
            cli::embed::run(cli::embed::EmbedOptions {
                device,
                format,
                batch,
                precision,
                model_dir,
                file,
                sentences,
            })
        }
        Command::Logits { model, device, precision, prompt_ids, out } => {
            cli::logits::run(&cli::logits::LogitsOptions { model, device, precision, prompt_ids, out })
        }
        Command::Similarity { device, model_dir, a, b } => cli::similarity::run(device, model_dir, &a, &b),
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
