//! `Graph::sample_tokens` run on the CPU: greedy, NaN rows, determinism, and the distribution of
//! sampled tokens over many rows (each row draws its own uniform) against softmax(logits / T)
//! restricted to top-k and top-p, computed here in f64 from the definitions.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::*;
use rlx_backend::Backend;
use rlx_ir::{DType, Graph, Tensor};
use rlx_nn::prelude::*;

/// Samples one token per row of `logits` ([B, V]) with `prev` ([B, P]) under `key`.
fn sample(logits: &Tensor, prev: Option<&Tensor>, spec: &SamplingSpec, key: [u32; 2]) -> Vec<i32> {
    let mut g = Graph::new("sample");
    let x = g.input("logits", logits.dims(), DType::F32).unwrap();
    let k = g.rng_key("key").unwrap();
    let p = prev.map(|t| g.input("prev", t.dims(), DType::I32).unwrap());
    let tok = g.sample_tokens(x, k, spec, p).unwrap();
    g.set_outputs(&[tok]).unwrap();
    let mut exe = rlx_cpu::CpuBackend::new().compile(&g, &Default::default()).unwrap();
    let kt = tu32(&[2], key.to_vec());
    let mut inputs = vec![(x, logits), (k, &kt)];
    if let (Some(p), Some(t)) = (p, prev) {
        inputs.push((p, t));
    }
    let out = exe.run(&inputs).unwrap();
    assert_eq!(out[0].dims(), &[logits.dims()[0]]);
    out[0].as_i32().unwrap().to_vec()
}

/// `rows` copies of one row of logits.
fn repeat(row: &[f32], rows: usize) -> Tensor {
    t32(&[rows, row.len()], row.iter().copied().cycle().take(rows * row.len()).collect())
}

/// The sampling distribution by definition: penalty on `prev`, softmax(l / T) over the top k,
/// then the smallest prefix with mass ≥ top_p, renormalised. Indexed by token.
fn expected(row: &[f32], prev: &[i32], spec: &SamplingSpec) -> Vec<f64> {
    let mut l: Vec<f64> = row.iter().map(|&x| x as f64).collect();
    for (t, x) in l.iter_mut().enumerate() {
        if prev.contains(&(t as i32)) {
            let r = spec.repetition_penalty as f64;
            *x = if *x > 0.0 { *x / r } else { *x * r };
        }
    }
    let mut order: Vec<usize> = (0..l.len()).collect();
    order.sort_by(|&a, &b| l[b].total_cmp(&l[a]).then(a.cmp(&b)));
    order.truncate(spec.top_k.unwrap_or(rlx_nn::DEFAULT_TOP_K).min(l.len()));
    let t = spec.temperature as f64;
    let e: Vec<f64> = order.iter().map(|&i| ((l[i] - l[order[0]]) / t).exp()).collect();
    let s: f64 = e.iter().sum();
    let mut out = vec![0.0; l.len()];
    let mut mass = 0.0;
    for (j, &i) in order.iter().enumerate() {
        if mass >= spec.top_p as f64 {
            break;
        }
        out[i] = e[j] / s;
        mass += e[j] / s;
    }
    let kept: f64 = out.iter().sum();
    out.iter().map(|p| p / kept).collect()
}

/// Chi-square of token counts against `probs`; tokens with probability 0 must never appear.
fn chi_square(tokens: &[i32], probs: &[f64]) -> f64 {
    let mut counts = vec![0f64; probs.len()];
    for &t in tokens {
        counts[t as usize] += 1.0;
    }
    let n = tokens.len() as f64;
    let mut chi2 = 0.0;
    for (t, (&c, &p)) in counts.iter().zip(probs).enumerate() {
        if p == 0.0 {
            assert_eq!(c, 0.0, "token {t} has probability 0 but was drawn {c} times");
        } else {
            chi2 += (c - n * p).powi(2) / (n * p);
        }
    }
    chi2
}

const ROWS: usize = 20_000;
const ROW: [f32; 8] = [2.0, 1.5, 1.0, 0.5, 0.0, -0.5, -1.0, -3.0];

#[test]
fn sampled_tokens_follow_softmax_restricted_to_top_k_and_top_p() {
    let specs = [
        SamplingSpec { temperature: 1.0, top_k: Some(8), ..SamplingSpec::greedy() },
        SamplingSpec { temperature: 0.7, top_k: Some(5), top_p: 1.0, repetition_penalty: 1.0 },
        SamplingSpec { temperature: 1.3, top_k: None, top_p: 0.8, repetition_penalty: 1.0 },
        SamplingSpec { temperature: 0.5, top_k: Some(6), top_p: 0.9, repetition_penalty: 1.0 },
    ];
    let logits = repeat(&ROW, ROWS);
    for (i, spec) in specs.iter().enumerate() {
        let tokens = sample(&logits, None, spec, [1234 + i as u32, 0]);
        let probs = expected(&ROW, &[], spec);
        let kept = probs.iter().filter(|&&p| p > 0.0).count();
        let chi2 = chi_square(&tokens, &probs);
        // kept − 1 ≤ 7 degrees of freedom: 35 is past p = 1e-5 for 7.
        assert!(chi2 < 35.0, "{spec:?}: chi-square {chi2} over {kept} tokens");
    }
}

