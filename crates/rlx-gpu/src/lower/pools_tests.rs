//! Pools: no step reads and writes one buffer, pools are reused, dependencies and barriers
//! follow the data.

use crate::schedule::{BufferId, GpuLimits, Schedule};
use crate::{lower, Access};
use rlx_ir::{DType, Graph};

fn limits() -> GpuLimits {
    GpuLimits::lavapipe()
}

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
    let s = lower(&chain(10), &limits(), &rlx_backend::KernelOptions::default()).unwrap();
    no_step_reads_and_writes_one_buffer(&s);
    // A chain needs two pools ping-ponging, the diamond a third.
    assert_eq!(s.pools.len(), 3, "{:?}", s.pools);
    assert!(s.pools.iter().all(|&p| p == 64 * 64 * 4));
}

#[test]
fn dependencies_follow_the_data() {
    let s = lower(&chain(3), &limits(), &rlx_backend::KernelOptions::default()).unwrap();
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
    let small = GpuLimits { max_binding_bytes: 1 << 20, ..limits() };
    let e = lower(&g, &small, &rlx_backend::KernelOptions::default()).unwrap_err().to_string();
    assert!(e.contains("4194304 bytes") && e.contains("1048576"), "{e}");
    assert!(e.contains('%'), "names the node: {e}");
}
