//! Size limits at compile: every tensor of the optimized graph must fit the device's
//! `max_tensor_bytes`; a bigger one is `TooLarge` naming the user's node, its op and type, the
//! bytes, the limit and what to do, before any backend allocates it.
// Test crate: its helpers may unwrap, expect and panic, as the #[test] functions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rlx_backend::{Backend, Capabilities};
use rlx_cpu::CpuBackend;
use rlx_ir::{AttentionSpec, AttnLayout, DType, Graph, MaskKind, NodeId, OpKind};
use rlx_opt::{optimize, OptError, PassOptions};

/// The CPU's capabilities with a limit of `max` bytes per tensor.
fn cpu_with_limit(max: u64) -> Capabilities {
    Capabilities { max_tensor_bytes: max, ..CpuBackend::new().capabilities().clone() }
}

/// `sum(x @ w, axis 1)`: inputs of 128 and 256 bytes, a 2048-byte `f32[16, 32]` matmul result and
/// a 64-byte output. `extra` unused inputs come first, so dce renumbers the nodes.
fn matmul_graph(extra: usize) -> (Graph, NodeId) {
    let mut g = Graph::new("mm");
    for i in 0..extra {
        g.input(&format!("unused{i}"), &[2], DType::F32).unwrap();
    }
    let x = g.input("x", &[16, 2], DType::F32).unwrap();
    let w = g.param("w", &[2, 32], DType::F32).unwrap();
    let y = g.matmul(x, w).unwrap();
    let s = g.sum(y, &[1], false).unwrap();
    g.set_outputs(&[s]).unwrap();
    (g, y)
}

fn too_large(r: Result<Graph, OptError>) -> (NodeId, String, u64, u64, String) {
    let e = r.unwrap_err();
    let msg = e.to_string();
    match e {
        OptError::TooLarge { node, op, bytes, limit, .. } => (node, op, bytes, limit, msg),
        other => panic!("expected TooLarge, got {other:?}"),
    }
}

#[test]
fn an_intermediate_past_the_limit_is_refused_with_node_op_type_bytes_and_hint() {
    for passes in [PassOptions::default(), PassOptions::none()] {
        let (g, y) = matmul_graph(0);
        let caps = cpu_with_limit(1024);
        let e = optimize(&g, &caps, &passes, None).unwrap_err();
        let OptError::TooLarge { node, ref op, bytes, limit, .. } = e else { panic!("{e:?}") };
        assert_eq!((node, op.as_str(), bytes, limit), (y, "matmul", 2048, 1024));
        let m = e.to_string();
        for part in [
            "node %2 (matmul)",
            "f32[16, 32]",
            "2048 bytes",
            "1024 bytes",
            &caps.device_name,
            "use a smaller batch or sequence, or split the op",
        ] {
            assert!(m.contains(part), "{m:?} lacks {part:?}");
        }
    }
}

#[test]
fn a_tensor_exactly_at_the_limit_passes() {
    let (g, _) = matmul_graph(0);
    let out = optimize(&g, &cpu_with_limit(2048), &PassOptions::default(), None).unwrap();
    assert!(out.nodes().iter().all(|n| n.ty.storage_bytes() <= 2048));
}

#[test]
fn the_node_id_is_the_users_even_after_dce_renumbers() {
    let (g, y) = matmul_graph(3);
    assert_eq!(y, NodeId(5));
    let e = optimize(&g, &cpu_with_limit(1024), &PassOptions::default(), None).unwrap_err();
    assert!(matches!(e, OptError::TooLarge { node, .. } if node == y), "{e:?}");
}

#[test]
fn an_input_past_the_limit_is_refused() {
    let mut g = Graph::new("big_input");
    let x = g.input("x", &[512], DType::F32).unwrap(); // 2048 bytes
    let s = g.sum(x, &[0], false).unwrap();
    g.set_outputs(&[s]).unwrap();
    let (node, op, bytes, _, _) = too_large(optimize(&g, &cpu_with_limit(1024), &PassOptions::none(), None));
    assert_eq!((node, op.as_str(), bytes), (x, "input", 2048));
}

#[test]
fn bool_counts_four_bytes_per_element() {
    let mut g = Graph::new("mask");
    let a = g.input("a", &[128], DType::F32).unwrap(); // 512 bytes
    let m = g.gt(a, a).unwrap(); // 128 bools = 512 bytes as GPU words
    g.set_outputs(&[m]).unwrap();
    optimize(&g, &cpu_with_limit(512), &PassOptions::none(), None).unwrap();
    let (node, _, bytes, _, _) = too_large(optimize(&g, &cpu_with_limit(511), &PassOptions::none(), None));
    assert_eq!((node, bytes), (a, 512));
}

#[test]
fn a_decomposition_intermediate_past_the_limit_names_the_users_op() {
    // q, k, v and the output are [1, 1, 64, 4] f32 (1 KiB); the decomposed scores are
    // [1, 1, 64, 64] (16 KiB).
    let mut g = Graph::new("attn");
    let dims = [1, 1, 64, 4];
    let q = g.input("q", &dims, DType::F32).unwrap();
    let k = g.input("k", &dims, DType::F32).unwrap();
    let v = g.input("v", &dims, DType::F32).unwrap();
    let spec = AttentionSpec::new(AttnLayout::Bhsd, MaskKind::None);
    let o = g.attention(q, k, v, None, spec).unwrap();
    g.set_outputs(&[o]).unwrap();
    let mut caps = cpu_with_limit(1024);
    optimize(&g, &caps, &PassOptions::none(), None).unwrap();
    caps.native_ops.remove(&OpKind::Attention);
    let (node, op, bytes, _, msg) = too_large(optimize(&g, &caps, &PassOptions::none(), None));
    assert_eq!(node, o);
    assert!(op.contains("from the decomposition of attention"), "{op}");
    assert!(bytes >= 64 * 64 * 4, "{bytes}");
    assert!(msg.contains("node %3 ("), "{msg}");
}

#[test]
fn a_huge_expand_is_refused_at_compile_on_the_cpu() {
    // 2^30 × 1024 f32 = 4 TiB: a valid IR shape, but more than any test machine's memory.
    let mut g = Graph::new("expand");
    let x = g.input("x", &[1, 1024], DType::F32).unwrap();
    let e = g.expand(x, &[1 << 30, 1024]).unwrap();
    let s = g.sum(e, &[0], false).unwrap();
    g.set_outputs(&[s]).unwrap();
    let cpu = CpuBackend::new();
    let r = optimize(&g, cpu.capabilities(), &PassOptions::default(), None);
    let (node, op, bytes, limit, _) = too_large(r);
    assert_eq!((node, op.as_str(), bytes), (e, "expand", 1 << 42));
    assert_eq!(limit, rlx_cpu::host_memory_bytes());
}
