//! Pools: no step reads and writes one buffer, pools are reused, dependencies and barriers
//! follow the data.

use super::test_util::lowered;
use crate::schedule::{BufferId, GpuLimits, Schedule};
use crate::Access;
use rlx_ir::{DType, Graph};

/// A chain of `n` unary ops on `x`, and a diamond (two branches joined) at its end.
fn chain(n: usize) -> Graph {
    let mut g = Graph::new("chain");
    let x = g.input("x", &[64, 64], DType::F32).unwrap();
    let mut v = x;
    for _ in 0..n {
        v = g.exp(v).unwrap();
    }
    let l = g.neg(v).unwrap();
    let r = g.abs(v).unwrap();
    let y = g.add(l, r).unwrap();
    g.set_outputs(&[y]).unwrap();
    g
}

fn no_step_reads_and_writes_one_buffer(s: &Schedule) {
    for step in &s.steps {
        let access = step.variant().bindings;
        let written: Vec<BufferId> = step
            .operands
            .iter()
            .zip(access)
            .filter(|(_, a)| **a == Access::ReadWrite)
            .map(|(o, _)| o.buffer)
            .collect();
        for (o, a) in step.operands.iter().zip(access) {
            if *a == Access::Read {
                assert!(!written.contains(&o.buffer), "{}: reads and writes {:?}", step.label, o.buffer);
            }
        }
    }
}

#[test]
fn values_get_pools_that_are_reused() {
    let s = lowered(&chain(10), &GpuLimits::lavapipe()).unwrap();
    no_step_reads_and_writes_one_buffer(&s);
    // A chain needs two pools ping-ponging, the diamond a third.
    assert_eq!(s.pools.len(), 3, "{:?}", s.pools);
    assert!(s.pools.iter().all(|&p| p == 64 * 64 * 4));
}

#[test]
fn dependencies_follow_the_data() {
    let s = lowered(&chain(3), &GpuLimits::lavapipe()).unwrap();
    let waits: Vec<&[usize]> = s.steps.iter().map(|st| st.waits_for.as_slice()).collect();
    // exp, exp, exp, neg, abs, add: each exp waits for the one before; neg and abs both read the
    // last exp; add reads both.
    assert_eq!(waits[0], &[] as &[usize]);
    assert!(waits[1].contains(&0) && waits[2].contains(&1));
    assert!(waits[3].contains(&2) && waits[4].contains(&2));
    assert!(waits[5].contains(&3) && waits[5].contains(&4));
    // neg and abs are independent: no barrier between them.
    assert_eq!(s.barriers(), vec![false, true, true, true, false, true]);
}

#[test]
fn a_tensor_past_one_binding_names_its_node() {
    let mut g = Graph::new("big");
    let x = g.input("x", &[1024, 1024], DType::F32).unwrap();
    let y = g.exp(x).unwrap();
    g.set_outputs(&[y]).unwrap();
    let small = GpuLimits { max_binding_bytes: 1 << 20, ..GpuLimits::lavapipe() };
    let e = lowered(&g, &small).unwrap_err().to_string();
    assert!(e.contains("4194304 bytes") && e.contains("1048576"), "{e}");
    assert!(e.contains('%'), "names the node: {e}");
}

/// Every buffer comes in whole 16-byte units and every binding, rounded up to them, lies inside
/// its buffer; outputs keep their exact byte size for the readback. A hand-made schedule whose
/// buffer is one unit short is refused.
#[test]
fn buffers_and_bindings_come_in_whole_units() {
    use crate::schedule::{ValidSchedule, BINDING_UNIT};
    let mut g = Graph::new("odd");
    let x = g.input("x", &[5], DType::F32).unwrap();
    let w = g.param("w", &[5], DType::F32).unwrap();
    let y = g.add(x, w).unwrap();
    let z = g.exp(y).unwrap();
    g.set_outputs(&[z]).unwrap();
    let s = lowered(&g, &GpuLimits::lavapipe()).unwrap();
    for b in s.buffers() {
        assert_eq!(b.bytes % BINDING_UNIT, 0, "{b:?}");
    }
    for step in &s.steps {
        for op in &step.operands {
            assert_eq!(op.binding_size(), 32, "20 bytes bind as 32");
            assert!(op.offset + op.binding_size() <= s.buffer_bytes(op.buffer).unwrap());
        }
    }
    assert_eq!(s.outputs[0].0.map(|o| o.size), Some(20), "the readback copies exactly 5 floats");
    let mut short = s.clone();
    short.leaves[0].bytes = 20;
    let e = ValidSchedule::new(short, &GpuLimits::lavapipe()).unwrap_err();
    assert!(e.to_string().contains("16-byte units"), "{e}");
}
