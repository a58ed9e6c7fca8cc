use crate::{assert_msg, f32_in, on_copy, tt, ty};
use rlx_ir::{DType, Graph, IrError, Op};

#[test]
fn reshape_needs_same_numel() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[2, 3]);
    let y = g.reshape(x, &[3, 1, 2]).unwrap();
    assert_eq!(ty(&g, y), tt(&[3, 1, 2], DType::F32));
    let e = g.reshape(x, &[4]).unwrap_err();
    assert!(matches!(e, IrError::ShapeMismatch { op: "reshape", .. }));
    assert_msg(&e, &["reshape", "[2, 3]", "[4]", "6", "4"]);
}

#[test]
fn permute_and_transpose() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[2, 3, 4]);
    assert_eq!(on_copy(&g, |g| g.permute(x, &[2, 0, 1])), tt(&[4, 2, 3], DType::F32));
    let t = g.transpose(x, -1, 0).unwrap();
    assert_eq!(ty(&g, t), tt(&[4, 3, 2], DType::F32));
    assert_eq!(g.node(t).unwrap().op, Op::Permute(vec![2, 1, 0]));
    for bad in [&[0, 0, 1][..], &[0, 1][..], &[0, 1, 3][..]] {
        let e = g.permute(x, bad).unwrap_err();
        assert!(matches!(e, IrError::Attribute { op: "permute", attr: "perm", .. }));
        assert_msg(&e, &["permute", "[2, 3, 4]", "permutation"]);
    }
    assert!(matches!(g.transpose(x, 0, 3), Err(IrError::Attribute { op: "transpose", .. })));
}

#[test]
fn slice_and_narrow() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[4, 5]);
    assert_eq!(on_copy(&g, |g| g.slice(x, -1, 0, 5, 2)), tt(&[4, 3], DType::F32));
    assert_eq!(on_copy(&g, |g| g.slice(x, 0, 1, 4, 2)), tt(&[2, 5], DType::F32));
    assert_eq!(on_copy(&g, |g| g.slice(x, 1, 3, 3, 1)), tt(&[4, 0], DType::F32));
    let n = g.narrow(x, 1, 1, 3).unwrap();
    assert_eq!(ty(&g, n), tt(&[4, 3], DType::F32));
    assert_eq!(g.node(n).unwrap().op, Op::Slice { axis: 1, start: 1, end: 4, step: 1 });
    let e = g.slice(x, 1, 0, 6, 1).unwrap_err();
    assert!(matches!(e, IrError::Attribute { op: "slice", attr: "range", .. }));
    assert_msg(&e, &["slice", "[4, 5]", "start ≤ end ≤ 5"]);
    assert!(matches!(g.slice(x, 1, 3, 2, 1), Err(IrError::Attribute { attr: "range", .. })));
    assert!(matches!(g.slice(x, 1, 0, 2, 0), Err(IrError::Attribute { attr: "step", .. })));
    assert!(g.narrow(x, 0, 2, 3).is_err());
    assert!(g.narrow(x, 0, usize::MAX, 3).is_err());
}

#[test]
fn concat_checks_other_dims() {
    let mut g = Graph::new("g");
    let a = f32_in(&mut g, "a", &[2, 3]);
    let b = f32_in(&mut g, "b", &[2, 5]);
    let y = g.concat(&[a, b, a], -1).unwrap();
    assert_eq!(ty(&g, y), tt(&[2, 11], DType::F32));
    assert_eq!(on_copy(&g, |g| g.concat(&[a], 0)), tt(&[2, 3], DType::F32));
    let e = g.concat(&[a, b], 0).unwrap_err();
    assert!(matches!(e, IrError::ShapeMismatch { op: "concat", .. }));
    assert_msg(&e, &["concat", "[2, 3] and [2, 5]", "operand 1"]);
    let c = f32_in(&mut g, "c", &[2, 3, 1]);
    assert!(matches!(g.concat(&[a, c], 1), Err(IrError::ShapeMismatch { .. })));
    let i = g.input("i", &[2, 3], DType::I32).unwrap();
    assert!(matches!(g.concat(&[a, i], 0), Err(IrError::DType { op: "concat", operand: 1, .. })));
    assert!(matches!(g.concat(&[], 0), Err(IrError::Arity { op: "concat", .. })));
}

#[test]
fn expand_follows_numpy() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[3, 1]);
    assert_eq!(on_copy(&g, |g| g.expand(x, &[2, 3, 4])), tt(&[2, 3, 4], DType::F32));
    assert_eq!(on_copy(&g, |g| g.broadcast_to(x, &[3, 7])), tt(&[3, 7], DType::F32));
    let e = g.expand(x, &[4, 4]).unwrap_err();
    assert!(matches!(e, IrError::ShapeMismatch { op: "expand", .. }));
    assert_msg(&e, &["expand", "[3, 1] and [4, 4]"]);
    assert!(g.expand(x, &[3]).is_err());
}

