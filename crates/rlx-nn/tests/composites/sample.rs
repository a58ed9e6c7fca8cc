//! `Graph::random*` and `Graph::sample_tokens`: types, dump, and every invalid spec or operand
//! as an error naming the field, its value and the fix (the graph left unchanged).

use crate::{assert_msg, f32_in, tt, ty};
use rlx_ir::{dump, verify, DType, Graph, IrError, NodeId, RandomDist};
use rlx_nn::prelude::*;
use rlx_nn::DEFAULT_TOP_K;

fn setup(v: usize) -> (Graph, NodeId, NodeId) {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "logits", &[2, v]);
    let k = g.rng_key("key").unwrap();
    (g, x, k)
}

#[test]
fn random_takes_a_u32_pair_and_gives_f32_of_its_shape() {
    let mut g = Graph::new("g");
    let k = g.rng_key("key").unwrap();
    assert_eq!(ty(&g, k), tt(&[2], DType::U32));
    let u = g.random_uniform(k, &[3, 5]).unwrap();
    let n = g.random_normal(k, &[7]).unwrap();
    assert_eq!(ty(&g, u), tt(&[3, 5], DType::F32));
    assert_eq!(ty(&g, n), tt(&[7], DType::F32));
    g.set_outputs(&[u, n]).unwrap();
    verify(&g).unwrap();
    let text = dump(&g);
    assert!(text.contains("random_uniform(%0) dist=uniform shape=[3, 5] : f32[3, 5]"), "{text}");
    assert!(text.contains("random_normal(%0) dist=normal shape=[7]"), "{text}");

    let wrong_dtype = g.input("k32", &[2], DType::I32).unwrap();
    let e = g.random(wrong_dtype, RandomDist::Uniform, &[4]).unwrap_err();
    assert!(matches!(e, IrError::DType { .. }), "{e}");
    assert_msg(&e, &["random_uniform", "i32", "u32"]);
    let wrong_len = g.input("k3", &[3], DType::U32).unwrap();
    let e = g.random_normal(wrong_len, &[4]).unwrap_err();
    assert_msg(&e, &["random_normal", "[3]", "[seed, offset]"]);
}

#[test]
fn sample_tokens_gives_one_i32_per_row() {
    let (mut g, x, k) = setup(11);
    let prev = g.input("prev", &[2, 3], DType::I32).unwrap();
    for spec in [
        SamplingSpec::greedy(),
        SamplingSpec::with_temperature(0.8),
        SamplingSpec { temperature: 1.0, top_k: Some(11), top_p: 0.9, repetition_penalty: 1.3 },
        SamplingSpec { repetition_penalty: 1.3, ..SamplingSpec::greedy() },
    ] {
        let t = g.sample_tokens(x, k, &spec, Some(prev)).unwrap();
        assert_eq!(ty(&g, t), tt(&[2], DType::I32), "{spec:?}");
    }
    g.set_outputs(&[x]).unwrap();
    verify(&g).unwrap();
    assert_eq!(SamplingSpec::default(), SamplingSpec::greedy());
    assert!(SamplingSpec::default().is_greedy());
}

#[test]
fn invalid_specs_name_the_field_the_value_and_the_fix() {
    let (mut g, x, k) = setup(11);
    let base = SamplingSpec::with_temperature(1.0);
    let cases: [(SamplingSpec, &[&str]); 9] = [
        (SamplingSpec { temperature: -0.5, ..base }, &["temperature", "-0.5", "≥ 0"]),
        (SamplingSpec { temperature: f32::NAN, ..base }, &["temperature", "NaN", "finite"]),
        (SamplingSpec { temperature: f32::INFINITY, ..base }, &["temperature", "inf"]),
        (SamplingSpec { top_p: 0.0, ..base }, &["top_p", "= 0", "(0, 1]", "1.0 to turn top-p off"]),
        (SamplingSpec { top_p: 1.5, ..base }, &["top_p", "1.5"]),
        (SamplingSpec { top_k: Some(0), ..base }, &["top_k", "= 0", "1..=11", "None"]),
        (SamplingSpec { top_k: Some(12), ..base }, &["top_k", "12", "1..=11"]),
        (SamplingSpec { repetition_penalty: 0.0, ..base }, &["repetition_penalty", "= 0", "> 0", "1.0"]),
        (SamplingSpec { repetition_penalty: f32::NAN, ..base }, &["repetition_penalty", "NaN"]),
    ];
    let n = g.len();
    for (spec, parts) in cases {
        let e = g.sample_tokens(x, k, &spec, None).unwrap_err();
        assert!(matches!(e, IrError::Attribute { op: "sample_tokens", .. }), "{e}");
        assert_msg(&e, parts);
        assert_eq!(g.len(), n, "a failed sample_tokens left nodes behind");
    }
    // Greedy still validates the rest of the spec.
    let e = g.sample_tokens(x, k, &SamplingSpec { top_p: -1.0, ..SamplingSpec::greedy() }, None).unwrap_err();
    assert_msg(&e, &["top_p"]);
}

#[test]
fn bad_operands_are_errors() {
    let (mut g, x, k) = setup(11);
    let spec = SamplingSpec::with_temperature(1.0);
    let rank1 = f32_in(&mut g, "r1", &[11]);
    assert_msg(&g.sample_tokens(rank1, k, &spec, None).unwrap_err(), &["logits", "[11]", "[batch, vocab]"]);
    let empty = f32_in(&mut g, "e", &[2, 0]);
    assert_msg(&g.sample_tokens(empty, k, &spec, None).unwrap_err(), &["vocab ≥ 1"]);
    let ints = g.input("i", &[2, 11], DType::I32).unwrap();
    assert_msg(&g.sample_tokens(ints, k, &spec, None).unwrap_err(), &["i32", "cast"]);
    let bad_key = g.input("bk", &[4], DType::U32).unwrap();
    assert_msg(&g.sample_tokens(x, bad_key, &spec, None).unwrap_err(), &["u32[4]", "rng_key"]);
    let prev_rows = g.input("p3", &[3, 2], DType::I32).unwrap();
    let e = g.sample_tokens(x, k, &spec, Some(prev_rows)).unwrap_err();
    assert_msg(&e, &["[2, 11] and [3, 2]", "-1"]);
    let prev_f = f32_in(&mut g, "pf", &[2, 2]);
    assert_msg(&g.sample_tokens(x, k, &spec, Some(prev_f)).unwrap_err(), &["i32 token ids"]);
}

#[test]
fn the_candidate_count_is_top_k_or_the_documented_default() {
    let shape = rlx_ir::Shape::new(&[1, 1000]);
    let spec = SamplingSpec::with_temperature(1.0);
    assert_eq!(spec.validate(1000, &shape).unwrap(), DEFAULT_TOP_K);
    assert_eq!(spec.validate(7, &shape).unwrap(), 7);
    assert_eq!(SamplingSpec { top_k: Some(1000), ..spec }.validate(1000, &shape).unwrap(), 1000);
    assert_eq!(DEFAULT_TOP_K, 50);
}
