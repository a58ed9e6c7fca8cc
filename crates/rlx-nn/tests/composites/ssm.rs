use crate::{assert_msg, f32_in, on_copy, tt};
use rlx_ir::{DType, Graph, Op, ScanOutput};
use rlx_nn::prelude::*;

#[test]
fn selective_scan_shapes_and_composite() {
    let mut g = Graph::new("g");
    let u = f32_in(&mut g, "u", &[2, 6, 9]);
    let delta = f32_in(&mut g, "delta", &[2, 6, 9]);
    let a = g.param("A", &[6, 4], DType::F32).unwrap();
    let b3 = f32_in(&mut g, "B3", &[2, 4, 9]);
    let b4 = f32_in(&mut g, "B4", &[2, 3, 4, 9]);
    let d = g.param("D", &[6], DType::F32).unwrap();
    let z = f32_in(&mut g, "z", &[2, 6, 9]);
    let opts = SelectiveScanOpts { d: Some(d), z: Some(z), delta_bias: Some(d), delta_softplus: true };
    assert_eq!(on_copy(&g, |g| g.selective_scan(u, delta, a, b3, b3, &opts)), tt(&[2, 6, 9], DType::F32));
    assert_eq!(
        on_copy(&g, |g| g.selective_scan_op(u, delta, a, b4, b4, false, ScanOutput::LastState)),
        tt(&[2, 6, 4], DType::F32)
    );
    let (y, last) = g.selective_scan_with_state(u, delta, a, b4, b4, &opts).unwrap();
    let scans: Vec<_> = g.nodes().iter().filter(|n| matches!(n.op, Op::SelectiveScan { .. })).collect();
    assert_eq!(scans.len(), 2);
    assert!(scans.iter().all(|n| matches!(n.op, Op::SelectiveScan { delta_softplus: true, .. })));
    assert_eq!(g.ty(last).unwrap(), &tt(&[2, 6, 4], DType::F32));
    assert!(rlx_ir::dump(&g).contains("output=last_state"), "{}", rlx_ir::dump(&g));
    g.set_outputs(&[y, last]).unwrap();
    rlx_ir::verify(&g).unwrap();
}

#[test]
fn selective_scan_composite_errors_leave_no_nodes() {
    let mut g = Graph::new("g");
    let u = f32_in(&mut g, "u", &[2, 6, 9]);
    let a = g.param("A", &[6, 4], DType::F32).unwrap();
    let b1 = f32_in(&mut g, "B1", &[2, 1, 4, 9]);
    let before = g.len();
    let d2 = g.param("D2", &[6, 1], DType::F32).unwrap();
    let opts = SelectiveScanOpts { d: Some(d2), ..Default::default() };
    assert_msg(&g.selective_scan(u, u, a, b1, b1, &opts).unwrap_err(), &["1-D [channels]"]);
    assert_eq!(g.len(), before + 1, "a failed composite leaves no nodes");
}

#[test]
fn gated_delta_rule_composite_scales_and_normalises() {
    let mut g = Graph::new("g");
    let q = f32_in(&mut g, "q", &[2, 7, 3, 8]);
    let v = f32_in(&mut g, "v", &[2, 7, 3, 5]);
    let gg = f32_in(&mut g, "g", &[2, 7, 3]);
    let opts = GatedDeltaOpts { scale: None, l2norm_qk: true };
    assert_eq!(on_copy(&g, |g| g.gated_delta_rule(q, q, v, gg, gg, &opts)), tt(&[2, 7, 3, 5], DType::F32));
    let o = g.gated_delta_rule(q, q, v, gg, gg, &GatedDeltaOpts::default()).unwrap();
    let scale = g.nodes().iter().find_map(|n| match n.op {
        Op::GatedDeltaRule { scale, .. } => Some(scale),
        _ => None,
    });
    assert_eq!(scale, Some(1.0 / 8f32.sqrt()));
    g.set_outputs(&[o]).unwrap();
    rlx_ir::verify(&g).unwrap();
}

#[test]
fn ssd_scan_shapes_and_errors() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[2, 11, 4, 3]);
    let dt = f32_in(&mut g, "dt", &[2, 11, 4]);
    let a = g.param("A", &[4], DType::F32).unwrap();
    let b = f32_in(&mut g, "B", &[2, 11, 2, 5]);
    let d = g.param("D", &[4], DType::F32).unwrap();
    let opts = SsdOpts { d: Some(d), dt_bias: Some(d), dt_softplus: true };
    assert_eq!(on_copy(&g, |g| g.ssd_scan(x, dt, a, b, b, 4, &opts)), tt(&[2, 11, 4, 3], DType::F32));
    let y = g.ssd_scan(x, dt, a, b, b, 16, &SsdOpts::default()).unwrap();
    assert!(g.nodes().iter().any(|n| matches!(n.op, Op::Cumsum { .. })));
    assert!(g.nodes().iter().any(|n| matches!(n.op, Op::MatMul { .. })));
    g.set_outputs(&[y]).unwrap();
    rlx_ir::verify(&g).unwrap();
    let before = g.len();
    assert_msg(&g.ssd_scan(x, dt, a, b, b, 0, &opts).unwrap_err(), &["ssd_scan", "chunk 0"]);
    let b3 = f32_in(&mut g, "B3", &[2, 11, 3, 5]);
    assert_msg(&g.ssd_scan(x, dt, a, b3, b3, 4, &opts).unwrap_err(), &["3 groups must divide 4 heads"]);
    let a3 = g.param("A3", &[3], DType::F32).unwrap();
    assert_msg(&g.ssd_scan(x, dt, a3, b, b, 4, &opts).unwrap_err(), &["A [4]"]);
    assert_eq!(g.len(), before + 2, "failed composites leave no nodes");
}

#[test]
fn softplus_is_a_composite_of_native_ops() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[3]);
    let y = g.softplus(x).unwrap();
    assert_eq!(g.ty(y).unwrap(), &tt(&[3], DType::F32));
    assert!(g.nodes().iter().any(|n| matches!(n.op, Op::Where)));
}
