//! Kernel families added beside the first four kernels of `variants.rs`. Each family owns its
//! key enum, its variants and its params structs, so families grow without touching each other.

pub mod data;
pub mod nn;
