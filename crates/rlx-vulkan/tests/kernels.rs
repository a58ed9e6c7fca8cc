//! Each kernel on every available Vulkan device against a plain f64 CPU loop, within 1e-5
//! relative (‖out − ref‖ / ‖ref‖). Without a device: a loud skip, or a failure when
//! RLX_REQUIRE_GPU=1.

mod support;

use rlx_ir::{BinaryOp, UnaryOp};
use support::*;

fn unary_ref(op: UnaryOp, x: f64) -> f64 {
    let sigmoid = |v: f64| 1.0 / (1.0 + (-v).exp());
    match op {
        // Both GELUs in forms without the cancellation of 1 + erf / 1 + tanh for negative x,
        // which would make the reference itself wrong in the tail (x·Φ(x) ≈ 1e-16 at x = −8.4).
        UnaryOp::Gelu => 0.5 * x * libm::erfc(-x / std::f64::consts::SQRT_2),
        UnaryOp::GeluTanh => {
            x * sigmoid(2.0 * (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x))
        }
        UnaryOp::Silu => x * sigmoid(x),
        UnaryOp::Relu => {
            if x.is_nan() || x > 0.0 {
                x
            } else {
                0.0
            }
        }
        UnaryOp::Sigmoid => sigmoid(x),
        UnaryOp::Tanh => x.tanh(),
        UnaryOp::Exp => x.exp(),
        UnaryOp::Log => x.ln(),
        UnaryOp::Sqrt => x.sqrt(),
        UnaryOp::Rsqrt => 1.0 / x.sqrt(),
        UnaryOp::Neg => -x,
        UnaryOp::Abs => x.abs(),
        UnaryOp::Sin => x.sin(),
        UnaryOp::Cos => x.cos(),
        UnaryOp::Recip => 1.0 / x,
        UnaryOp::Square => x * x,
    }
}

fn binary_ref(op: BinaryOp, a: f64, b: f64) -> f64 {
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => a / b,
        BinaryOp::Pow => a.powf(b),
        BinaryOp::Maximum | BinaryOp::Minimum if a.is_nan() || b.is_nan() => f64::NAN,
        BinaryOp::Maximum => a.max(b),
        BinaryOp::Minimum => a.min(b),
    }
}

/// Reference of a broadcasting binary op; operands right-aligned to `out`.
fn binary_cpu(op: BinaryOp, a: (&[f32], &[usize]), b: (&[f32], &[usize]), out: &[usize]) -> Vec<f64> {
    let n: usize = out.iter().product();
    (0..n)
        .map(|i| {
            let c = unravel(i, out);
            let x = a.0[broadcast_index(&c, a.1)] as f64;
            let y = b.0[broadcast_index(&c, b.1)] as f64;
            // The reference rounds once to f32, like the CPU backend.
            binary_ref(op, x, y) as f32 as f64
        })
        .collect()
}

#[test]
fn binary_add_broadcasts_column_and_row() {
    for ctx in contexts() {
        let a = [1.0f32, 2.0, 3.0];
        let b = [10.0f32, 20.0, 30.0, 40.0];
        let out = gpu_binary(&ctx, BinaryOp::Add, (&a, &[3, 1]), (&b, &[1, 4]), &[3, 4]);
        let expected = [11.0, 21.0, 31.0, 41.0, 12.0, 22.0, 32.0, 42.0, 13.0, 23.0, 33.0, 43.0];
        assert_eq!(out, expected, "{}", tag(&ctx));
    }
}