#[test]
fn gather_index_select_embedding() {
    let mut g = Graph::new("g");
    let d = f32_in(&mut g, "d", &[10, 4]);
    let idx = g.input("idx", &[2, 3], DType::I32).unwrap();
    assert_eq!(on_copy(&g, |g| g.gather(d, idx, 0)), tt(&[2, 3, 4], DType::F32));
    assert_eq!(on_copy(&g, |g| g.gather(d, idx, -1)), tt(&[10, 2, 3], DType::F32));
    assert_eq!(on_copy(&g, |g| g.embedding(d, idx)), tt(&[2, 3, 4], DType::F32));
    let one = g.input("one", &[6], DType::I32).unwrap();
    assert_eq!(on_copy(&g, |g| g.index_select(d, 1, one)), tt(&[10, 6], DType::F32));
    let e = g.index_select(d, 0, idx).unwrap_err();
    assert!(matches!(e, IrError::ShapeMismatch { op: "gather", .. }));
    assert_msg(&e, &["gather", "[10, 4] and [2, 3]", "1-D"]);
    let fidx = f32_in(&mut g, "fidx", &[3]);
    let e = g.gather(d, fidx, 0).unwrap_err();
    assert!(matches!(e, IrError::DType { op: "gather", operand: 1, got: DType::F32, .. }));
    assert!(matches!(g.index_select(d, 0, fidx), Err(IrError::DType { .. })));
    assert!(matches!(g.gather(d, idx, 2), Err(IrError::Attribute { op: "gather", .. })));
}

#[test]
fn scatter_add_is_the_transpose_of_gather() {
    let mut g = Graph::new("g");
    let ids = g.input("ids", &[2, 3], DType::I32).unwrap();
    let src = f32_in(&mut g, "src", &[5, 2, 3, 4]);
    assert_eq!(on_copy(&g, |g| g.scatter_add(ids, src, 1, 10)), tt(&[5, 10, 4], DType::F32));
    assert_eq!(on_copy(&g, |g| g.scatter_add(ids, src, -2, 10)), tt(&[5, 10, 4], DType::F32));
    let emb = f32_in(&mut g, "dy", &[2, 3, 8]);
    assert_eq!(on_copy(&g, |g| g.scatter_add(ids, emb, 0, 30522)), tt(&[30522, 8], DType::F32));
    let half = g.input("h", &[2, 3, 4], DType::F16).unwrap();
    assert_eq!(on_copy(&g, |g| g.scatter_add(ids, half, 0, 7)), tt(&[7, 4], DType::F16));
    // Rank-0 ids (one row) add an axis, as a gather by them removed one.
    let one = g.input("one", &[], DType::I32).unwrap();
    assert_eq!(on_copy(&g, |g| g.scatter_add(one, half, 1, 7)), tt(&[2, 7, 3, 4], DType::F16));
    let y = g.scatter_add(ids, src, 1, 10).unwrap();
    assert!(matches!(g.node(y).unwrap().op, Op::ScatterAdd { axis: 1, len: 10 }));
    // The exact transpose: gathering the result by the same ids gives src's shape back.
    assert_eq!(on_copy(&g, |g| g.gather(y, ids, 1)), tt(&[5, 2, 3, 4], DType::F32));
}

#[test]
fn scatter_add_errors_name_the_problem() {
    let mut g = Graph::new("g");
    let ids = g.input("ids", &[2, 3], DType::I32).unwrap();
    let src = f32_in(&mut g, "src", &[5, 2, 3, 4]);
    let e = g.scatter_add(ids, src, 3, 10).unwrap_err();
    assert!(matches!(e, IrError::Attribute { op: "scatter_add", attr: "axis", .. }), "{e}");
    assert_msg(&e, &["axis 3", "rank 3"]);
    let e = g.scatter_add(ids, src, 0, 10).unwrap_err();
    assert!(matches!(e, IrError::ShapeMismatch { op: "scatter_add", .. }), "{e}");
    assert_msg(&e, &["[5, 2]", "[2, 3]", "axes 0..2"]);
    let e = g.scatter_add(ids, src, 1, 0).unwrap_err();
    assert!(matches!(e, IrError::Attribute { op: "scatter_add", attr: "len", .. }), "{e}");
    let fids = f32_in(&mut g, "fids", &[2, 3]);
    let e = g.scatter_add(fids, src, 1, 10).unwrap_err();
    assert!(matches!(e, IrError::DType { op: "scatter_add", operand: 0, got: DType::F32, .. }), "{e}");
    assert_msg(&e, &["i32"]);
    let iv = g.input("iv", &[2, 3], DType::I32).unwrap();
    let e = g.scatter_add(ids, iv, 0, 10).unwrap_err();
    assert!(matches!(e, IrError::DType { op: "scatter_add", operand: 1, got: DType::I32, .. }), "{e}");
    let big = g.input("big", &[2, 3, 4, 5], DType::I32).unwrap();
    let e = g.scatter_add(big, src, 0, 10).unwrap_err();
    assert!(matches!(e, IrError::ShapeMismatch { op: "scatter_add", .. }), "{e}");
    // A failed build leaves the graph as it was.
    let n = g.len();
    assert!(g.scatter_add(ids, src, 3, 10).is_err());
    assert_eq!(g.len(), n);
}

#[test]
fn pad_and_reverse() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[2, 3]);
    let y = g.pad(x, &[(1, 0), (2, 3)], 0.5).unwrap();
    assert_eq!(ty(&g, y), tt(&[3, 8], DType::F32));
    let e = g.pad(x, &[(1, 1)], 0.0).unwrap_err();
    assert!(matches!(e, IrError::Attribute { op: "pad", attr: "pads", .. }));
    assert_msg(&e, &["pad", "[2, 3]", "one pair per dim"]);
    let r = g.reverse(x, &[-1, 0]).unwrap();
    assert_eq!(ty(&g, r), tt(&[2, 3], DType::F32));
    assert_eq!(g.node(r).unwrap().op, Op::Reverse { axes: vec![0, 1] });
    assert!(matches!(g.reverse(x, &[2]), Err(IrError::Attribute { op: "reverse", .. })));
}
