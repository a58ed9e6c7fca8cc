//! Attention in both layouts with every mask kind, GQA, scale and soft-cap, against a naive
//! reference written here.
// Test crate: its helpers may unwrap, expect and panic, as the #[test] functions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::*;
use rlx_ir::{AttentionSpec, AttnLayout, DType, MaskKind, Op, Tensor};

#[derive(Clone, Copy)]
struct Case {
    b: usize,
    hq: usize,
    hkv: usize,
    sq: usize,
    sk: usize,
    d: usize,
    dv: usize,
    layout: AttnLayout,
    mask: MaskKind,
    scale: Option<f32>,
    softcap: Option<f32>,
}

fn dims(layout: AttnLayout, b: usize, s: usize, h: usize, d: usize) -> Vec<usize> {
    match layout {
        AttnLayout::Bshd => vec![b, s, h, d],
        AttnLayout::Bhsd => vec![b, h, s, d],
    }
}

fn at(
    layout: AttnLayout,
    (b, s, h, d): (usize, usize, usize, usize),
    (ns, nh, nd): (usize, usize, usize),
) -> usize {
    match layout {
        AttnLayout::Bshd => ((b * ns + s) * nh + h) * nd + d,
        AttnLayout::Bhsd => ((b * nh + h) * ns + s) * nd + d,
    }
}

/// The extra mask operand: [B, Sk] padding, or bias data of shape `bias_dims`.
struct MaskData {
    data: Vec<f32>,
    dims: Vec<usize>,
}

fn reference(c: &Case, q: &[f32], k: &[f32], v: &[f32], m: Option<&MaskData>) -> Vec<f64> {
    let mut out = vec![0f64; c.b * c.sq * c.hq * c.dv];
    let scale = c.scale.map_or(1.0 / (c.d as f64).sqrt(), |s| s as f64);
    for b in 0..c.b {
        for h in 0..c.hq {
            let kh = h / (c.hq / c.hkv);
            for i in 0..c.sq {
                let pos = i as i64 + c.sk as i64 - c.sq as i64;
                let mut s = vec![f64::NEG_INFINITY; c.sk];
                for (j, sj) in s.iter_mut().enumerate() {
                    let ok = match c.mask {
                        MaskKind::Causal => (j as i64) <= pos,
                        MaskKind::SlidingWindow(w) => (j as i64) <= pos && (j as i64) > pos - w as i64,
                        MaskKind::Padding => m.unwrap().data[b * c.sk + j] != 0.0,
                        _ => true,
                    };
                    if !ok {
                        continue;
                    }
                    let mut dot = 0f64;
                    for d in 0..c.d {
                        dot += q[at(c.layout, (b, i, h, d), (c.sq, c.hq, c.d))] as f64
                            * k[at(c.layout, (b, j, kh, d), (c.sk, c.hkv, c.d))] as f64;
                    }
                    let mut x = dot * scale;
                    if let Some(cap) = c.softcap {
                        x = cap as f64 * (x / cap as f64).tanh();
                    }
                    if let (MaskKind::Bias, Some(md)) = (c.mask, m) {
                        // Right-align the bias dims against [B, H, Sq, Sk]; size-1 dims repeat.
                        let full = [b, h, i, j];
                        let lead = 4 - md.dims.len();
                        let mut off = 0;
                        for (t, &dim) in md.dims.iter().enumerate() {
                            off = off * dim + if dim == 1 { 0 } else { full[lead + t] };
                        }
                        x += md.data[off] as f64;
                    }
                    *sj = x;
                }
                let mx = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                if mx == f64::NEG_INFINITY {
                    continue;
                }
                let e: Vec<f64> = s.iter().map(|&x| (x - mx).exp()).collect();
                let z: f64 = e.iter().sum();
                for d in 0..c.dv {
                    let mut acc = 0f64;
                    for j in 0..c.sk {
                        acc += e[j] / z * v[at(c.layout, (b, j, kh, d), (c.sk, c.hkv, c.dv))] as f64;
                    }
                    out[at(c.layout, (b, i, h, d), (c.sq, c.hq, c.dv))] = acc;
                }
            }
        }
    }
    out
}

