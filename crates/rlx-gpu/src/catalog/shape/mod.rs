//! Kernel family "shape": data movement on 32-bit words: the strided copy behind permute,
//! slice, expand, reverse, pad, concat and reshape copies, the fill of pads and empty inputs,
//! gather, and gather's transpose, the deterministic scatter-add. Its keys ([`ShapeKernel`]),
//! variants and params structs ([`params`]).
//!
//! Every kernel of this family but the scatter-add moves 32-bit words (`array<u32>`
//! bindings), so one kernel serves f32, i32, u32 and Bool (a u32 0/1 word). The scatter-add
//! sums f32 (rlx-opt widens f16 and bf16 sources around it).

pub mod params;
#[cfg(test)]
mod params_tests;

use super::{name, params_of, Spec, IN2_OUT, IN_OUT, OUT};
use params::{CopyParams, FillParams, GatherParams, ScatterAddParams};

const COPY_SRC: &str = flat_kernel!("shape/copy.wgsl");
const FILL_SRC: &str = flat_kernel!("shape/fill.wgsl");
const GATHER_SRC: &str = flat_kernel!("shape/gather.wgsl");
// The scatter-add has its own entry point (one workgroup per output row and lane block).
const SCATTER_ADD_SRC: &str = kernel_src!("shape/scatter_add.wgsl");

unit_keys! {
    /// Kernels of the shape family.
    pub enum ShapeKernel {
        /// `copy.wgsl`, [`CopyParams`]: strided word copy (permute, slice, expand, reverse, pad
        /// interiors, concat parts, reshape copies).
        Copy,
        /// `fill.wgsl`, [`FillParams`]: every word of the output set to one value.
        Fill,
        /// `gather.wgsl`, [`GatherParams`]: numpy take; out-of-range indices give 0 words.
        Gather,
        /// `scatter_add.wgsl`, [`ScatterAddParams`]: gather's transpose on f32, one workgroup
        /// per output row that lists its matching ids by a prefix sum, each output element
        /// summed in increasing index order (deterministic, no atomics).
        ScatterAdd,
    }
}

/// The variant of `k`.
pub(crate) fn spec(k: ShapeKernel) -> Spec {
    let (kernel, file, source, bindings, params) = match k {
        ShapeKernel::Copy => ("copy", "kernels/shape/copy.wgsl", COPY_SRC, IN_OUT, params_of::<CopyParams>()),
        ShapeKernel::Fill => ("fill", "kernels/shape/fill.wgsl", FILL_SRC, OUT, params_of::<FillParams>()),
        ShapeKernel::Gather => {
            ("gather", "kernels/shape/gather.wgsl", GATHER_SRC, IN2_OUT, params_of::<GatherParams>())
        }
        ShapeKernel::ScatterAdd => {
            let params = params_of::<ScatterAddParams>();
            let file = "kernels/shape/scatter_add.wgsl";
            return Spec::wg256(
                (name(&["scatter_add", "f32"]), Vec::new()),
                file,
                SCATTER_ADD_SRC,
                IN2_OUT,
                params,
            );
        }
    };
    Spec::wg256((name(&[kernel, "word"]), Vec::new()), file, source, bindings, params)
}

/// Every key of this family, in a fixed order.
pub(crate) fn keys() -> Vec<ShapeKernel> {
    ShapeKernel::ALL.to_vec()
}
