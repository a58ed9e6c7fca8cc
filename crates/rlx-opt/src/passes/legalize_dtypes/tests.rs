use super::*;
use rlx_ir::{OpKind, TensorType};
use rlx_test_support::graphs::{input, one_output, param};

/// A GPU-like device: stores every dtype, computes on 32-bit words only.
fn words_only() -> Capabilities {
    let mut caps = Capabilities::everything("words");
    caps.compute_dtypes = [DType::F32, DType::I32, DType::U32, DType::Bool].into_iter().collect();
    caps
}

fn kinds(g: &Graph) -> Vec<OpKind> {
    g.nodes().iter().map(|n| n.op.kind()).collect()
}

/// Every non-cast op of `g` computes in a dtype `caps` computes.
fn computes_only_words(g: &Graph, caps: &Capabilities) -> bool {
    g.nodes().iter().all(|n| {
        let ok = |t: &TensorType| caps.compute_dtypes.contains(&t.dtype);
        n.op.is_leaf()
            || matches!(n.op, Op::Cast(_))
            || n.op.is_view()
            || (ok(&n.ty) && n.inputs.iter().all(|&i| ok(g.ty(i).unwrap())))
    })
}

#[test]
fn f16_matmul_is_wrapped_in_casts() {
    let (g, _, y) = one_output(
        "mm16",
        [input("a", &[2, 3], DType::F16), param("b", &[3, 4], DType::F16)],
        |g, [a, b]| g.matmul(a, b),
    );
    let caps = words_only();
    let (l, from) = legalize_dtypes_with_origin(&g, &caps, &|id| id).unwrap();
    use OpKind::*;
    assert_eq!(kinds(&l), [Input, Param, Cast, Cast, MatMul, Cast]);
    assert_eq!(l.ty(NodeId(4)).unwrap().dtype, DType::F32);
    assert_eq!(l.ty(l.outputs()[0]).unwrap(), g.ty(y).unwrap());
    assert_eq!(l.inputs()[0].2.dtype, DType::F16);
    // The casts and the matmul all came from the user's matmul.
    assert_eq!(from, [NodeId(0), NodeId(1), y, y, y, y]);
    assert!(computes_only_words(&l, &caps));
}

#[test]
fn leaves_casts_and_views_stay_but_data_movement_is_wrapped() {
    let mut g = Graph::new("moves");
    let x = g.input("x", &[2, 3], DType::BF16).unwrap();
    let r = g.reshape(x, &[3, 2]).unwrap();
    let t = g.transpose(r, 0, 1).unwrap();
    let c = g.cast(t, DType::U8).unwrap();
    g.set_outputs(&[c, r]).unwrap();
    let caps = words_only();
    let l = legalize_dtypes(&g, &caps).unwrap();
    use OpKind::*;
    assert_eq!(kinds(&l), [Input, Reshape, Cast, Permute, Cast, Cast]);
    assert_eq!(l.ty(l.outputs()[0]).unwrap().dtype, DType::U8);
    assert_eq!(l.ty(l.outputs()[1]).unwrap().dtype, DType::BF16);
    assert!(computes_only_words(&l, &caps));
}

#[test]
fn u8_computes_in_i32_and_compare_needs_no_cast_back() {
    let mut g = Graph::new("u8");
    let a = g.input("a", &[5], DType::U8).unwrap();
    let b = g.input("b", &[5], DType::U8).unwrap();
    let s = g.add(a, b).unwrap();
    let m = g.compare(rlx_ir::CompareOp::Lt, a, b).unwrap();
    g.set_outputs(&[s, m]).unwrap();
    let l = legalize_dtypes(&g, &words_only()).unwrap();
    use OpKind::*;
    // a and b are widened once each and shared by the add and the compare.
    assert_eq!(kinds(&l), [Input, Input, Cast, Cast, Binary, Cast, Compare]);
    assert_eq!(l.ty(NodeId(4)).unwrap().dtype, DType::I32);
    assert_eq!(l.ty(l.outputs()[0]).unwrap().dtype, DType::U8);
    assert_eq!(l.ty(l.outputs()[1]).unwrap().dtype, DType::Bool);
}

#[test]
fn constant_operands_are_converted_not_cast() {
    let mut g = Graph::new("const16");
    let x = g.input("x", &[3], DType::F16).unwrap();
    let k = g.constant(Tensor::from_f64([3], DType::F16, &[0.5, -2.0, 65504.0]).unwrap()).unwrap();
    let y = g.mul(x, k).unwrap();
    g.set_outputs(&[y]).unwrap();
    let l = legalize_dtypes(&g, &words_only()).unwrap();
    let wide = l
        .nodes()
        .iter()
        .find_map(|n| match &n.op {
            Op::Constant(t) if t.dtype() == DType::F32 => Some(t.to_f64_vec()),
            _ => None,
        })
        .unwrap();
    assert_eq!(wide, [0.5, -2.0, 65504.0]);
    assert_eq!(l.nodes().iter().filter(|n| matches!(n.op, Op::Cast(_))).count(), 2);
}

#[test]
fn a_device_that_computes_everything_gets_the_graph_back() {
    let g = rlx_test_support::exp_graph("cpu", &[4], DType::F16);
    let (l, from) = legalize_dtypes_with_origin(&g, &Capabilities::everything("cpu"), &|id| id).unwrap();
    assert_eq!(rlx_ir::dump(&l), rlx_ir::dump(&g));
    assert_eq!(from, [NodeId(0), NodeId(1)]);
}

