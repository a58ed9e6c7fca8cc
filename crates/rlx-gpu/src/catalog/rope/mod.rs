//! Kernel family "rope": rotary position embeddings (`rope.wgsl`), NeoX or GPT-J style, on
//! either attention layout. Its key ([`RopeKernel`]), variant and params ([`RopeParams`]).

pub mod params;
#[cfg(test)]
mod params_tests;

use super::{name, params_of, Spec, IN3_OUT};
pub use params::RopeParams;

const ROPE_SRC: &str = flat_kernel!("rope/rope.wgsl");

unit_keys! {
    /// Kernels of the rope family.
    pub enum RopeKernel {
        /// RoPE on f32 ([`RopeParams`]). Bindings x, cos, sin, out.
        F32,
    }
}

/// The variant of `k`.
pub(crate) fn spec(k: RopeKernel) -> Spec {
    match k {
        RopeKernel::F32 => Spec::wg256(
            (name(&["rope", "f32"]), Vec::new()),
            "kernels/rope/rope.wgsl",
            ROPE_SRC,
            IN3_OUT,
            params_of::<RopeParams>(),
        ),
    }
}

/// Every key of this family, in a fixed order.
pub(crate) fn keys() -> Vec<RopeKernel> {
    RopeKernel::ALL.to_vec()
}
