use crate::{assert_msg, f32_in, ty};
use rlx_ir::{DType, Graph, IrError, NodeId, OpKind};
use rlx_nn::prelude::*;

/// PyTorch-shaped weights for `layers` × `dirs` directions of a cell with `gates` gates (input
/// names numbered so that one graph holds several sets).
fn weights(
    g: &mut Graph,
    gates: usize,
    layers: usize,
    dirs: usize,
    input: usize,
    hidden: usize,
) -> Vec<RnnWeights> {
    let set = g.len();
    let mut out = Vec::new();
    for l in 0..layers {
        for d in 0..dirs {
            let sfx = format!("l{l}{}_{set}", if d == 1 { "_reverse" } else { "" });
            let in_size = if l == 0 { input } else { dirs * hidden };
            let w_ih = f32_in(g, &format!("weight_ih_{sfx}"), &[gates * hidden, in_size]);
            let w_hh = f32_in(g, &format!("weight_hh_{sfx}"), &[gates * hidden, hidden]);
            let b_ih = Some(f32_in(g, &format!("bias_ih_{sfx}"), &[gates * hidden]));
            out.push(RnnWeights { w_ih, w_hh, b_ih, b_hh: None });
        }
    }
    out
}

fn dims(g: &Graph, id: NodeId) -> Vec<usize> {
    ty(g, id).shape.dims().to_vec()
}

#[test]
fn lstm_outputs_have_pytorch_shapes() {
    let mut g = Graph::new("lstm");
    let x = f32_in(&mut g, "x", &[3, 5, 7]); // batch_first: [B = 3, T = 5, I = 7]
    let w = weights(&mut g, 4, 2, 2, 7, 6);
    let cfg = RnnConfig { num_layers: 2, bidirectional: true, batch_first: true };
    let h0 = f32_in(&mut g, "h0", &[4, 3, 6]);
    let y = g.lstm(x, cfg, &w, Some(h0), None).unwrap();
    assert_eq!(dims(&g, y.output), [3, 5, 12]);
    assert_eq!(dims(&g, y.h_n), [4, 3, 6]);
    assert_eq!(dims(&g, y.c_n.unwrap()), [4, 3, 6]);
    // One input projection per layer and direction, one h·W_hhᵀ per step.
    let matmuls = g.nodes().iter().filter(|n| n.op.kind() == OpKind::MatMul).count();
    assert_eq!(matmuls, 2 * 2 * (1 + 5));
}

#[test]
fn gru_and_rnn_have_no_cell_state() {
    let mut g = Graph::new("gru");
    let x = f32_in(&mut g, "x", &[4, 2, 3]);
    let w = weights(&mut g, 3, 1, 1, 3, 5);
    let y = g.gru(x, RnnConfig::new(), &w, None).unwrap();
    assert_eq!(dims(&g, y.output), [4, 2, 5]);
    assert_eq!(dims(&g, y.h_n), [1, 2, 5]);
    assert!(y.c_n.is_none());
    let wr = weights(&mut g, 1, 1, 2, 3, 5);
    let cfg = RnnConfig { bidirectional: true, ..RnnConfig::new() };
    let y = g.rnn(x, cfg, &wr, None, RnnActivation::Relu).unwrap();
    assert_eq!(dims(&g, y.output), [4, 2, 10]);
    assert_eq!(dims(&g, y.h_n), [2, 2, 5]);
}

#[test]
fn wrong_weights_are_named_with_both_shapes() {
    let mut g = Graph::new("bad");
    let x = f32_in(&mut g, "x", &[4, 2, 3]);
    let mut w = weights(&mut g, 4, 2, 1, 3, 5);
    // Layer 1 reads H = 5 features; give it 3 columns.
    w[1].w_ih = f32_in(&mut g, "bad_ih", &[20, 3]);
    let cfg = RnnConfig { num_layers: 2, ..RnnConfig::new() };
    let len = g.len();
    let e = g.lstm(x, cfg, &w, None, None).unwrap_err();
    assert!(matches!(e, IrError::ShapeMismatch { op: "lstm", .. }), "{e}");
    assert_msg(&e, &["weight_ih_l1", "[20, 5] and [20, 3]", "input 5"]);
    assert_eq!(g.len(), len, "a failed builder leaves no nodes");
    // weight_hh_l0 decides the hidden size and must be [G·H, H].
    let mut w0 = weights(&mut g, 3, 1, 1, 3, 5);
    w0[0].w_hh = f32_in(&mut g, "bad_hh", &[12, 5]);
    let e = g.gru(x, RnnConfig::new(), &w0, None).unwrap_err();
    assert_msg(&e, &["gru", "weight_hh_l0", "[3·hidden, hidden]", "[12, 5]"]);
    // A bias of the wrong length, on the reverse direction.
    let mut w2 = weights(&mut g, 1, 1, 2, 3, 4);
    w2[1].b_hh = Some(f32_in(&mut g, "bad_b", &[5]));
    let cfg = RnnConfig { bidirectional: true, ..RnnConfig::new() };
    let e = g.rnn(x, cfg, &w2, None, RnnActivation::Tanh).unwrap_err();
    assert_msg(&e, &["rnn_tanh", "bias_hh_l0_reverse", "[4] and [5]"]);
}

#[test]
fn sequence_count_and_state_errors() {
    let mut g = Graph::new("bad");
    let w = weights(&mut g, 4, 1, 1, 3, 5);
    let empty = f32_in(&mut g, "empty", &[0, 2, 3]);
    let e = g.lstm(empty, RnnConfig::new(), &w, None, None).unwrap_err();
    assert!(matches!(e, IrError::Attribute { op: "lstm", attr: "sequence length", .. }), "{e}");
    assert_msg(&e, &["T = 0"]);
    let x = f32_in(&mut g, "x", &[4, 2, 3]);
    let two = RnnConfig { num_layers: 2, ..RnnConfig::new() };
    let e = g.lstm(x, two, &w, None, None).unwrap_err();
    assert!(matches!(e, IrError::Arity { op: "lstm", got: 1, .. }), "{e}");
    assert_msg(&e, &["2 weight sets"]);
    let h0 = f32_in(&mut g, "h0", &[1, 3, 5]);
    let e = g.lstm(x, RnnConfig::new(), &w, Some(h0), None).unwrap_err();
    assert_msg(&e, &["lstm", "h0", "[1, 2, 5] and [1, 3, 5]"]);
    let wg = weights(&mut g, 3, 1, 1, 3, 5);
    // GRU weights (3 gates) handed to lstm: weight_hh_l0 names the gate count it expects.
    let e = g.lstm(x, RnnConfig::new(), &wg, None, None).unwrap_err();
    assert_msg(&e, &["lstm", "weight_hh_l0", "[4·hidden, hidden]", "[15, 5]"]);
    let c0 = f32_in(&mut g, "c0", &[2, 2, 5]);
    let e = g.lstm(x, RnnConfig::new(), &w, None, Some(c0)).unwrap_err();
    assert_msg(&e, &["lstm", "c0", "[1, 2, 5] and [2, 2, 5]"]);
    let flat = f32_in(&mut g, "flat", &[4, 3]);
    assert_msg(&g.gru(flat, RnnConfig::new(), &wg, None).unwrap_err(), &["gru", "[seq, batch, input]"]);
    let half = g.input("half", &[4, 2, 3], DType::F16).unwrap();
    assert!(matches!(g.gru(half, RnnConfig::new(), &wg, None), Err(IrError::DType { op: "gru", .. })));
}