#[test]
fn no_wide_dtype_is_unsupported_naming_the_users_node() {
    let mut g = Graph::new("u8");
    let a = g.input("a", &[5], DType::U8).unwrap();
    let s = g.add(a, a).unwrap();
    g.set_outputs(&[s]).unwrap();
    let mut caps = words_only();
    caps.compute_dtypes.remove(&DType::I32);
    let err = legalize_dtypes_with_origin(&g, &caps, &|id| NodeId(id.0 + 10)).unwrap_err();
    match &err {
        OptError::Unsupported { op, node, .. } => assert_eq!((op.as_str(), *node), ("add", NodeId(11))),
        other => panic!("wrong error {other}"),
    }
    assert!(err.to_string().contains("u8"), "{err}");
}

#[test]
fn packed_row_gathers_stay_unwidened_where_the_device_moves_words() {
    let build = |cols: usize| {
        let mut g = Graph::new("embed");
        let table = g.input("table", &[10, cols], DType::F16).unwrap();
        let ids = g.input("ids", &[3], DType::I32).unwrap();
        let rows = g.gather(table, ids, 0).unwrap();
        g.set_outputs(&[rows]).unwrap();
        g
    };
    let caps = Capabilities { packed_rows: true, ..words_only() };
    // Even rows: the gather moves the f16 words as they are, no cast at all.
    let out = legalize_dtypes(&build(6), &caps).unwrap();
    assert!(!kinds(&out).contains(&OpKind::Cast), "{:?}", kinds(&out));
    // Odd rows, or a device without the ability: widened, gathered, rounded back.
    for (g, c) in [(build(5), caps.clone()), (build(6), words_only())] {
        let out = legalize_dtypes(&g, &c).unwrap();
        assert_eq!(kinds(&out).iter().filter(|k| **k == OpKind::Cast).count(), 2, "{:?}", kinds(&out));
    }
}

#[test]
fn packed_quantized_weights_stay_packed_and_only_x_widens() {
    let mut g = Graph::new("q");
    let x = g.input("x", &[2, 32], DType::F16).unwrap();
    let w = g.param("w", &[3, 34], DType::U8).unwrap();
    let y = g.quant_matmul(x, w, rlx_ir::QuantType::Q8_0).unwrap();
    let t = g.param("t", &[5, 18], DType::U8).unwrap();
    let ids = g.input("ids", &[4], DType::I32).unwrap();
    let e = g.quant_gather(t, ids, rlx_ir::QuantType::Q4_0).unwrap();
    g.set_outputs(&[y, e]).unwrap();
    let l = legalize_dtypes(&g, &words_only()).unwrap();
    use OpKind::*;
    assert_eq!(kinds(&l), [Input, Param, Cast, QuantMatMul, Param, Input, QuantGather]);
    let qm = l.node(NodeId(3)).unwrap();
    assert_eq!(l.ty(qm.inputs[0]).unwrap().dtype, DType::F32);
    assert_eq!(qm.inputs[1], NodeId(1));
    assert_eq!(l.node(NodeId(6)).unwrap().inputs, [NodeId(4), NodeId(5)]);
}

/// A one-step KV cache in f16 under f32 queries: the new k row is rounded to f16, written into
/// the state, and attention reads the state.
fn half_cache(d: usize) -> Graph {
    let mut g = Graph::new("cache");
    let q = g.input("q", &[1, 1, 1, d], DType::F32).unwrap();
    let k = g.input("k", &[1, 1, 1, d], DType::F32).unwrap();
    let off = g.input("off", &[1], DType::I32).unwrap();
    let state = g.state("keys", &[1, 8, 1, d], DType::F16).unwrap();
    let k16 = g.cast(k, DType::F16).unwrap();
    let cache = g.write_rows(state, k16, off, 1).unwrap();
    let spec = rlx_ir::AttentionSpec::new(rlx_ir::AttnLayout::Bshd, rlx_ir::MaskKind::None);
    let y = g.attention(q, cache, cache, None, spec).unwrap();
    g.set_outputs(&[y]).unwrap();
    g
}

#[test]
fn a_half_kv_cache_is_written_and_read_as_stored_where_the_device_can() {
    let caps = Capabilities { packed_rows: true, half_kv_attention: true, ..words_only() };
    let out = legalize_dtypes(&half_cache(4), &caps).unwrap();
    use OpKind::*;
    // Only the rounding of the new row: the write moves f16 words, attention reads them.
    assert_eq!(kinds(&out), [Input, Input, Input, State, Cast, WriteRows, Attention]);
    // Rows of an odd count of halves cannot move as words: the state write is refused, with
    // the rule in the message, rather than written to a widened copy.
    let err = legalize_dtypes(&half_cache(3), &caps).unwrap_err();
    assert!(err.to_string().contains("even count of 2-byte elements"), "{err}");
    // Without the attention ability the cache widens before attention (one cast for both
    // operands), and the output stays f32.
    let caps = Capabilities { half_kv_attention: false, ..caps };
    let out = legalize_dtypes(&half_cache(4), &caps).unwrap();
    assert_eq!(kinds(&out), [Input, Input, Input, State, Cast, WriteRows, Cast, Attention]);
}