fn run_case(c: Case, m: Option<&MaskData>, seed: u64) -> (Vec<f32>, Vec<f64>) {
    let qd = dims(c.layout, c.b, c.sq, c.hq, c.d);
    let kd = dims(c.layout, c.b, c.sk, c.hkv, c.d);
    let vd = dims(c.layout, c.b, c.sk, c.hkv, c.dv);
    let q = rand_vec(qd.iter().product(), seed);
    let k = rand_vec(kd.iter().product(), seed + 1);
    let v = rand_vec(vd.iter().product(), seed + 2);
    let (qt, kt, vt) = (t32(&qd, q.clone()), t32(&kd, k.clone()), t32(&vd, v.clone()));
    let mt = m.map(|md| t32(&md.dims, md.data.clone()));
    let mut ins: Vec<&Tensor> = vec![&qt, &kt, &vt];
    if let Some(t) = &mt {
        ins.push(t);
    }
    let spec = AttentionSpec { scale: c.scale, softcap: c.softcap, ..AttentionSpec::new(c.layout, c.mask) };
    let got = evf(Op::Attention(spec), &ins, &dims(c.layout, c.b, c.sq, c.hq, c.dv));
    (got, reference(&c, &q, &k, &v, m))
}

fn base(layout: AttnLayout, mask: MaskKind) -> Case {
    Case { b: 2, hq: 3, hkv: 3, sq: 5, sk: 7, d: 4, dv: 3, layout, mask, scale: None, softcap: None }
}

const LAYOUTS: [AttnLayout; 2] = [AttnLayout::Bshd, AttnLayout::Bhsd];

#[test]
fn one_query_two_keys_by_hand() {
    let q = t32(&[1, 1, 1, 1], vec![1.0]);
    let k = t32(&[1, 2, 1, 1], vec![0.0, 1.0]);
    let v = t32(&[1, 2, 1, 1], vec![10.0, 20.0]);
    let spec = AttentionSpec::new(AttnLayout::Bshd, MaskKind::None);
    let r = evf(Op::Attention(spec), &[&q, &k, &v], &[1, 1, 1, 1]);
    let e = std::f64::consts::E;
    close64(&r, &[10.0 / (1.0 + e) + 20.0 * e / (1.0 + e)], 1e-6);
}

#[test]
fn no_mask_both_layouts() {
    for (n, layout) in LAYOUTS.into_iter().enumerate() {
        let (got, want) = run_case(base(layout, MaskKind::None), None, 10 + n as u64);
        close64(&got, &want, 1e-5);
    }
}

#[test]
fn causal_with_kv_cache_offset() {
    for layout in LAYOUTS {
        let (got, want) = run_case(base(layout, MaskKind::Causal), None, 20);
        close64(&got, &want, 1e-5);
    }
    // Sq = Sk = 1 and a square causal case.
    let mut c = base(AttnLayout::Bshd, MaskKind::Causal);
    c.sq = 4;
    c.sk = 4;
    let (got, want) = run_case(c, None, 21);
    close64(&got, &want, 1e-5);
}

#[test]
fn causal_first_row_sees_only_first_key() {
    // Sq = Sk: row 0 sees key 0 only, so its output is v[0].
    let c = Case {
        b: 1,
        hq: 1,
        hkv: 1,
        sq: 3,
        sk: 3,
        d: 2,
        dv: 2,
        layout: AttnLayout::Bshd,
        mask: MaskKind::Causal,
        scale: None,
        softcap: None,
    };
    let q = t32(&[1, 3, 1, 2], rand_vec(6, 1));
    let k = t32(&[1, 3, 1, 2], rand_vec(6, 2));
    let v = t32(&[1, 3, 1, 2], vec![1.0, 2.0, 30.0, 40.0, 500.0, 600.0]);
    let spec = AttentionSpec::new(c.layout, c.mask);
    let r = evf(Op::Attention(spec), &[&q, &k, &v], &[1, 3, 1, 2]);
    assert_eq!(&r[..2], &[1.0, 2.0]);
}

#[test]
fn sliding_window() {
    for layout in LAYOUTS {
        for w in [1, 2, 7] {
            let (got, want) = run_case(base(layout, MaskKind::SlidingWindow(w)), None, 30 + w as u64);
            close64(&got, &want, 1e-5);
        }
    }
}

#[test]
fn huge_sliding_window_is_plain_causal() {
    // A window of usize::MAX once wrapped to a negative width and hid every key.
    for w in [usize::MAX, 1 << 40, 7] {
        let (wide, _) = run_case(base(AttnLayout::Bshd, MaskKind::SlidingWindow(w)), None, 40);
        let (causal, _) = run_case(base(AttnLayout::Bshd, MaskKind::Causal), None, 40);
        assert_eq!(wide, causal, "window {w}");
    }
}

