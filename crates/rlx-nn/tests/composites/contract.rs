//! dot_general, einsum and lora_matmul: output types, the ops they lower to (no permute or
//! reshape where the dims are already in place) and their errors.

use crate::{assert_msg, f32_in, tt, ty};
use rlx_ir::{verify, DType, Graph, IrError, NodeId, Op, OpKind};
use rlx_nn::prelude::*;

/// The op kinds a builder appended after the graph's first `from` nodes.
fn added(g: &Graph, from: usize) -> Vec<OpKind> {
    g.nodes()[from..].iter().map(|n| n.op.kind()).collect()
}

fn matmul_flags(g: &Graph, id: NodeId) -> (bool, bool) {
    match g.node(id).unwrap().op {
        Op::MatMul { transpose_a, transpose_b } => (transpose_a, transpose_b),
        ref op => panic!("not a matmul: {op:?}"),
    }
}

#[test]
fn dot_general_common_layouts_are_one_matmul() {
    // (lhs dims, rhs dims, lhs_batch, rhs_batch, lhs_contract, rhs_contract, output, flags)
    type Row = (&'static [usize], &'static [usize], [&'static [usize]; 4], &'static [usize], (bool, bool));
    let rows: [Row; 5] = [
        (&[5, 7], &[7, 3], [&[], &[], &[1], &[0]], &[5, 3], (false, false)),
        (&[5, 7], &[3, 7], [&[], &[], &[1], &[1]], &[5, 3], (false, true)),
        (&[7, 5], &[7, 3], [&[], &[], &[0], &[0]], &[5, 3], (true, false)),
        (&[2, 5, 7], &[2, 7, 3], [&[0], &[0], &[2], &[1]], &[2, 5, 3], (false, false)),
        (&[2, 4, 5, 8], &[2, 4, 6, 8], [&[0, 1], &[0, 1], &[3], &[3]], &[2, 4, 5, 6], (false, true)),
    ];
    for (ld, rd, [lb, rb, lc, rc], out, flags) in rows {
        let mut g = Graph::new("g");
        let l = f32_in(&mut g, "l", ld);
        let r = f32_in(&mut g, "r", rd);
        let y = g.dot_general(l, r, lb, rb, lc, rc).unwrap();
        assert_eq!(ty(&g, y), tt(out, DType::F32), "{ld:?} {rd:?}");
        assert_eq!(added(&g, 2), [OpKind::MatMul], "{ld:?} {rd:?}: a needless copy");
        assert_eq!(matmul_flags(&g, y), flags, "{ld:?} {rd:?}");
    }
}

#[test]
fn dot_general_permutes_and_reshapes_only_when_needed() {
    // Two contracted dims in place: a reshape (view) per operand, one for the output.
    let mut g = Graph::new("g");
    let l = f32_in(&mut g, "l", &[3, 4, 5]);
    let r = f32_in(&mut g, "r", &[4, 5, 6]);
    let y = g.dot_general(l, r, &[], &[], &[1, 2], &[0, 1]).unwrap();
    assert_eq!(ty(&g, y), tt(&[3, 6], DType::F32));
    assert_eq!(added(&g, 2), [OpKind::Reshape, OpKind::Reshape, OpKind::MatMul]);
    // A batch dim last on the lhs: one permute of the lhs, nothing else.
    let mut g = Graph::new("g");
    let l = f32_in(&mut g, "l", &[4, 5, 3]);
    let r = f32_in(&mut g, "r", &[3, 6, 4]);
    let y = g.dot_general(l, r, &[2], &[0], &[0], &[2]).unwrap();
    assert_eq!(ty(&g, y), tt(&[3, 5, 6], DType::F32));
    assert_eq!(added(&g, 2), [OpKind::Permute, OpKind::MatMul]);
    // No contracted dim: an outer product through K = 1.
    let mut g = Graph::new("g");
    let l = f32_in(&mut g, "l", &[5]);
    let r = f32_in(&mut g, "r", &[3]);
    let y = g.dot_general(l, r, &[], &[], &[], &[]).unwrap();
    assert_eq!(ty(&g, y), tt(&[5, 3], DType::F32));
    g.set_outputs(&[y]).unwrap();
    verify(&g).unwrap();
}

#[test]
fn dot_general_errors_name_the_axes_and_leave_no_nodes() {
    let mut g = Graph::new("g");
    let l = f32_in(&mut g, "l", &[5, 7]);
    let r = f32_in(&mut g, "r", &[6, 3]);
    let e = g.dot_general(l, r, &[], &[], &[1], &[0]).unwrap_err();
    assert!(matches!(e, IrError::ShapeMismatch { op: "dot_general", .. }), "{e}");
    assert_msg(&e, &["[5, 7] and [6, 3]", "lhs axis 1 (size 7)", "rhs axis 0 (size 6)"]);
    let e = g.dot_general(l, r, &[], &[], &[2], &[0]).unwrap_err();
    assert_msg(&e, &["dot_general", "lhs axis 2 is out of range for rank 2"]);
    let e = g.dot_general(l, r, &[1], &[1], &[1], &[0]).unwrap_err();
    assert_msg(&e, &["listed twice"]);
    let e = g.dot_general(l, r, &[], &[], &[1], &[]).unwrap_err();
    assert_msg(&e, &["1 lhs contracting dims [1] but 0 rhs contracting dims []"]);
    assert_eq!(g.len(), 2);
}

#[test]
fn einsum_lowers_to_dot_general_and_permutes_only_for_the_output_order() {
    type Row = (&'static str, &'static [usize], &'static [usize], &'static [usize], &'static [OpKind]);
    let cases: [Row; 6] = [
        ("bij,bjk->bik", &[2, 5, 7], &[2, 7, 3], &[2, 5, 3], &[OpKind::MatMul]),
        ("bhqd,bhkd->bhqk", &[2, 3, 5, 8], &[2, 3, 7, 8], &[2, 3, 5, 7], &[OpKind::MatMul]),
        (" ij , jk ", &[5, 7], &[7, 3], &[5, 3], &[OpKind::MatMul]),
        ("ij,jk->ki", &[5, 7], &[7, 3], &[3, 5], &[OpKind::MatMul, OpKind::Permute]),
        (
            "ij,jk->k",
            &[5, 7],
            &[7, 3],
            &[3],
            &[OpKind::Reduce, OpKind::Reshape, OpKind::MatMul, OpKind::Reshape],
        ),
        (
            "ijb,jkb->bik",
            &[4, 6, 2],
            &[6, 3, 2],
            &[2, 4, 3],
            &[OpKind::Permute, OpKind::Permute, OpKind::MatMul],
        ),
    ];
    for (spec, ad, bd, out, ops) in cases {
        let mut g = Graph::new("g");
        let a = f32_in(&mut g, "a", ad);
        let b = f32_in(&mut g, "b", bd);
        let y = g.einsum(spec, &[a, b]).unwrap();
        assert_eq!(ty(&g, y), tt(out, DType::F32), "{spec}");
        assert_eq!(added(&g, 2), ops, "{spec}");
        g.set_outputs(&[y]).unwrap();
        verify(&g).unwrap();
    }
}

#[test]
fn einsum_refuses_what_it_does_not_support() {
    let mut g = Graph::new("g");
    let a = f32_in(&mut g, "a", &[5, 5]);
    let b = f32_in(&mut g, "b", &[5, 3]);
    let bad: [(&str, &[NodeId], &[&str]); 7] = [
        ("ii,ik->ik", &[a, b], &["'ii,ik->ik'", "repeats in operand 0", "diagonals"]),
        ("...j,jk->k", &[a, b], &["'...' (broadcast dims) is not supported"]),
        ("ij,jk,kl->il", &[a, b], &["two comma-separated terms"]),
        ("ij->ij", &[a], &["exactly two operands", "got 1"]),
        ("ij,jk->iz", &[a, b], &["output index 'z' is in neither operand"]),
        ("ijk,jk->i", &[a, b], &["operand 0 has rank 2 but its term names 3 dims"]),
        ("i1,1k->ik", &[a, b], &["'1' in operand 0 is not an index letter"]),
    ];
    for (spec, ops, parts) in bad {
        let e = g.einsum(spec, ops).unwrap_err();
        assert_msg(&e, &[&["einsum"][..], parts].concat());
    }
    let c = f32_in(&mut g, "c", &[4, 3]);
    let e = g.einsum("ij,jk->ik", &[a, c]).unwrap_err();
    assert!(matches!(e, IrError::ShapeMismatch { op: "einsum", .. }), "{e}");
    assert_msg(&e, &["index 'j' has size 5 in operand 0 but 4 in operand 1"]);
    assert_eq!(g.len(), 3, "a failed einsum left nodes behind");
}

#[test]
fn lora_matmul_is_three_matmuls_a_scale_and_an_add() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[2, 3, 16]);
    let w = f32_in(&mut g, "w", &[8, 16]);
    let a = f32_in(&mut g, "a", &[4, 16]);
    let b = f32_in(&mut g, "b", &[8, 4]);
    let y = g.lora_matmul(x, w, a, b, 0.5).unwrap();
    assert_eq!(ty(&g, y), tt(&[2, 3, 8], DType::F32));
    let kinds =
        [OpKind::MatMul, OpKind::MatMul, OpKind::Constant, OpKind::Binary, OpKind::MatMul, OpKind::Binary];
    assert_eq!(added(&g, 4), kinds);
    // The scale multiplies the rank-r intermediate [2, 3, 4].
    assert_eq!(ty(&g, NodeId(7)), tt(&[2, 3, 4], DType::F32));
    let n = g.len();
    let y1 = g.lora_matmul(x, w, a, b, 1.0).unwrap();
    assert_eq!(added(&g, n), [OpKind::MatMul, OpKind::MatMul, OpKind::MatMul, OpKind::Binary]);
    assert_eq!(ty(&g, y1), tt(&[2, 3, 8], DType::F32));
    g.set_outputs(&[y]).unwrap();
    verify(&g).unwrap();
}

#[test]
fn lora_matmul_errors_name_every_shape_and_dim() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[3, 16]);
    let w = f32_in(&mut g, "w", &[8, 16]);
    let a = f32_in(&mut g, "a", &[4, 16]);
    let b_bad = f32_in(&mut g, "b", &[8, 5]);
    let e = g.lora_matmul(x, w, a, b_bad, 2.0).unwrap_err();
    assert!(matches!(e, IrError::ShapeMismatch { op: "lora_matmul", .. }), "{e}");
    assert_msg(&e, &["[3, 16], [8, 16], [4, 16] and [8, 5]", "r = 4 (lora_A), 5 (lora_B)"]);
    let a3 = f32_in(&mut g, "a3", &[4, 16, 1]);
    let e = g.lora_matmul(x, w, a3, b_bad, 2.0).unwrap_err();
    assert_msg(&e, &["lora_matmul", "lora_A must be 2-D [r, K]"]);
    let x1 = f32_in(&mut g, "x1", &[16]);
    let b = f32_in(&mut g, "b4", &[8, 4]);
    let e = g.lora_matmul(x1, w, a, b, 2.0).unwrap_err();
    assert_msg(&e, &["rank ≥ 2"]);
    assert_eq!(g.len(), 7);
}