#[test]
fn every_binary_op_broadcasts_over_prime_shapes() {
    for ctx in contexts() {
        let (sa, sb, so) = ([5usize, 1, 7], [3usize, 1], [5usize, 3, 7]);
        for op in BinaryOp::ALL {
            let a = match op {
                BinaryOp::Pow => data(35, 1, 0.1, 3.0),
                _ => data(35, 1, -3.0, 3.0),
            };
            let b = match op {
                // Divisors away from zero, both signs.
                BinaryOp::Div => data(3, 2, 0.5, 3.0)
                    .iter()
                    .enumerate()
                    .map(|(i, v)| if i % 2 == 0 { *v } else { -v })
                    .collect(),
                _ => data(3, 2, -3.0, 3.0),
            };
            let out = gpu_binary(&ctx, op, (&a, &sa), (&b, &sb), &so);
            let reference = binary_cpu(op, (&a, &sa), (&b, &sb), &so);
            assert_close(&format!("{} on {}", op.name(), tag(&ctx)), &out, &reference);
        }
    }
}

#[test]
fn binary_rank_six_and_scalar_operands() {
    for ctx in contexts() {
        let (sa, sb, so) = ([2usize, 1, 3, 1, 2, 5], [3usize, 4, 1, 5], [2usize, 1, 3, 4, 2, 5]);
        let a = data(60, 3, -2.0, 2.0);
        let b = data(60, 4, -2.0, 2.0);
        let out = gpu_binary(&ctx, BinaryOp::Mul, (&a, &sa), (&b, &sb), &so);
        assert_close("rank 6", &out, &binary_cpu(BinaryOp::Mul, (&a, &sa), (&b, &sb), &so));

        let s = [2.5f32];
        let out = gpu_binary(&ctx, BinaryOp::Sub, (&a, &sa), (&s, &[]), &sa);
        assert_close("minus scalar", &out, &binary_cpu(BinaryOp::Sub, (&a, &sa), (&s, &[]), &sa));
    }
}

#[test]
fn binary_special_values_follow_the_reference() {
    let nan = f32::NAN;
    let a =
        [-2.0f32, -2.0, -2.0, 0.0, -0.0, -0.0, 0.0, 1.0, nan, 2.0, -8.0, f32::INFINITY, f32::NEG_INFINITY];
    let b = [2.0f32, 3.0, 0.5, -1.0, -1.0, -2.0, 0.0, nan, 0.0, -2.0, 1.0 / 3.0, -1.0, 3.0];
    let n = [a.len()];
    for ctx in contexts() {
        let out = gpu_binary(&ctx, BinaryOp::Pow, (&a, &n), (&b, &n), &n);
        let reference = binary_cpu(BinaryOp::Pow, (&a, &n), (&b, &n), &n);
        assert_close(&format!("pow special values on {}: {out:?}", tag(&ctx)), &out, &reference);
        for (i, (o, r)) in out.iter().zip(&reference).enumerate() {
            if r.is_infinite() || *r == 0.0 {
                // Signs of infinities and zeros: pow(-0, -1) = -inf, pow(-0, -2) = +inf.
                assert_eq!(o.is_sign_negative(), r.is_sign_negative(), "pow element {i}: {o} vs {r}");
            }
        }

        let x = [nan, 1.0, 2.0, -1.0];
        let y = [0.0f32, nan, 3.0, -1.0];
        for op in [BinaryOp::Maximum, BinaryOp::Minimum, BinaryOp::Add] {
            let out = gpu_binary(&ctx, op, (&x, &[4]), (&y, &[4]), &[4]);
            assert!(out[0].is_nan() && out[1].is_nan(), "{} must propagate NaN: {out:?}", op.name());
            assert_eq!(out[2], binary_ref(op, 2.0, 3.0) as f32);
        }
    }
}

/// Inputs where each op is defined and well conditioned.
fn unary_input(op: UnaryOp, n: usize) -> Vec<f32> {
    match op {
        UnaryOp::Log | UnaryOp::Sqrt | UnaryOp::Rsqrt | UnaryOp::Recip => data(n, 7, 0.05, 20.0),
        _ => data(n, 7, -6.0, 6.0),
    }
}

#[test]
fn every_unary_op_matches_the_reference() {
    for ctx in contexts() {
        for op in UnaryOp::ALL {
            // 1037: a prime number of elements, so the last workgroup is partial.
            let x = unary_input(op, 1037);
            let out = gpu_unary(&ctx, op, &x);
            let reference: Vec<f64> = x.iter().map(|&v| unary_ref(op, v as f64)).collect();
            assert_close(&format!("{} on {}", op.name(), tag(&ctx)), &out, &reference);
        }
    }
}

