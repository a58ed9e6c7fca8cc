//! Unary, binary, compare, where and cast on every dtype.

use super::*;
use rlx_ir::{BinaryOp, CompareOp, UnaryOp};

#[test]
fn unary_f32_every_op_with_specials() {
    for op in UnaryOp::ALL {
        let mut g = Graph::new(format!("unary_{}", op.name()));
        let x = g.input("x", &[3, 67], DType::F32).unwrap();
        let y = g.unary(op, x).unwrap();
        g.set_outputs(&[y]).unwrap();
        check(&g, &[("x", &f32s_special(&[3, 67], 11))], Match::Close);
    }
}

#[test]
fn unary_i32_neg_abs_wrap() {
    let edges = Tensor::from_i32([7], vec![i32::MIN, i32::MIN + 1, -5, -1, 0, 3, i32::MAX]).unwrap();
    for op in [UnaryOp::Neg, UnaryOp::Abs] {
        for x in [&edges, &i32s(&[1], 3, -9, 9), &i32s(&[5, 61], 4, i32::MIN, i32::MAX)] {
            let mut g = Graph::new(format!("unary_{}_i32_{:?}", op.name(), x.dims()));
            let xi = g.input("x", x.dims(), DType::I32).unwrap();
            let y = g.unary(op, xi).unwrap();
            g.set_outputs(&[y]).unwrap();
            check(&g, &[("x", x)], Match::Exact);
        }
    }
}

/// Shape pairs that broadcast: equal, trailing, leading ones, scalars, rank 5, alternating.
const BROADCASTS: &[(&[usize], &[usize])] = &[
    (&[3, 67], &[3, 67]),
    (&[2, 3, 5], &[3, 1]),
    (&[1], &[7]),
    (&[], &[4, 1, 6]),
    (&[2, 1, 3, 1, 5], &[1, 4, 1, 7, 1]),
    (&[1, 1], &[1, 1]),
];

fn binary_graph(op: BinaryOp, dtype: DType, a: &[usize], b: &[usize]) -> Graph {
    let mut g = Graph::new(format!("{}_{dtype}_{a:?}_{b:?}", op.name()));
    let x = g.input("a", a, dtype).unwrap();
    let y = g.input("b", b, dtype).unwrap();
    let z = g.binary(op, x, y).unwrap();
    g.set_outputs(&[z]).unwrap();
    g
}

#[test]
fn binary_f32_every_op_broadcasting() {
    for op in BinaryOp::ALL {
        for (k, &(a, b)) in BROADCASTS.iter().enumerate() {
            let g = binary_graph(op, DType::F32, a, b);
            let x = f32s_special(a, 2 * k as u64 + 1);
            let y = f32s(b, 2 * k as u64 + 2, -2.0, 2.0);
            check(&g, &[("a", &x), ("b", &y)], Match::Close);
        }
    }
}

#[test]
fn binary_int_every_op_wraps_and_divides_like_the_cpu() {
    // Edge values against each other (a column against a row): overflow, x / 0, MIN / -1,
    // negative exponents.
    let edges = vec![i32::MIN, -7, -2, -1, 0, 1, 2, 3, 31, i32::MAX];
    let n = edges.len();
    let a = Tensor::from_i32([n, 1], edges.clone()).unwrap();
    let b = Tensor::from_i32([1, n], edges).unwrap();
    let ue = vec![0u32, 1, 2, 3, 7, 31, 32, 1 << 31, u32::MAX - 1, u32::MAX];
    let ua = Tensor::from_u32([n, 1], ue.clone()).unwrap();
    let ub = Tensor::from_u32([1, n], ue).unwrap();
    for op in BinaryOp::ALL {
        check(&binary_graph(op, DType::I32, &[n, 1], &[1, n]), &[("a", &a), ("b", &b)], Match::Exact);
        check(&binary_graph(op, DType::U32, &[n, 1], &[1, n]), &[("a", &ua), ("b", &ub)], Match::Exact);
        let (x, y) = (i32s(&[2, 3, 5], 4, -100, 100), i32s(&[3, 1], 5, -4, 4));
        check(&binary_graph(op, DType::I32, &[2, 3, 5], &[3, 1]), &[("a", &x), ("b", &y)], Match::Exact);
    }
}

