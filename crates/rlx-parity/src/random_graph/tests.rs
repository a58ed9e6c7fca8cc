use super::*;
use crate::CaseCtx;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use std::collections::HashSet;

fn specs(n: usize, max_steps: usize) -> Vec<GraphSpec> {
    let mut runner = TestRunner::deterministic();
    let s = spec_strategy(max_steps);
    (0..n).map(|_| s.new_tree(&mut runner).unwrap().current()).collect()
}

#[test]
fn text_form_round_trips() {
    for spec in specs(200, 12) {
        let text = spec.to_text();
        assert_eq!(GraphSpec::parse(&text).unwrap(), spec, "{text}");
    }
    let s = GraphSpec::parse(" 3x17;unary.0.1.5,matmul.2.0.7;o1 ").unwrap();
    assert_eq!(s.dims, [3, 17]);
    assert_eq!(s.steps[1], Step { kind: Kind::MatMul, a: 2, b: 0, k: 7 });
    assert_eq!(s.to_text(), "3x17;unary.0.1.5,matmul.2.0.7;o1");
}

#[test]
fn bad_text_is_an_error_naming_the_problem() {
    for (text, want) in [
        ("3x17;unary.0.1.5", "2 ';'-separated parts, want 3"),
        ("3x0;;o0", "none zero"),
        ("3;frobnicate.0.0.0;o0", "unknown step kind 'frobnicate'"),
        ("3;unary.0.1;o0", "not kind.a.b.k"),
        ("3;unary.0.1.300;o0", "'300'"),
        ("3;;o4", "o0..o3"),
    ] {
        let e = GraphSpec::parse(text).unwrap_err().to_string();
        assert!(e.contains(want), "{text}: {e}");
    }
}

/// Every spec builds a graph that verifies, within the size limit, with data for every leaf;
/// and each op family shows up in the generated graphs.
#[test]
fn every_spec_builds_a_valid_graph_and_every_family_appears() {
    let mut kinds = HashSet::new();
    let mut ops = HashSet::new();
    for spec in specs(400, 16) {
        let mut c = CaseCtx::new(&spec.case_name());
        let outs = build(&spec, &mut c).unwrap_or_else(|e| panic!("{spec}: {e}"));
        let built = c.finish(&outs).unwrap_or_else(|e| panic!("{spec}: {e}"));
        rlx_ir::verify(&built.graph).unwrap_or_else(|e| panic!("{spec}: {e}"));
        for n in built.graph.nodes() {
            assert!(n.ty.numel() <= MAX_NUMEL, "{spec}: {} has {} elements", n.op.name(), n.ty.numel());
            ops.insert(n.op.name());
        }
        let leaves = built.graph.inputs().len() + built.graph.params().len();
        assert_eq!(leaves, built.inputs.len() + built.params.len(), "{spec}");
        kinds.extend(spec.steps.iter().map(|s| s.kind));
    }
    assert_eq!(kinds.len(), Kind::ALL.len());
    for op in ["matmul", "softmax", "layer_norm", "rms_norm", "gather", "concat", "cast", "where", "cumsum"] {
        assert!(ops.iter().any(|o| o.contains(op)), "no {op} in {ops:?}");
    }
}

#[test]
fn big_dims_are_shrunk_to_the_limit_and_names_are_stable() {
    let spec = GraphSpec::parse("129x129x129;reduce.0.0.0;o0").unwrap();
    let mut c = CaseCtx::new("big");
    let outs = build(&spec, &mut c).unwrap();
    let built = c.finish(&outs).unwrap();
    assert!(built.inputs[0].1.numel() <= MAX_NUMEL);
    assert_eq!(spec.case_name(), GraphSpec::parse(&spec.to_text()).unwrap().case_name());
    assert_ne!(spec.case_name(), GraphSpec::parse("129x129x129;reduce.0.0.1;o0").unwrap().case_name());
    assert_eq!(tolerance(&spec), crate::DEFAULT_TOL);
}