#[test]
fn smooth_activations_are_accurate_per_element_in_their_tails() {
    // The norm bound above hides a bad tail (tiny values); here each element must be within
    // 1e-5 relative of the exact value, out to |x| = 9.
    let x: Vec<f32> = (-900..=900).map(|i| i as f32 / 100.0).collect();
    for ctx in contexts() {
        for op in [UnaryOp::Gelu, UnaryOp::GeluTanh, UnaryOp::Silu, UnaryOp::Sigmoid, UnaryOp::Tanh] {
            let out = gpu_unary(&ctx, op, &x);
            for (&v, &o) in x.iter().zip(&out) {
                let r = unary_ref(op, v as f64);
                let err = if r == 0.0 { (o as f64).abs() } else { ((o as f64 - r) / r).abs() };
                assert!(
                    err <= 1e-5,
                    "{} on {}: x = {v}: got {o}, exact {r}, relative error {err:e}",
                    op.name(),
                    tag(&ctx)
                );
            }
        }
    }
}

#[test]
fn unary_special_values() {
    for ctx in contexts() {
        for op in UnaryOp::ALL {
            let out = gpu_unary(&ctx, op, &[f32::NAN]);
            assert!(out[0].is_nan(), "{}(NaN) = {} on {}", op.name(), out[0], tag(&ctx));
        }
        let t = gpu_unary(&ctx, UnaryOp::Tanh, &[100.0, -100.0, 20.0, 1e-3]);
        assert_eq!(&t[..3], &[1.0, -1.0, 1.0]);
        assert!(((t[3] as f64 - 1e-3f64.tanh()) / 1e-3f64.tanh()).abs() < 1e-6, "tanh(1e-3) = {}", t[3]);
        let s = gpu_unary(&ctx, UnaryOp::Sigmoid, &[-200.0, 200.0]);
        assert_eq!(s, [0.0, 1.0]);
        let g = gpu_unary(&ctx, UnaryOp::Gelu, &[-50.0, 50.0]);
        assert_eq!(g[1], 50.0);
        assert!(g[0] == 0.0, "gelu(-50) = {}", g[0]);
        let l = gpu_unary(&ctx, UnaryOp::Log, &[0.0, -1.0]);
        assert!(l[0] == f32::NEG_INFINITY && l[1].is_nan(), "{l:?}");
        let r = gpu_unary(&ctx, UnaryOp::Rsqrt, &[0.0, -4.0]);
        assert!(r[0] == f32::INFINITY && r[1].is_nan(), "{r:?}");
        let q = gpu_unary(&ctx, UnaryOp::Sqrt, &[-4.0]);
        assert!(q[0].is_nan());
        let relu = gpu_unary(&ctx, UnaryOp::Relu, &[-1.0, 0.0, 2.0]);
        assert_eq!(relu, [0.0, 0.0, 2.0]);
    }
}

#[test]
fn matmul_shapes() {
    // (M, K, N): ones, primes, a full tile, and sizes past one tile in every dim.
    let cases = [(1, 1, 1), (7, 13, 5), (64, 64, 64), (100, 37, 129), (65, 17, 63), (200, 300, 150)];
    for ctx in contexts() {
        for (i, &(m, k, n)) in cases.iter().enumerate() {
            let a = data(m * k, 10 + i as u64, -1.0, 1.0);
            let b = data(k * n, 20 + i as u64, -1.0, 1.0);
            let (out, shape) = gpu_matmul(&ctx, (&a, &[m, k]), (&b, &[k, n]), false, false);
            let (reference, ref_shape) = cpu_matmul((&a, &[m, k]), (&b, &[k, n]), false, false);
            assert_eq!(shape, ref_shape);
            assert_close(&format!("matmul {m}x{k}x{n} on {}", tag(&ctx)), &out, &reference);
        }
    }
}

