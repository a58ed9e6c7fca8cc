//! Conv2d (stride, padding, dilation, groups, bias), max/avg pooling, against naive loops and
//! hand-computed values.
// Test crate: its helpers may unwrap, expect and panic, as the #[test] functions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::*;
use rlx_ir::{Op, PoolKind};

struct Conv {
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    o: usize,
    kh: usize,
    kw: usize,
    stride: [usize; 2],
    pad: [usize; 2],
    dil: [usize; 2],
    groups: usize,
}

impl Conv {
    fn out_hw(&self) -> (usize, usize) {
        let f = |len: usize, k: usize, i: usize| {
            (len + 2 * self.pad[i] - self.dil[i] * (k - 1) - 1) / self.stride[i] + 1
        };
        (f(self.h, self.kh, 0), f(self.w, self.kw, 1))
    }

    fn naive(&self, x: &[f32], wt: &[f32], bias: Option<&[f32]>) -> Vec<f64> {
        let (oh, ow) = self.out_hw();
        let (cg, og) = (self.c / self.groups, self.o / self.groups);
        let mut out = vec![0f64; self.n * self.o * oh * ow];
        for n in 0..self.n {
            for o in 0..self.o {
                let g = o / og;
                for y in 0..oh {
                    for xx in 0..ow {
                        let mut acc = bias.map_or(0.0, |b| b[o] as f64);
                        for ci in 0..cg {
                            for ky in 0..self.kh {
                                for kx in 0..self.kw {
                                    let iy =
                                        (y * self.stride[0] + ky * self.dil[0]) as i64 - self.pad[0] as i64;
                                    let ix =
                                        (xx * self.stride[1] + kx * self.dil[1]) as i64 - self.pad[1] as i64;
                                    if iy < 0 || ix < 0 || iy >= self.h as i64 || ix >= self.w as i64 {
                                        continue;
                                    }
                                    let c = g * cg + ci;
                                    let xv =
                                        x[((n * self.c + c) * self.h + iy as usize) * self.w + ix as usize];
                                    let wv = wt[((o * cg + ci) * self.kh + ky) * self.kw + kx];
                                    acc += xv as f64 * wv as f64;
                                }
                            }
                        }
                        out[((n * self.o + o) * oh + y) * ow + xx] = acc;
                    }
                }
            }
        }
        out
    }

    fn check(&self, with_bias: bool, seed: u64) {
        let (oh, ow) = self.out_hw();
        let x = rand_vec(self.n * self.c * self.h * self.w, seed);
        let wt = rand_vec(self.o * (self.c / self.groups) * self.kh * self.kw, seed + 1);
        let b = rand_vec(self.o, seed + 2);
        let xt = t32(&[self.n, self.c, self.h, self.w], x.clone());
        let wtt = t32(&[self.o, self.c / self.groups, self.kh, self.kw], wt.clone());
        let bt = t32(&[self.o], b.clone());
        let op =
            Op::Conv2d { stride: self.stride, padding: self.pad, dilation: self.dil, groups: self.groups };
        let mut ins = vec![&xt, &wtt];
        if with_bias {
            ins.push(&bt);
        }
        let r = evf(op, &ins, &[self.n, self.o, oh, ow]);
        close64(&r, &self.naive(&x, &wt, with_bias.then_some(&b[..])), 1e-5);
    }
}

#[test]
fn conv_by_hand() {
    let x = t32(&[1, 1, 3, 3], (1..=9).map(|v| v as f32).collect());
    let w = t32(&[1, 1, 2, 2], vec![1.0; 4]);
    let op = Op::Conv2d { stride: [1, 1], padding: [0, 0], dilation: [1, 1], groups: 1 };
    assert_eq!(evf(op.clone(), &[&x, &w], &[1, 1, 2, 2]), vec![12.0, 16.0, 24.0, 28.0]);
    let b = t32(&[1], vec![0.5]);
    assert_eq!(evf(op, &[&x, &w, &b], &[1, 1, 2, 2]), vec![12.5, 16.5, 24.5, 28.5]);
    // Padding 1 with a 3x3 kernel of ones: corner sums.
    let w3 = t32(&[1, 1, 3, 3], vec![1.0; 9]);
    let op = Op::Conv2d { stride: [2, 2], padding: [1, 1], dilation: [1, 1], groups: 1 };
    assert_eq!(evf(op, &[&x, &w3], &[1, 1, 2, 2]), vec![12.0, 16.0, 24.0, 28.0]);
}

