//! The determinism contract of `Op::ScatterAdd` on the GPU backends: the same scatter-add (and
//! the embedding gradient built on it) gives the same bits on every run and from a second
//! compile, on Vulkan and on wgpu. A device that cannot be opened fails under
//! `RLX_REQUIRE_GPU=1` and is skipped loudly otherwise.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rlx_backend::{Tensor, TensorData};
use rlx_runtime::Device;

/// The cases run: many repeated ids (every output row sums about 80 terms, so a change of
/// order would show in the low bits), one row summing 857 terms found in four id chunks of
/// the kernel, and the backward of an embedding.
const CASES: [&str; 3] = [
    "scatter_add_f32_embedding_v50_n4096_q96",
    "scatter_add_f32_one_row_hit_across_chunks_v5_n1000_q40",
    "grad_embedding_f32_v50x96_ids4096",
];

/// Each output's bits: f32 words as u32 (NaN payloads included), anything else as it is.
fn bits(outs: &[Tensor]) -> Vec<Vec<u32>> {
    outs.iter()
        .map(|t| match t.data() {
            TensorData::F32(v) => v.iter().map(|x| x.to_bits()).collect(),
            other => panic!("unexpected output dtype {}", other.dtype()),
        })
        .collect()
}

fn same_bits_run_to_run(device: Device) {
    let Some(session) = rlx_test_support::open(device, "scatter-add determinism") else { return };
    let table = rlx_parity::cases();
    for name in CASES {
        let case = table.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no case {name}"));
        let built = case.instantiate().unwrap();
        let mut first = built.compile(&session).unwrap();
        let want = bits(&first.run(&built.feeds()).unwrap());
        assert!(want.iter().flatten().any(|&w| w != 0), "{name}: all zeros proves nothing");
        for run in 1..4 {
            assert_eq!(
                bits(&first.run(&built.feeds()).unwrap()),
                want,
                "{name} on {device}: run {run} differs"
            );
        }
        let mut second = built.compile(&session).unwrap();
        assert_eq!(
            bits(&second.run(&built.feeds()).unwrap()),
            want,
            "{name} on {device}: a new compile differs"
        );
    }
}

#[test]
fn scatter_add_is_bit_identical_run_to_run_on_vulkan() {
    same_bits_run_to_run(Device::Vulkan);
}

#[test]
fn scatter_add_is_bit_identical_run_to_run_on_wgpu() {
    same_bits_run_to_run(Device::Gpu);
}
