//! rlx-nn: the layer library on top of rlx-ir. Every builder here is a *composite*: it emits
//! several of rlx-ir's primitive ops, so it has no op variant, no shape rule and no kernel of
//! its own, and every backend that runs the primitives runs it.
//!
//! # What lives where
//!
//! The rule: a builder that pushes exactly one op node (with the reshapes or transposes its
//! own op needs) is a primitive and stays in `rlx-ir`'s `builder/<family>.rs`; a builder that
//! composes several ops is a composite and lives here, one file per composite family.
//!
//! | module | composites | built on |
//! |--------|------------|----------|
//! | [`layers`] | `linear`, `fma`, `group_norm`, `batch_norm`, `softplus`, `nvfp4_matmul` | matmul, elementwise, reduce, quant |
//! | [`conv`] | `conv1d`, `max_pool1d`, `avg_pool1d`, `layer_norm2d`, `conv3d` | `Conv2d`, `Pool2d`, norms, shape ops |
//! | [`conv_transpose`] | `conv_transpose1d`, `conv_transpose2d` | `Conv2d` per output phase |
//! | [`contract`] | `dot_general`, `einsum` | `MatMul`, `Permute`, `Reshape`, `Reduce` |
//! | [`interpolate`] | `interpolate` (nearest, bilinear) | `Gather`, elementwise |
//! | [`lora`] | `lora_matmul` | three `MatMul`s and an add |
//! | [`loss`] | `cross_entropy` (ignore-index, label smoothing), `mse`, `multiple_negatives_ranking` | log-softmax, a one-hot `Compare`, reductions |
//! | [`optim`] | `train_step`, `train_graphs`: SGD with momentum, AdamW (weights and moments in states, weight decay per weight: `transformers_decays`), gradient clipping by global norm, loss scaling, a finite flag and skipped non-finite steps | `Graph::backward`, `State`, `WriteRows` |
//! | [`schedule`] | host-side, no graph: `LrSchedule` (transformers' warmup schedules), `GradScaler` (dynamic loss scaling) | the optimizer's run-time scalars |
//! | [`moe`] | `moe_swiglu`, `moe_swiglu_stacks` | `GroupedMatMul`, `QuantGroupedMatMul`, `TopK`, softmax |
//! | [`recurrent`] | `lstm`, `gru`, `rnn` | matmuls and gates unrolled over time |
//! | [`sample`] | `sample_tokens` | `TopK`, `Cumsum`, `Random`, `Gather`, ... |
//! | [`spectral`] | `rfft`, `irfft`, `complex_abs2`, `stft`, `istft`, `whisper_log_mel`, `welch`; host windows and mel banks ([`spectral::audio`]) | `Fft`, `Gather`, pads |
//! | [`ssd`] | `ssd_scan` (Mamba-2) | matmuls, `Cumsum`, elementwise |
//! | [`ssm`] | `selective_scan`, `selective_scan_with_state`, `gated_delta_rule` | `SelectiveScan`, `GatedDeltaRule` plus elementwise parts |
//!
//! What stayed in rlx-ir although it may emit more than one node: `Graph::fft` (lengths the
//! native `Fft` cannot take are lowered there, inside the op's own builder), the norms and
//! softmax over a non-last axis (one op between two transposes), `narrow`, `index_select` and
//! `embedding` (one `Slice`/`Gather` after checks). rlx-ir's host-side DFT
//! ([`rlx_ir::spectral`]) stays too: the fft builder and the CPU backend's reference use it.
//!
//! # API shape: extension traits
//!
//! The composites keep the call syntax they had as `Graph` methods (`g.lstm(x, ...)`). Each
//! module declares one public trait (`RecurrentExt`, `SampleExt`, ...) whose methods are
//! provided (written once, in the trait) for any `AsMut<Graph>`, and implemented for
//! [`rlx_ir::Graph`] by an empty `impl`. [`prelude`] re-exports all of them, so a caller adds
//! `use rlx_nn::prelude::*;` and nothing else changes (`rlx::prelude` re-exports this prelude).
//! Why traits and not free functions: call sites in models and parity cases read as before,
//! and a composite reads like the primitives it is made of. A module's private steps are
//! free functions taking `g: &mut Graph`.
//! Option types (`RnnConfig`, `SamplingSpec`, `StftOptions`, ...) are re-exported at the crate
//! root and in the prelude.
//!
//! Every composite runs inside [`rlx_ir::Graph::atomically`]: a composite that fails leaves no
//! partial nodes behind. Errors are rlx-ir's [`rlx_ir::IrError`], naming the composite.

pub mod contract;
pub mod conv;
pub mod conv_transpose;
pub mod interpolate;
pub mod layers;
pub mod lora;
pub mod loss;
pub mod moe;
pub mod optim;
pub mod recurrent;
pub mod sample;
pub mod schedule;
pub mod spectral;
pub mod ssd;
pub mod ssm;

pub use contract::ContractExt;
pub use conv::ConvExt;
pub use conv_transpose::ConvTransposeExt;
pub use interpolate::{InterpolateExt, InterpolateMode, InterpolateSize};
pub use layers::LayerExt;
pub use lora::LoraExt;
pub use loss::{CrossEntropyOpts, LossExt};
pub use moe::{ExpertStack, MoeExt};
pub use optim::{state_name, train_graphs, transformers_decays, OptimExt, Optimizer, StepNodes, StepOpts};
pub use recurrent::{RecurrentExt, RnnActivation, RnnConfig, RnnOutput, RnnWeights};
pub use sample::{SampleExt, SamplingSpec, DEFAULT_TOP_K};
pub use schedule::{Decay, GradScaler, LrSchedule};
pub use spectral::audio::{hann_window, mel_filter_bank, MelScale, MelSpec};
pub use spectral::spectrogram::{SpectrogramExt, WelchOptions, WelchScaling, WHISPER_HOP, WHISPER_N_FFT};
pub use spectral::stft::{PadMode, StftExt, StftOptions};
pub use spectral::SpectralExt;
pub use ssd::{SsdExt, SsdOpts};
pub use ssm::{GatedDeltaOpts, SelectiveScanOpts, SsmExt};

/// The composite traits and option types: `use rlx_nn::prelude::*;` gives `Graph` every
/// composite method.
pub mod prelude {
    pub use crate::{
        ContractExt, ConvExt, ConvTransposeExt, CrossEntropyOpts, Decay, ExpertStack, GatedDeltaOpts,
        GradScaler, InterpolateExt, InterpolateMode, InterpolateSize, LayerExt, LoraExt, LossExt, LrSchedule,
        MoeExt, OptimExt, Optimizer, PadMode, RecurrentExt, RnnActivation, RnnConfig, RnnOutput, RnnWeights,
        SampleExt, SamplingSpec, SelectiveScanOpts, SpectralExt, SpectrogramExt, SsdExt, SsdOpts, SsmExt,
        StepOpts, StftExt, StftOptions, WelchOptions, WelchScaling,
    };
}
