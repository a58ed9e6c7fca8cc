//! memory::plan: unit tests and the property test over random graphs.
// Test crate: its helpers may unwrap, expect and panic, as the #[test] functions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proptest::prelude::*;
use rlx_ir::{DType, Graph, NodeId, Op};
use rlx_opt::memory::{plan, MemoryPlan};
use rlx_opt::OptError;

fn f32_bytes(n: u64) -> u64 {
    n * 4
}

#[test]
fn chain_reuses_memory() {
    let mut g = Graph::new("chain");
    let x = g.input("x", &[256], DType::F32).unwrap();
    let a = g.exp(x).unwrap();
    let b = g.exp(a).unwrap();
    let c = g.exp(b).unwrap();
    let d = g.exp(c).unwrap();
    g.set_outputs(&[d]).unwrap();
    let p = plan(&g, 64).unwrap();
    assert_eq!(p.slots[x.index()], None, "inputs have their own storage");
    let off = |id: NodeId| p.slots[id.index()].unwrap().offset;
    // a and b are live together, so are b and c and c and d; a is dead when c is written.
    assert_eq!(p.buffers.len(), 4);
    assert_eq!(p.total_bytes(), 4 * f32_bytes(256));
    assert_eq!(p.peak_bytes, 2 * f32_bytes(256), "two buffers suffice for a chain");
    assert!(p.peak_bytes < p.total_bytes());
    assert_ne!(off(a), off(b));
    assert_eq!(off(c), off(a));
    assert_eq!(off(d), off(b));
}

#[test]
fn reshape_aliases_its_input_and_extends_its_life() {
    let mut g = Graph::new("view");
    let x = g.input("x", &[4, 8], DType::F32).unwrap();
    let a = g.exp(x).unwrap();
    let r = g.reshape(a, &[32]).unwrap();
    let b = g.input("y", &[32], DType::F32).unwrap();
    let c = g.exp(b).unwrap();
    let c2 = g.exp(c).unwrap();
    let d = g.add(r, c2).unwrap();
    g.set_outputs(&[d]).unwrap();
    let p = plan(&g, 16).unwrap();
    let sa = p.slots[a.index()].unwrap();
    let sr = p.slots[r.index()].unwrap();
    assert_eq!(sa, sr, "a reshape is a view of its input's buffer");
    assert_eq!(p.view_of[r.index()], Some(a));
    assert_eq!(p.buffers[sa.buffer].last, d.index(), "the view's reader keeps the buffer alive");
    // c and c2 are written while a's memory is still needed through r.
    for n in [c, c2] {
        let s = p.slots[n.index()].unwrap();
        assert!(s.offset >= sa.offset + sa.size || s.offset + s.size <= sa.offset);
    }
    assert_eq!(p.buffers.len(), 4, "a, c, c2, d; the reshape adds none");
}

#[test]
fn reshape_of_a_leaf_is_a_view_of_the_leaf() {
    let mut g = Graph::new("leaf_view");
    let x = g.param("w", &[2, 3], DType::F32).unwrap();
    let r = g.reshape(x, &[6]).unwrap();
    let r2 = g.reshape(r, &[3, 2]).unwrap();
    let y = g.exp(r2).unwrap();
    g.set_outputs(&[y]).unwrap();
    let p = plan(&g, 4).unwrap();
    assert_eq!(p.slots[r.index()], None);
    assert_eq!(p.slots[r2.index()], None);
    assert_eq!(p.view_of[r2.index()], Some(x), "chains of views resolve to the storage owner");
    assert!(p.slots[y.index()].is_some());
}

#[test]
fn outputs_live_to_the_end() {
    let mut g = Graph::new("outs");
    let x = g.input("x", &[64], DType::F32).unwrap();
    let first = g.exp(x).unwrap();
    let mut cur = g.sin(x).unwrap();
    let mut later = vec![cur];
    for _ in 0..5 {
        cur = g.cos(cur).unwrap();
        later.push(cur);
    }
    g.set_outputs(&[first, cur]).unwrap();
    let p = plan(&g, 64).unwrap();
    let sf = p.slots[first.index()].unwrap();
    assert_eq!(p.buffers[sf.buffer].last, g.len());
    for n in later {
        let s = p.slots[n.index()].unwrap();
        assert!(s.offset >= sf.offset + sf.size || s.offset + s.size <= sf.offset, "output memory reused");
    }
}