#[test]
fn padding_mask_with_a_fully_masked_row() {
    let c = base(AttnLayout::Bhsd, MaskKind::Padding);
    // Batch 0 attends to keys 0, 2, 3; batch 1 to nothing (its output must be zeros).
    let mut data = vec![0f32; 2 * 7];
    data[0] = 1.0;
    data[2] = 1.0;
    data[3] = 2.5;
    let m = MaskData { data, dims: vec![2, 7] };
    for layout in LAYOUTS {
        let (got, want) = run_case(Case { layout, ..c }, Some(&m), 40);
        close64(&got, &want, 1e-5);
        let half = got.len() / 2;
        assert!(got[half..].iter().all(|&x| x == 0.0));
        assert!(got[..half].iter().any(|&x| x != 0.0));
    }
}

#[test]
fn padding_mask_as_bool_and_i32() {
    let c = base(AttnLayout::Bshd, MaskKind::Padding);
    let keep: Vec<bool> = (0..14).map(|i| i % 3 != 1).collect();
    let md = MaskData { data: keep.iter().map(|&k| k as u8 as f32).collect(), dims: vec![2, 7] };
    let (expect, _) = run_case(c, Some(&md), 45);
    let qd = dims(c.layout, c.b, c.sq, c.hq, c.d);
    let kd = dims(c.layout, c.b, c.sk, c.hkv, c.d);
    let vd = dims(c.layout, c.b, c.sk, c.hkv, c.dv);
    let q = t32(&qd, rand_vec(qd.iter().product(), 45));
    let k = t32(&kd, rand_vec(kd.iter().product(), 46));
    let v = t32(&vd, rand_vec(vd.iter().product(), 47));
    let spec = AttentionSpec::new(c.layout, MaskKind::Padding);
    let out = dims(c.layout, c.b, c.sq, c.hq, c.dv);
    let mb = tbool(&[2, 7], keep.clone());
    assert_eq!(evf(Op::Attention(spec), &[&q, &k, &v, &mb], &out), expect);
    let mi = ti32(&[2, 7], keep.iter().map(|&k| k as i32 * 7).collect());
    assert_eq!(evf(Op::Attention(spec), &[&q, &k, &v, &mi], &out), expect);
}

#[test]
fn additive_bias_broadcast() {
    for layout in LAYOUTS {
        let c = base(layout, MaskKind::Bias);
        let full = MaskData { data: rand_vec(2 * 3 * 5 * 7, 50), dims: vec![2, 3, 5, 7] };
        let (got, want) = run_case(c, Some(&full), 51);
        close64(&got, &want, 1e-5);
        let per_head = MaskData { data: rand_vec(3 * 5 * 7, 52), dims: vec![1, 3, 5, 7] };
        let (got, want) = run_case(c, Some(&per_head), 53);
        close64(&got, &want, 1e-5);
        let shared = MaskData { data: rand_vec(5 * 7, 54), dims: vec![5, 7] };
        let (got, want) = run_case(c, Some(&shared), 55);
        close64(&got, &want, 1e-5);
    }
}

#[test]
fn bias_of_minus_infinity_masks_keys() {
    let c = Case {
        b: 1,
        hq: 1,
        hkv: 1,
        sq: 1,
        sk: 3,
        d: 2,
        dv: 1,
        layout: AttnLayout::Bshd,
        mask: MaskKind::Bias,
        scale: None,
        softcap: None,
    };
    let q = t32(&[1, 1, 1, 2], vec![0.3, -0.2]);
    let k = t32(&[1, 3, 1, 2], rand_vec(6, 3));
    let v = t32(&[1, 3, 1, 1], vec![1.0, 2.0, 3.0]);
    let bias = t32(&[1, 3], vec![f32::NEG_INFINITY, 0.0, f32::NEG_INFINITY]);
    let spec = AttentionSpec::new(c.layout, c.mask);
    assert_eq!(evf(Op::Attention(spec), &[&q, &k, &v, &bias], &[1, 1, 1, 1]), vec![2.0]);
    let all = t32(&[1, 3], vec![f32::NEG_INFINITY; 3]);
    assert_eq!(evf(Op::Attention(spec), &[&q, &k, &v, &all], &[1, 1, 1, 1]), vec![0.0]);
}

#[test]
fn grouped_query_attention() {
    for layout in LAYOUTS {
        let c = Case { hq: 6, hkv: 2, ..base(layout, MaskKind::Causal) };
        let (got, want) = run_case(c, None, 60);
        close64(&got, &want, 1e-5);
        let c = Case { hq: 4, hkv: 1, ..base(layout, MaskKind::None) };
        let (got, want) = run_case(c, None, 61);
        close64(&got, &want, 1e-5);
    }
}