#[test]
fn matmul_transposed_operands() {
    let (m, k, n) = (100, 37, 129);
    for ctx in contexts() {
        for (ta, tb) in [(true, false), (false, true), (true, true)] {
            let sa = if ta { [k, m] } else { [m, k] };
            let sb = if tb { [n, k] } else { [k, n] };
            let a = data(m * k, 31, -1.0, 1.0);
            let b = data(k * n, 32, -1.0, 1.0);
            let (out, shape) = gpu_matmul(&ctx, (&a, &sa), (&b, &sb), ta, tb);
            let (reference, _) = cpu_matmul((&a, &sa), (&b, &sb), ta, tb);
            assert_eq!(shape, [m, n]);
            assert_close(&format!("matmul ta={ta} tb={tb} on {}", tag(&ctx)), &out, &reference);
        }
    }
}

#[test]
fn matmul_batched_and_broadcast_batches() {
    let cases: [(&[usize], &[usize]); 4] = [
        (&[3, 33, 17], &[3, 17, 65]),
        // b broadcast over the outer batch dim: two batch levels.
        (&[2, 3, 20, 9], &[3, 9, 11]),
        // a broadcast over the whole batch.
        (&[20, 9], &[4, 9, 70]),
        (&[2, 1, 5, 8], &[1, 3, 8, 6]),
    ];
    for ctx in contexts() {
        for (i, (sa, sb)) in cases.iter().enumerate() {
            let a = data(sa.iter().product(), 40 + i as u64, -1.0, 1.0);
            let b = data(sb.iter().product(), 50 + i as u64, -1.0, 1.0);
            let (out, shape) = gpu_matmul(&ctx, (&a, sa), (&b, sb), false, false);
            let (reference, ref_shape) = cpu_matmul((&a, sa), (&b, sb), false, false);
            assert_eq!(shape, ref_shape);
            assert_close(&format!("matmul {sa:?}x{sb:?} on {}", tag(&ctx)), &out, &reference);
        }
    }
}

fn softmax_cpu(x: &[f32], cols: usize) -> Vec<f64> {
    x.chunks(cols)
        .flat_map(|row| {
            let m = row.iter().fold(f64::NEG_INFINITY, |m, &v| {
                if m.is_nan() || v.is_nan() {
                    f64::NAN
                } else {
                    m.max(v as f64)
                }
            });
            let e: Vec<f64> = row.iter().map(|&v| (v as f64 - m).exp()).collect();
            let s: f64 = e.iter().sum();
            e.into_iter().map(move |v| v / s)
        })
        .collect()
}

#[test]
fn softmax_rows_of_several_widths() {
    for ctx in contexts() {
        for (rows, cols) in [(5, 1), (5, 7), (3, 1000), (300, 33), (2, 4099)] {
            let x = data(rows * cols, cols as u64, -8.0, 8.0);
            let out = gpu_softmax(&ctx, &x, rows, cols);
            assert_close(&format!("softmax {rows}x{cols} on {}", tag(&ctx)), &out, &softmax_cpu(&x, cols));
            for row in out.chunks(cols) {
                let s: f32 = row.iter().sum();
                assert!((s - 1.0).abs() < 1e-5, "row sum {s}");
            }
        }
    }
}

#[test]
fn softmax_special_rows() {
    let inf = f32::INFINITY;
    let x = [-inf, 0.0, 1.0, f32::NAN, 1.0, 2.0, -inf, -inf, -inf, 1000.0, 1001.0, 999.0];
    for ctx in contexts() {
        let out = gpu_softmax(&ctx, &x, 4, 3);
        let reference = softmax_cpu(&x, 3);
        assert_eq!(out[0], 0.0, "exp(-inf) = 0");
        assert!(out[3..9].iter().all(|v| v.is_nan()), "NaN and all -inf rows give NaN: {out:?}");
        assert_close(&format!("softmax special rows on {}", tag(&ctx)), &out, &reference);
    }
}