#[test]
fn bool_counts_four_bytes_and_empty_tensors_take_none() {
    let mut g = Graph::new("sizes");
    let x = g.input("x", &[3, 5], DType::F32).unwrap();
    let b = g.gt(x, x).unwrap();
    let e = g.input("e", &[0, 7], DType::F32).unwrap();
    let ee = g.exp(e).unwrap();
    let h = g.cast(x, DType::F16).unwrap();
    g.set_outputs(&[b, ee, h]).unwrap();
    let p = plan(&g, 8).unwrap();
    assert_eq!(p.slots[b.index()].unwrap().size, 15 * 4);
    assert_eq!(p.slots[ee.index()].unwrap().size, 0);
    assert_eq!(p.slots[h.index()].unwrap().size, 15 * 2);
    assert_eq!(p.peak_bytes, 64 + 30, "bool buffer (60 → aligned 64) then the f16 one");
}

#[test]
fn alignment_must_be_a_power_of_two() {
    let g = rlx_test_support::exp_graph("align", &[3], DType::F32);
    for bad in [0, 3, 48, 100] {
        assert_eq!(plan(&g, bad), Err(OptError::BadAlignment { alignment: bad }));
    }
    let msg = plan(&g, 3).unwrap_err().to_string();
    assert!(msg.contains("power of two") && msg.contains('3'), "{msg}");
    assert!(plan(&g, 1).is_ok());
}

#[test]
fn offsets_are_aligned_when_sizes_are_not() {
    let mut g = Graph::new("odd");
    let x = g.input("x", &[3], DType::F32).unwrap();
    let a = g.exp(x).unwrap();
    let b = g.sin(x).unwrap();
    let c = g.add(a, b).unwrap();
    g.set_outputs(&[c]).unwrap();
    let p = plan(&g, 256).unwrap();
    let offs: Vec<u64> = [a, b, c].iter().map(|n| p.slots[n.index()].unwrap().offset).collect();
    assert!(offs.iter().all(|o| o % 256 == 0), "{offs:?}");
    // a, b, c are all live at c: three distinct 256-byte-aligned places.
    assert_eq!(p.peak_bytes, 512 + 12);
}

// ---------------------------------------------------------------- property test

/// One step of a random graph: an op selector and two operand pickers.
#[derive(Clone, Debug)]
struct Step {
    op: u8,
    a: usize,
    b: usize,
}

fn build(steps: &[Step], n_outputs: usize) -> Graph {
    let mut g = Graph::new("random");
    let x = g.input("x", &[4, 6], DType::F32).unwrap();
    let y = g.input("y", &[6, 4], DType::F32).unwrap();
    let mut vals = vec![x, y];
    for s in steps {
        let a = vals[s.a % vals.len()];
        let ty = g.ty(a).unwrap().clone();
        let float = ty.dtype == DType::F32;
        let dims = ty.shape.dims().to_vec();
        let new = match s.op % 8 {
            0 if float => g.exp(a).ok(),
            1 if float => {
                // An operand of the same type, else a itself.
                let same: Vec<NodeId> = vals.iter().copied().filter(|&v| g.ty(v).unwrap() == &ty).collect();
                let b = same[s.b % same.len()];
                g.add(a, b).ok()
            }
            2 if !dims.is_empty() && float => g.sum(a, &[-1], s.b % 2 == 0).ok(),
            3 => g.reshape(a, &[ty.numel()]).ok(),
            4 if dims.len() == 2 && float => g.matmul_t(a, a, false, true).ok(),
            5 if float => g.gt(a, a).ok(),
            6 if dims.len() == 2 => g.reshape(a, &[dims[1], dims[0]]).ok(),
            7 if float => g.max(a, &[0], true).ok().filter(|_| !dims.is_empty()),
            _ => None,
        };
        if let Some(n) = new {
            vals.push(n);
        }
    }
    let last = *vals.last().unwrap();
    let mut outs = vec![last];
    for k in 0..n_outputs {
        outs.push(vals[(k * 7 + 3) % vals.len()]);
    }
    g.set_outputs(&outs).unwrap();
    g
}