#[test]
fn explicit_scale_and_softcap() {
    for layout in LAYOUTS {
        let c = Case { scale: Some(2.5), softcap: Some(1.5), ..base(layout, MaskKind::Causal) };
        let (got, want) = run_case(c, None, 70);
        close64(&got, &want, 1e-5);
    }
}

#[test]
fn layouts_agree_after_permuting() {
    let c = base(AttnLayout::Bshd, MaskKind::Causal);
    let (a, _) = run_case(c, None, 80);
    // Same logical data laid out as Bhsd: permute q, k, v and compare the permuted output.
    let perm = |x: &[f32], s: usize, h: usize, d: usize| -> Vec<f32> {
        let mut out = vec![0f32; x.len()];
        for b in 0..c.b {
            for si in 0..s {
                for hi in 0..h {
                    for di in 0..d {
                        out[at(AttnLayout::Bhsd, (b, si, hi, di), (s, h, d))] =
                            x[at(AttnLayout::Bshd, (b, si, hi, di), (s, h, d))];
                    }
                }
            }
        }
        out
    };
    let q = perm(&rand_vec(c.b * c.sq * c.hq * c.d, 80), c.sq, c.hq, c.d);
    let k = perm(&rand_vec(c.b * c.sk * c.hkv * c.d, 81), c.sk, c.hkv, c.d);
    let v = perm(&rand_vec(c.b * c.sk * c.hkv * c.dv, 82), c.sk, c.hkv, c.dv);
    let spec = AttentionSpec::new(AttnLayout::Bhsd, MaskKind::Causal);
    let got = evf(
        Op::Attention(spec),
        &[
            &t32(&[c.b, c.hq, c.sq, c.d], q),
            &t32(&[c.b, c.hkv, c.sk, c.d], k),
            &t32(&[c.b, c.hkv, c.sk, c.dv], v),
        ],
        &[c.b, c.hq, c.sq, c.dv],
    );
    assert_eq!(got, perm(&a, c.sq, c.hq, c.dv));
}

#[test]
fn nan_in_a_query_gives_nan_rows_only_there() {
    let q = t32(&[1, 2, 1, 2], vec![f32::NAN, 0.0, 0.5, 0.5]);
    let k = t32(&[1, 2, 1, 2], vec![1.0, 0.0, 0.0, 1.0]);
    let v = t32(&[1, 2, 1, 1], vec![1.0, 3.0]);
    let spec = AttentionSpec::new(AttnLayout::Bshd, MaskKind::None);
    let r = evf(Op::Attention(spec), &[&q, &k, &v], &[1, 2, 1, 1]);
    assert!(r[0].is_nan());
    assert!((r[1] - 2.0).abs() < 1e-6);
}

#[test]
fn f16_operands() {
    let h = |v: Vec<f32>| v.into_iter().map(half::f16::from_f32).collect::<Vec<_>>();
    let q = Tensor::from_f16([1, 1, 1, 1], h(vec![1.0])).unwrap();
    let k = Tensor::from_f16([1, 2, 1, 1], h(vec![0.0, 1.0])).unwrap();
    let v = Tensor::from_f16([1, 2, 1, 1], h(vec![10.0, 20.0])).unwrap();
    let spec = AttentionSpec::new(AttnLayout::Bshd, MaskKind::None);
    let r = ev(Op::Attention(spec), &[&q, &k, &v], &[1, 1, 1, 1], DType::F16);
    let e = std::f64::consts::E;
    let want = half::f16::from_f32((10.0 / (1.0 + e) + 20.0 * e / (1.0 + e)) as f32);
    assert_eq!(r.data(), &rlx_ir::TensorData::F16(vec![want]));
}

#[test]
fn empty_key_sequence_and_empty_batch() {
    let spec = AttentionSpec::new(AttnLayout::Bshd, MaskKind::None);
    let q = t32(&[1, 2, 1, 3], rand_vec(6, 1));
    let k = t32(&[1, 0, 1, 3], vec![]);
    let v = t32(&[1, 0, 1, 2], vec![]);
    // No keys at all: every row is fully masked, so zeros.
    assert_eq!(evf(Op::Attention(spec), &[&q, &k, &v], &[1, 2, 1, 2]), vec![0.0; 4]);
    let q = t32(&[0, 2, 1, 3], vec![]);
    let k = t32(&[0, 2, 1, 3], vec![]);
    let v = t32(&[0, 2, 1, 2], vec![]);
    assert!(evf(Op::Attention(spec), &[&q, &k, &v], &[0, 2, 1, 2]).is_empty());
}