#[test]
fn compare_every_op_and_dtype() {
    let fa = Tensor::from_f32([6, 1], vec![f32::NAN, -0.0, 0.0, 1.5, f32::INFINITY, -2.0]).unwrap();
    let fb = Tensor::from_f32([1, 6], vec![0.0, -0.0, f32::NAN, 1.5, -2.0, f32::INFINITY]).unwrap();
    for op in CompareOp::ALL {
        for dtype in [DType::F32, DType::I32, DType::U32, DType::Bool] {
            for (k, &(a, b)) in BROADCASTS.iter().enumerate() {
                let mut g = Graph::new(format!("{}_{dtype}_{a:?}_{b:?}", op.name()));
                let (x, y) = (g.input("a", a, dtype).unwrap(), g.input("b", b, dtype).unwrap());
                let z = g.compare(op, x, y).unwrap();
                g.set_outputs(&[z]).unwrap();
                let (xv, yv) = (tensor_of(dtype, a, k as u64), tensor_of(dtype, b, 100 + k as u64));
                // Small integer ranges make equal pairs common.
                check(&g, &[("a", &xv), ("b", &yv)], Match::Exact);
            }
        }
        let mut g = Graph::new(format!("{}_f32_specials", op.name()));
        let (x, y) = (g.input("a", &[6, 1], DType::F32).unwrap(), g.input("b", &[1, 6], DType::F32).unwrap());
        let z = g.compare(op, x, y).unwrap();
        g.set_outputs(&[z]).unwrap();
        check(&g, &[("a", &fa), ("b", &fb)], Match::Exact);
    }
}

#[test]
fn where_broadcasts_all_three_on_every_dtype() {
    let shapes: &[(&[usize], &[usize], &[usize])] = &[
        (&[4, 5], &[4, 5], &[4, 5]),
        (&[4, 1], &[1, 5], &[]),
        (&[], &[3, 1, 2], &[7, 1]),
        (&[2, 1, 3, 1], &[1, 5, 1, 4], &[2, 5, 3, 1]),
    ];
    for dtype in [DType::F32, DType::I32, DType::U32, DType::Bool] {
        for (k, &(c, a, b)) in shapes.iter().enumerate() {
            let mut g = Graph::new(format!("where_{dtype}_{k}"));
            let ci = g.input("c", c, DType::Bool).unwrap();
            let (ai, bi) = (g.input("a", a, dtype).unwrap(), g.input("b", b, dtype).unwrap());
            let z = g.where_(ci, ai, bi).unwrap();
            g.set_outputs(&[z]).unwrap();
            let (cv, av, bv) = (bools(c, k as u64), tensor_of(dtype, a, 7), tensor_of(dtype, b, 8));
            check(&g, &[("c", &cv), ("a", &av), ("b", &bv)], Match::Exact);
        }
    }
}

/// Values every cast must get right: specials, rounding boundaries, saturation points.
fn cast_inputs(dtype: DType) -> Tensor {
    match dtype {
        DType::F32 => Tensor::from_f32(
            [20],
            vec![
                f32::NAN,
                f32::INFINITY,
                f32::NEG_INFINITY,
                0.0,
                -0.0,
                0.7,
                -0.7,
                -1.0,
                2.5,
                -2.5,
                1e-40,
                2147483520.0,
                2147483648.0,
                -2147483648.0,
                -3e9,
                4294967040.0,
                4294967296.0,
                1e20,
                16777217.0,
                -123456.75,
            ],
        )
        .unwrap(),
        DType::I32 => Tensor::from_i32(
            [12],
            vec![
                i32::MIN,
                i32::MIN + 1,
                -16777217,
                -16777216,
                -1,
                0,
                1,
                16777217,
                16777219,
                2147483583,
                2147483584,
                i32::MAX,
            ],
        )
        .unwrap(),
        DType::U32 => Tensor::from_u32(
            [12],
            vec![
                0,
                1,
                16777216,
                16777217,
                16777218,
                16777219,
                33554435,
                2147483647,
                2147483648,
                4294967167,
                4294967168,
                u32::MAX,
            ],
        )
        .unwrap(),
        DType::Bool => Tensor::from_bool([5], vec![true, false, false, true, true]).unwrap(),
        DType::F16 => panic!("f16 is not stored on GPUs"),
    }
}

#[test]
fn cast_between_every_pair_of_dtypes() {
    let dtypes = [DType::F32, DType::I32, DType::U32, DType::Bool];
    for from in dtypes {
        for to in dtypes {
            let x = cast_inputs(from);
            let mut g = Graph::new(format!("cast_{from}_{to}"));
            let xi = g.input("x", x.dims(), from).unwrap();
            let y = g.cast(xi, to).unwrap();
            g.set_outputs(&[y]).unwrap();
            // A cast is a rounding rule: exact, not merely close.
            check(&g, &[("x", &x)], Match::Exact);
        }
    }
}

#[test]
fn elementwise_chain_on_a_large_tensor_uses_a_2d_grid() {
    // More than 65535 groups of 256 threads: the kernels rebuild the linear id from a 2-D grid.
    let dims = [65536 * 256 / 1000 + 7, 1000];
    let mut g = Graph::new("large_where");
    let x = g.input("x", &dims, DType::F32).unwrap();
    let zero = g.scalar(0.0).unwrap();
    let c = g.gt(x, zero).unwrap();
    let n = g.neg(x).unwrap();
    let y = g.where_(c, x, n).unwrap();
    let i = g.cast(y, DType::I32).unwrap();
    g.set_outputs(&[y, i]).unwrap();
    check(&g, &[("x", &f32s(&dims, 5, -1000.0, 1000.0))], Match::Exact);
}
