//! What the recurrence lowerings put in a schedule: the selective scan's three launches (two
//! for its last state) through scratch buffers, the chunk length, the delta rule's one launch
//! and its K limit, and fills for empty operands.

use super::ssm::scan_chunk;
use super::test_util::{keys, lowered};
use crate::catalog::shape::ShapeKernel;
use crate::catalog::ssm::SsmKernel;
use crate::schedule::{BufferId, GpuLimits, Schedule};
use crate::{GpuError, KernelKey};
use rlx_ir::{DType, Graph, ScanOutput};

fn scan_graph(l: usize, n: usize, output: ScanOutput) -> Graph {
    let mut g = Graph::new("scan");
    let u = g.input("u", &[2, 6, l], DType::F32).unwrap();
    let delta = g.input("delta", &[2, 6, l], DType::F32).unwrap();
    let a = g.param("A", &[6, n], DType::F32).unwrap();
    let b = g.input("B", &[2, 3, n, l], DType::F32).unwrap();
    let c = g.input("C", &[2, 3, n, l], DType::F32).unwrap();
    let y = g.selective_scan_op(u, delta, a, b, c, true, output).unwrap();
    g.set_outputs(&[y]).unwrap();
    g
}

fn lower_it(g: &Graph) -> Result<Schedule, GpuError> {
    lowered(g, &GpuLimits::lavapipe())
}

#[test]
fn the_scan_is_three_launches_and_its_state_two() {
    let s = lower_it(&scan_graph(40, 20, ScanOutput::Y)).unwrap();
    let ssm = |k| KernelKey::Ssm(k);
    assert_eq!(keys(&s), [ssm(SsmKernel::ScanChunk), ssm(SsmKernel::ScanCarry), ssm(SsmKernel::ScanOut)]);
    // Chunks of 16 for 12 channels: 3 chunks; end states [2, 6, 3, 20], Σδ [2, 6, 3], and a
    // scratch last state [2, 6, 20] the y path does not read back.
    assert_eq!(s.scratch, vec![2 * 6 * 3 * 20 * 4, 2 * 6 * 3 * 4, 2 * 6 * 20 * 4]);
    let hend = s.steps[0].operands[4].buffer;
    assert_eq!(hend, BufferId::Scratch(0));
    assert_eq!(s.steps[1].operands[2].buffer, hend);
    assert_eq!(s.steps[2].operands[5].buffer, hend);
    let s = lower_it(&scan_graph(40, 20, ScanOutput::LastState)).unwrap();
    assert_eq!(keys(&s), [ssm(SsmKernel::ScanChunk), ssm(SsmKernel::ScanCarry)]);
    assert_eq!(s.scratch.len(), 2);
}

#[test]
fn empty_operands_are_fills() {
    // L = 0: the last state is zeros. N = 0: y is an empty sum.
    let s = lower_it(&scan_graph(0, 4, ScanOutput::LastState)).unwrap();
    assert_eq!(keys(&s), [KernelKey::Shape(ShapeKernel::Fill)]);
    let s = lower_it(&scan_graph(5, 0, ScanOutput::Y)).unwrap();
    assert_eq!(keys(&s), [KernelKey::Shape(ShapeKernel::Fill)]);
}

#[test]
fn chunks_shrink_until_the_gpu_is_full() {
    // Mamba-130m prefill: B = 8, D = 1536, L = 2048 → 12 288 channels.
    assert_eq!(scan_chunk(8 * 1536, 2048), 64);
    assert_eq!(scan_chunk(1, 10), 16);
    assert_eq!(scan_chunk(1 << 20, 4096), 256);
}

fn delta_graph(k: usize, output: ScanOutput) -> Graph {
    let mut g = Graph::new("delta");
    let q = g.input("q", &[2, 5, 3, k], DType::F32).unwrap();
    let v = g.input("v", &[2, 5, 3, 40], DType::F32).unwrap();
    let gg = g.input("g", &[2, 5, 3], DType::F32).unwrap();
    let o = g.gated_delta_rule_op(q, q, v, gg, gg, 0.5, output).unwrap();
    g.set_outputs(&[o]).unwrap();
    g
}

#[test]
fn the_delta_rule_is_one_launch_with_k_at_most_128() {
    let s = lower_it(&delta_graph(16, ScanOutput::Y)).unwrap();
    assert_eq!(keys(&s), [KernelKey::Ssm(SsmKernel::DeltaRule)]);
    // ⌈40 / 32⌉ column blocks × (B · H = 6).
    assert_eq!(s.steps[0].workgroups, [2, 6, 1]);
    assert!(lower_it(&delta_graph(128, ScanOutput::LastState)).is_ok());
    let e = lower_it(&delta_graph(129, ScanOutput::Y)).unwrap_err();
    assert!(matches!(e, GpuError::TooLarge { limit: 128, .. }), "{e}");
    assert!(e.to_string().contains("key dim K"), "{e}");
}
