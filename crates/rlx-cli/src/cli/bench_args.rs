//! The options of `rlx bench`, in groups that clap flattens into one command line: what every
//! workload takes ([`CommonArgs`]), the graph workloads' shapes ([`GraphArgs`]), the decoder
//! workloads' ([`DecoderArgs`]) and the soak's ([`SoakArgs`]). Each workload's runner takes the
//! groups it reads, so no flag is unpacked by hand.

use super::bench::BenchOptions;
use super::bench_decoder::DecoderShape;
use super::bench_embed::BenchEmbedOptions;
use super::bench_generate::BenchGenerateOptions;
use super::bench_soak::{SoakOptions, SoakWorkload};
use rlx::prelude::{Device, MatmulKernel, Precision};
use std::path::PathBuf;

/// Every option of `rlx bench`.
#[derive(clap::Args, Clone, Debug)]
pub struct BenchArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub graph: GraphArgs,
    #[command(flatten)]
    pub decoder: DecoderArgs,
    #[command(flatten)]
    pub soak: SoakArgs,
    /// Workloads to run (default: tiny, matmul, bert, attention).
    #[arg(value_enum)]
    pub workloads: Vec<BenchWorkload>,
}

/// What every workload takes.
#[derive(clap::Args, Clone, Debug)]
pub struct CommonArgs {
    /// Devices to measure, in order (repeat the flag); the first one's output is the
    /// reference for the "rel err" column.
    #[arg(long = "device", default_values = ["cpu", "vulkan"])]
    pub devices: Vec<Device>,
    /// Write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Timed runs per workload and device (the median is reported).
    #[arg(long, default_value_t = 10)]
    pub iters: usize,
    /// Untimed runs before timing (at least one always runs).
    #[arg(long, default_value_t = 2)]
    pub warmup: usize,
    /// f32 (f32 math), mixed (f32 storage, matmul operands rounded to f16 for tensor cores)
    /// or f16. The CPU always computes in f32.
    #[arg(long, default_value = "f32")]
    pub precision: Precision,
}

/// The shapes and kernels of the graph workloads (tiny, matmul, attention, bert, ops).
#[derive(clap::Args, Clone, Debug)]
pub struct GraphArgs {
    /// Timed runs of the tiny workload.
    #[arg(long, default_value_t = 1000)]
    pub tiny_iters: usize,
    /// n of the n³ matmul workload.
    #[arg(long, default_value_t = 1024)]
    pub matmul_size: usize,
    /// M×K×N of the matmul workload instead of n³, e.g. 512x14336x4096.
    #[arg(long, value_parser = super::bench::parse_dims::<3>)]
    pub matmul_shape: Option<[usize; 3]>,
    /// Store the matmul workload's b as [N, K], as a linear layer's weight.
    #[arg(long)]
    pub matmul_transpose_b: bool,
    /// Batch×heads×sequence×head-dim of the attention workload.
    #[arg(long, value_parser = super::bench::parse_dims::<4>, default_value = "32x12x128x64")]
    pub attn_shape: [usize; 4],
    /// Make the attention workload causal.
    #[arg(long)]
    pub attn_causal: bool,
    /// Encoder layers of the bert workload (BERT-base has 12).
    #[arg(long, default_value_t = 12)]
    pub bert_layers: usize,
    /// Batch of the bert workload (sequence 128; input x [batch·128, 768]).
    #[arg(long, default_value_t = 8)]
    pub bert_batch: usize,
    /// Force every matmul onto one GPU kernel: tiled64, reg128 or coop (default: the
    /// backend picks per shape and device).
    #[arg(long)]
    pub matmul_kernel: Option<MatmulKernel>,
    /// Run the matmul workload on a weight of these quantized blocks (q8_0, q4_0, q4_1, q5_0,
    /// q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, iq4_xs, q8_asym, fp8_e4m3, fp8_e5m2 or
    /// nvfp4; every device decodes them all) kept packed on the device, reporting GB/s of
    /// weight bytes; M×K×N from --matmul-shape (default 1×n×n, a decode step). The generate
    /// workload stores its matrices in these blocks too.
    #[arg(long)]
    pub quant: Option<rlx::ir::QuantType>,
    /// Only the `ops` workload's cases whose name contains this (see `parity --bench-cases
    /// --list`).
    #[arg(long = "case")]
    pub case_filter: Option<String>,
}

/// The decoder shape of the prefill and generate workloads.
#[derive(clap::Args, Clone, Debug)]
pub struct DecoderArgs {
    /// Decoder shape of the prefill and generate workloads.
    #[arg(long = "decoder", value_enum, default_value = "qwen2.5-0.5b")]
    pub shape: DecoderShape,
    /// Prompt length of the prefill and generate workloads.
    #[arg(long, default_value_t = 512)]
    pub prefill_tokens: usize,
    /// New tokens of the generate workload.
    #[arg(long, default_value_t = 128)]
    pub decode_tokens: usize,
    /// Sequences the generate workload decodes together (each the bench prompt), through one
    /// batched decode step; 1 is the single-sequence generator.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub streams: u32,
    /// The KV cache's dtype: auto (f16 under mixed and f16 precision, f32 under f32), f32 or
    /// f16.
    #[arg(long, default_value = "auto")]
    pub kv_cache: rlx_models::KvCache,
    /// How the streams of `--streams N` join: `add` (each prompt prefilled at once, one after
    /// the other) or `enqueue` (all prompts go into the cache together, a chunk per step of
    /// the batched decoder's mixed step).
    #[arg(long, value_enum, default_value = "add")]
    pub join: Join,
}