#[test]
fn repetition_penalty_reranks_exactly_as_on_the_full_vocabulary() {
    // Tokens 0 and 1 lead, are penalised (3.0 → 1.5, 2.8 → 1.4) and leave the top 3; -1 pads.
    let row = [3.0, 2.8, 2.5, 2.0, 1.0, 0.5, -0.2, -1.0, -2.0, 0.1, 0.2, -0.4];
    let prev_row = [0, -1, 1, 11];
    let spec = SamplingSpec { temperature: 1.0, top_k: Some(3), top_p: 1.0, repetition_penalty: 2.0 };
    let prev = ti32(&[ROWS, 4], prev_row.iter().copied().cycle().take(ROWS * 4).collect());
    let tokens = sample(&repeat(&row, ROWS), Some(&prev), &spec, [77, 3]);
    let probs = expected(&row, &prev_row, &spec);
    assert!(probs[0] > 0.0 && probs[1] == 0.0 && probs[2] > 0.0, "{probs:?}");
    let chi2 = chi_square(&tokens, &probs);
    assert!(chi2 < 25.0, "chi-square {chi2}");
    // A negative logit is multiplied: token 11 (-0.4 → -0.8) stays out either way.
    let greedy = SamplingSpec { repetition_penalty: 2.0, ..SamplingSpec::greedy() };
    let g = sample(&repeat(&row, 2), Some(&ti32(&[2, 4], [prev_row, prev_row].concat())), &greedy, [0, 0]);
    assert_eq!(g, vec![2, 2], "penalised argmax");
}

#[test]
fn greedy_is_the_argmax_and_needs_no_randomness() {
    let logits = t32(&[3, 4], vec![0.1, 0.9, 0.3, 0.9, -5.0, -4.0, -6.0, -4.5, 1.0, 0.0, 0.0, 0.0]);
    for key in [[0, 0], [9, 9]] {
        assert_eq!(sample(&logits, None, &SamplingSpec::greedy(), key), vec![1, 1, 0]);
    }
}

#[test]
fn nan_logits_are_never_picked_and_an_all_nan_row_gives_token_0() {
    let nan = f32::NAN;
    let logits = t32(&[3, 4], vec![nan, 1.0, 2.0, nan, nan, nan, nan, nan, nan, 0.5, f32::INFINITY, 0.0]);
    assert_eq!(sample(&logits, None, &SamplingSpec::greedy(), [0, 0]), vec![2, 0, 2]);
    let spec = SamplingSpec { temperature: 1.0, top_k: Some(4), top_p: 1.0, repetition_penalty: 1.5 };
    let prev = ti32(&[3, 1], vec![2, 1, -1]);
    for offset in 0..50 {
        let t = sample(&logits, Some(&prev), &spec, [5, offset]);
        assert!(t[0] == 1 || t[0] == 2, "row 0 picked {}", t[0]);
        assert_eq!(t[1], 0, "an all-NaN row gives token 0");
        assert_eq!(t[2], 2, "+inf wins over finite logits");
    }
}

#[test]
fn the_same_key_gives_the_same_tokens_and_a_new_offset_new_ones() {
    let logits = t32(&[64, 8], rand_vec(64 * 8, 5));
    let spec = SamplingSpec { temperature: 2.0, top_k: Some(8), ..SamplingSpec::greedy() };
    let a = sample(&logits, None, &spec, [42, 0]);
    assert_eq!(a, sample(&logits, None, &spec, [42, 0]));
    let b = sample(&logits, None, &spec, [42, 1]);
    let same = a.iter().zip(&b).filter(|(x, y)| x == y).count();
    // Eight near-uniform choices per row: about 64 / 8 rows agree by chance.
    assert!(same < 32, "offsets 0 and 1 agree on {same} of 64 rows");
}

#[test]
fn vocab_of_one_always_gives_token_0() {
    let spec = SamplingSpec { temperature: 1.0, top_k: None, top_p: 0.5, repetition_penalty: 1.2 };
    let prev = ti32(&[2, 2], vec![0, 0, -1, -1]);
    assert_eq!(sample(&t32(&[2, 1], vec![3.0, -1.0]), Some(&prev), &spec, [1, 2]), vec![0, 0]);
}