#[test]
fn conv_plain_prime_sizes() {
    Conv { n: 2, c: 3, h: 7, w: 11, o: 5, kh: 3, kw: 2, stride: [1, 1], pad: [0, 0], dil: [1, 1], groups: 1 }
        .check(true, 1);
}

#[test]
fn conv_stride_padding_dilation() {
    Conv { n: 1, c: 2, h: 13, w: 7, o: 3, kh: 3, kw: 3, stride: [2, 3], pad: [1, 2], dil: [2, 1], groups: 1 }
        .check(true, 2);
    Conv { n: 1, c: 1, h: 5, w: 5, o: 1, kh: 1, kw: 1, stride: [1, 1], pad: [0, 0], dil: [1, 1], groups: 1 }
        .check(false, 3);
}

#[test]
fn conv_groups_and_depthwise() {
    Conv { n: 2, c: 6, h: 5, w: 6, o: 4, kh: 3, kw: 3, stride: [1, 1], pad: [1, 1], dil: [1, 1], groups: 2 }
        .check(true, 4);
    // Depthwise: groups = C = O.
    Conv { n: 1, c: 4, h: 6, w: 5, o: 4, kh: 3, kw: 3, stride: [2, 1], pad: [1, 0], dil: [1, 2], groups: 4 }
        .check(false, 5);
}

#[test]
fn conv_empty_batch() {
    let x = t32(&[0, 2, 4, 4], vec![]);
    let w = t32(&[3, 2, 3, 3], rand_vec(54, 1));
    let op = Op::Conv2d { stride: [1, 1], padding: [0, 0], dilation: [1, 1], groups: 1 };
    assert!(evf(op, &[&x, &w], &[0, 3, 2, 2]).is_empty());
}

fn pool(kind: PoolKind, k: usize, s: usize, p: usize) -> Op {
    Op::Pool2d { kind, kernel: [k, k], stride: [s, s], padding: [p, p] }
}

#[test]
fn max_pool_by_hand() {
    let x = t32(&[1, 1, 4, 4], (0..16).map(|v| v as f32).collect());
    assert_eq!(evf(pool(PoolKind::Max, 2, 2, 0), &[&x], &[1, 1, 2, 2]), vec![5.0, 7.0, 13.0, 15.0]);
    // Padding acts as −∞: a window of −1s next to padding still gives −1.
    let neg = t32(&[1, 1, 2, 2], vec![-1.0, -2.0, -3.0, -4.0]);
    assert_eq!(
        evf(pool(PoolKind::Max, 2, 1, 1), &[&neg], &[1, 1, 3, 3]),
        vec![-1.0, -1.0, -2.0, -1.0, -1.0, -2.0, -3.0, -3.0, -4.0]
    );
    let nan = t32(&[1, 1, 2, 2], vec![1.0, f32::NAN, 3.0, 4.0]);
    let r = evf(pool(PoolKind::Max, 2, 2, 0), &[&nan], &[1, 1, 1, 1]);
    assert!(r[0].is_nan());
}

#[test]
fn avg_pool_counts_padding() {
    let x = t32(&[1, 1, 2, 2], vec![1.0, 2.0, 3.0, 4.0]);
    let r = evf(pool(PoolKind::Avg, 2, 1, 1), &[&x], &[1, 1, 3, 3]);
    assert_eq!(r, vec![0.25, 0.75, 0.5, 1.0, 2.5, 1.5, 0.75, 1.75, 1.0]);
    let y = t32(&[1, 2, 3, 3], (0..18).map(|v| v as f32).collect());
    let r = evf(pool(PoolKind::Avg, 3, 3, 0), &[&y], &[1, 2, 1, 1]);
    assert_eq!(r, vec![4.0, 13.0]);
}