/// Independent liveness: per storage owner, [producer index, last reader of it or of any view
/// of it] (graph length for outputs).
fn owner_intervals(g: &Graph) -> Vec<(usize, usize)> {
    let n = g.len();
    let mut owner: Vec<usize> = (0..n).collect();
    for (i, node) in g.nodes().iter().enumerate() {
        if matches!(node.op, Op::Reshape(_)) {
            owner[i] = owner[node.inputs[0].index()];
        }
    }
    let mut last: Vec<usize> = (0..n).collect();
    for (i, node) in g.nodes().iter().enumerate() {
        for inp in &node.inputs {
            let o = owner[inp.index()];
            last[o] = last[o].max(i);
        }
    }
    for o in g.outputs() {
        last[owner[o.index()]] = n;
    }
    (0..n).map(|i| (owner[i], last[owner[i]])).collect()
}

fn check_plan(g: &Graph, p: &MemoryPlan, align: usize) -> Result<(), TestCaseError> {
    let live = owner_intervals(g);
    let n = g.len();
    prop_assert_eq!(p.slots.len(), n);
    let mut owners = Vec::new();
    for (i, node) in g.nodes().iter().enumerate() {
        let owner = live[i].0;
        let owner_is_leaf = g.nodes()[owner].op.is_leaf();
        match p.slots[i] {
            None => prop_assert!(owner_is_leaf, "node {} unplanned", i),
            Some(s) => {
                prop_assert!(!owner_is_leaf);
                prop_assert_eq!(s.offset % align as u64, 0, "offset {} not aligned to {}", s.offset, align);
                let elem = if node.ty.dtype == DType::Bool { 4 } else { node.ty.dtype.size_bytes() as u64 };
                prop_assert_eq!(s.size, node.ty.numel() as u64 * elem);
                prop_assert_eq!(Some(s), p.slots[owner], "a view must share its owner's slot");
                if owner == i {
                    owners.push((i, s));
                }
            }
        }
    }
    for (x, &(i, si)) in owners.iter().enumerate() {
        for &(j, sj) in &owners[x + 1..] {
            let (a0, a1) = (i, live[i].1);
            let (b0, b1) = (j, live[j].1);
            let live_together = a0 <= b1 && b0 <= a1;
            let overlap = si.offset < sj.offset + sj.size && sj.offset < si.offset + si.size;
            prop_assert!(!(live_together && overlap), "nodes {} and {} are live together and overlap", i, j);
        }
    }
    let padded: u64 = owners.iter().map(|(_, s)| s.size.div_ceil(align as u64) * align as u64).sum();
    let max_end = owners.iter().map(|(_, s)| s.offset + s.size).max().unwrap_or(0);
    prop_assert_eq!(p.peak_bytes, max_end);
    prop_assert!(p.peak_bytes <= padded, "peak {} above the sum of (aligned) sizes {}", p.peak_bytes, padded);
    if align == 1 {
        prop_assert!(p.peak_bytes <= p.total_bytes());
    }
    Ok(())
}

fn step() -> impl Strategy<Value = Step> {
    (any::<u8>(), any::<usize>(), any::<usize>()).prop_map(|(op, a, b)| Step { op, a, b })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn plans_never_overlap_live_buffers(
        steps in proptest::collection::vec(step(), 1..40),
        n_outputs in 0usize..4,
        align_pow in 0u32..9,
    ) {
        let g = build(&steps, n_outputs);
        let align = 1usize << align_pow;
        let p = plan(&g, align).unwrap();
        check_plan(&g, &p, align)?;
    }
}
