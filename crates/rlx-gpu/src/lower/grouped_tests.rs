//! What the GroupedMatMul lowering puts in a schedule: the kernel per slot count, the f16
//! weight read as stored (its widening cast launching nothing), and a fill for K = 0.

use super::test_util::{keys, lowered};
use crate::catalog::grouped::GroupedKernel;
use crate::catalog::shape::ShapeKernel;
use crate::schedule::{BufferId, GpuLimits, Schedule};
use crate::KernelKey;
use rlx_ir::{DType, Graph, QuantType};

fn grouped_graph(t: usize, k: usize, wdt: DType) -> Graph {
    let mut g = Graph::new("moe");
    let x = g.input("x", &[t, 1, k], DType::F32).unwrap();
    let w = g.param("w", &[5, 12, k], wdt).unwrap();
    let w = if wdt == DType::F32 { w } else { g.cast(w, DType::F32).unwrap() };
    let ids = g.input("ids", &[t, 2], DType::I32).unwrap();
    let y = g.grouped_matmul(x, w, ids).unwrap();
    g.set_outputs(&[y]).unwrap();
    g
}

fn schedule(g: &Graph) -> Schedule {
    lowered(g, &GpuLimits::lavapipe()).unwrap()
}

#[test]
fn slots_pick_the_kernel_and_f16_weights_are_read_as_stored() {
    let s = schedule(&grouped_graph(1, 8, DType::F32));
    assert_eq!(keys(&s), [KernelKey::Grouped(GroupedKernel::Vec { f16_w: false })]);
    assert_eq!(s.steps[0].workgroups, [3, 2, 1]);
    let s = schedule(&grouped_graph(16, 8, DType::F32));
    assert_eq!(keys(&s), [KernelKey::Grouped(GroupedKernel::Tiled { f16_w: false })]);
    assert_eq!(s.steps[0].workgroups, [5, 1, 1]);
    // The cast launches nothing; the kernel binds the f16 param (leaf 1) at 2 bytes a weight.
    let s = schedule(&grouped_graph(1, 8, DType::F16));
    assert_eq!(keys(&s), [KernelKey::Grouped(GroupedKernel::Vec { f16_w: true })]);
    let w = s.steps[0].operands[1];
    assert_eq!((w.buffer, w.size), (BufferId::Leaf(1), 5 * 12 * 8 * 2));
    let s = schedule(&grouped_graph(40, 8, DType::F16));
    assert_eq!(keys(&s), [KernelKey::Grouped(GroupedKernel::Tiled { f16_w: true })]);
}

#[test]
fn an_empty_contraction_is_a_fill() {
    let s = schedule(&grouped_graph(3, 0, DType::F32));
    assert_eq!(keys(&s), [KernelKey::Shape(ShapeKernel::Fill)]);
}

/// x [t, 1, 64] against a packed stack of 5 experts of 12 rows of `q`, stored as the loader
/// does ([5 · 12, row_bytes]) and reshaped to [5, 12, row_bytes].
fn quant_graph(t: usize, q: QuantType) -> Graph {
    let mut g = Graph::new("moe_q");
    let k = 64 * q.block_elems() / 32;
    let row = q.byte_len(k).unwrap();
    let x = g.input("x", &[t, 1, k], DType::F32).unwrap();
    let w = g.param("w", &[60, row], DType::U8).unwrap();
    let w = g.reshape(w, &[5, 12, row]).unwrap();
    let ids = g.input("ids", &[t, 2], DType::I32).unwrap();
    let y = g.quant_grouped_matmul(x, w, ids, q).unwrap();
    g.set_outputs(&[y]).unwrap();
    g
}

#[test]
fn a_packed_stack_is_bound_as_stored_and_decoded_by_its_format() {
    for q in [QuantType::Q8_0, QuantType::Q4K, QuantType::IQ4NL] {
        let s = schedule(&quant_graph(1, q));
        assert_eq!(keys(&s), [KernelKey::Grouped(GroupedKernel::QuantVec(q))]);
        assert_eq!(s.steps[0].workgroups, [3, 2, 1]);
        // The packed param itself (leaf 1), at its byte size: nothing decodes it first.
        let w = s.steps[0].operands[1];
        let bytes = 60 * q.byte_len(64 * q.block_elems() / 32).unwrap();
        assert_eq!((w.buffer, w.size), (BufferId::Leaf(1), bytes as u64));
        let s = schedule(&quant_graph(16, q));
        assert_eq!(keys(&s), [KernelKey::Grouped(GroupedKernel::QuantTiled(q))]);
        assert_eq!(s.steps[0].workgroups, [5, 1, 1]);
    }
}