/// How `rlx bench generate --streams N` admits its streams.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Join {
    /// `BatchDecoder::add`, one prefill per stream.
    Add,
    /// `BatchDecoder::enqueue`, prefill chunks mixed into the steps.
    Enqueue,
}

/// The soak workload's runs and thread checks.
#[derive(clap::Args, Clone, Debug)]
pub struct SoakArgs {
    /// Runs per device and workload of the soak workload.
    #[arg(long, default_value_t = 10_000)]
    pub runs: usize,
    /// Threads of the soak workload's thread checks (0: none).
    #[arg(long, default_value_t = 4)]
    pub threads: usize,
    /// Runs per thread in the soak workload's thread checks.
    #[arg(long, default_value_t = 20)]
    pub thread_runs: usize,
    /// Sequence length of the soak workload's BERT layer (x [seq, 384]).
    #[arg(long = "soak-seq", default_value_t = 128)]
    pub seq: usize,
    /// What the soak workload runs (comma-separated; default: all).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub soak: Vec<SoakWorkload>,
}

impl BenchArgs {
    /// Runs the graph workloads, then embed, generate and soak where asked.
    pub fn run(self) -> Result<(), Box<dyn std::error::Error>> {
        let asked = |w: BenchWorkload| self.workloads.contains(&w);
        let graph_workloads: Vec<BenchWorkload> = if self.workloads.is_empty() {
            vec![BenchWorkload::Tiny, BenchWorkload::Matmul, BenchWorkload::Bert, BenchWorkload::Attention]
        } else {
            self.workloads.iter().copied().filter(|w| w.is_graph()).collect()
        };
        if !graph_workloads.is_empty() {
            let options = BenchOptions {
                common: &self.common,
                graph: &self.graph,
                decoder: &self.decoder,
                workloads: graph_workloads,
            };
            super::bench::run(&options)?;
        }
        if asked(BenchWorkload::Embed) {
            super::bench_embed::run(&BenchEmbedOptions { common: &self.common, model_dir: None })?;
        }
        if asked(BenchWorkload::Generate) {
            let options = BenchGenerateOptions {
                common: &self.common,
                decoder: &self.decoder,
                quant: self.graph.quant,
            };
            match self.decoder.streams {
                0 | 1 => super::bench_generate::run(&options)?,
                n => super::bench_streams::run(&options, n as usize)?,
            }
        }
        if asked(BenchWorkload::Soak) {
            let mut soak = self.soak.clone();
            if soak.soak.is_empty() {
                soak.soak = vec![SoakWorkload::BertLayer, SoakWorkload::Embed1, SoakWorkload::Embed64];
            }
            super::bench_soak::run(&SoakOptions {
                devices: self.common.devices.clone(),
                args: soak,
                model_dir: None,
            })?;
        }
        Ok(())
    }
}

/// The workloads `rlx bench` accepts: the graph workloads that [`super::bench::run`] compiles
/// and times, and `embed`, `generate` and `soak`, which have runners of their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BenchWorkload {
    /// x[4] + 1: round-trip latency of one `run`.
    Tiny,
    /// f32 n³ matmul, n = --matmul-size (a as input, b as param).
    Matmul,
    /// BERT-base encoder, input x [batch·128, 768].
    Bert,
    /// One attention op (--attn-shape, --attn-causal).
    Attention,
    /// A random-init decoder LLM of a real shape (--decoder) over one prompt (--prefill-tokens).
    Prefill,
    /// The op families' benchmark cases (--case filters them by name).
    Ops,
    /// all-MiniLM-L6-v2 sentences/s at batch 1 and 64, tokens/s for one 128- and one
    /// 512-token sequence (fetches the model when needed).
    Embed,
    /// A random-init decoder (--decoder) generating over the KV cache: prefill tokens/s for
    /// --prefill-tokens, decode tokens/s over --decode-tokens greedy steps.
    Generate,
    /// Many runs (--runs) of a BERT layer and MiniLM embed at batch 1 and 64 (--soak) with
    /// memory and live-object readings, then the same from --threads threads (bench_soak).
    Soak,
}

impl BenchWorkload {
    /// Whether [`super::bench::run`] measures it (one graph, or the ops cases), rather than a
    /// runner of its own.
    pub fn is_graph(self) -> bool {
        !matches!(self, BenchWorkload::Embed | BenchWorkload::Generate | BenchWorkload::Soak)
    }

    /// The name on the command line and in the JSON ("tiny", "matmul", …).
    pub fn name(self) -> String {
        use clap::ValueEnum;
        self.to_possible_value().map_or_else(|| format!("{self:?}"), |v| v.get_name().to_string())
    }
}
