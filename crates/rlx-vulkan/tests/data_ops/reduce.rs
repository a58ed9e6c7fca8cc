//! Reduce over any axes, argmax/argmin, cumsum and top-k.

use super::*;
use rlx_ir::{ArgReduceOp, ReduceOp};

const REDUCE_OPS: [ReduceOp; 5] =
    [ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod];

fn reduce_graph(op: ReduceOp, dtype: DType, dims: &[usize], axes: &[isize], keepdim: bool) -> Graph {
    let mut g = Graph::new(format!("{}_{dtype}_{dims:?}_{axes:?}", op.name()));
    let x = g.input("x", dims, dtype).unwrap();
    let y = g.reduce(op, x, axes, keepdim).unwrap();
    g.set_outputs(&[y]).unwrap();
    g
}

/// Data for `op`: products stay near 1 (closer for more factors) so that they neither
/// overflow nor vanish into denormals.
fn reduce_input(op: ReduceOp, dtype: DType, dims: &[usize], seed: u64) -> Tensor {
    let spread = if dims.iter().product::<usize>() < 1000 { 0.1 } else { 0.001 };
    match (op, dtype) {
        (ReduceOp::Prod, DType::F32) => f32s(dims, seed, 1.0 - spread, 1.0 + spread),
        (_, DType::F32) => f32s(dims, seed, -1.0, 1.0),
        (_, DType::I32) => i32s(dims, seed, i32::MIN / 2, i32::MAX / 2),
        (_, _) => u32s(dims, seed, u32::MAX),
    }
}

#[test]
fn reduce_over_any_axes_every_op_and_dtype() {
    let dims = [3, 4, 5, 6];
    let axes: &[&[isize]] = &[&[0], &[1], &[3], &[0, 2], &[1, 3], &[0, 1, 2, 3], &[1, 2], &[0, 3]];
    for op in REDUCE_OPS {
        for dtype in [DType::F32, DType::I32, DType::U32] {
            if op == ReduceOp::Mean && dtype != DType::F32 {
                continue;
            }
            for (k, a) in axes.iter().enumerate() {
                let g = reduce_graph(op, dtype, &dims, a, k % 2 == 0);
                check(&g, &[("x", &reduce_input(op, dtype, &dims, k as u64))], Match::Close);
            }
            // Size-1 and prime dims, a scalar result from one element.
            let g = reduce_graph(op, dtype, &[1, 7, 1, 13], &[1, 2], false);
            check(&g, &[("x", &reduce_input(op, dtype, &[1, 7, 1, 13], 9))], Match::Close);
            let g = reduce_graph(op, dtype, &[1], &[0], false);
            check(&g, &[("x", &reduce_input(op, dtype, &[1], 10))], Match::Close);
        }
    }
}

#[test]
fn long_reductions_run_in_passes() {
    // 20011 and 60000 reduced elements: two passes.
    for op in REDUCE_OPS {
        let g = reduce_graph(op, DType::F32, &[2, 20011], &[1], false);
        check(&g, &[("x", &reduce_input(op, DType::F32, &[2, 20011], 1))], Match::Close);
        let g = reduce_graph(op, DType::F32, &[300, 200], &[0, 1], false);
        check(&g, &[("x", &reduce_input(op, DType::F32, &[300, 200], 2))], Match::Close);
        // The reduced axis first: partials of a strided set.
        let g = reduce_graph(op, DType::F32, &[9000, 3], &[0], true);
        check(&g, &[("x", &reduce_input(op, DType::F32, &[9000, 3], 3))], Match::Close);
    }
    // 100003 factors: the compensated f32 product keeps within 1e-5 where a plain one
    // drifts by ~√n ulp.
    let g = reduce_graph(ReduceOp::Prod, DType::F32, &[100003], &[0], false);
    check(&g, &[("x", &reduce_input(ReduceOp::Prod, DType::F32, &[100003], 5))], Match::Close);
    // 4097² elements into one sum: three passes.
    let g = reduce_graph(ReduceOp::Sum, DType::F32, &[4097, 4097], &[0, 1], false);
    check(&g, &[("x", &f32s(&[4097, 4097], 6, -1.0, 1.0))], Match::Close);
    let g = reduce_graph(ReduceOp::Sum, DType::I32, &[70000], &[0], false);
    check(&g, &[("x", &reduce_input(ReduceOp::Sum, DType::I32, &[70000], 4))], Match::Exact);
}

#[test]
fn reduce_nan_empty_and_special_values() {
    for op in REDUCE_OPS {
        // NaN, ±inf and ±0 in most rows.
        let g = reduce_graph(op, DType::F32, &[5, 14], &[1], false);
        check(&g, &[("x", &f32s_special(&[5, 14], 6))], Match::Close);
        // Reducing an empty axis: sum 0, prod 1, mean/max/min NaN for f32, 0 for integers.
        let g = reduce_graph(op, DType::F32, &[3, 0, 2], &[1], false);
        check(&g, &[("x", &Tensor::from_f32([3, 0, 2], vec![]).unwrap())], Match::Exact);
        if op != ReduceOp::Mean {
            let g = reduce_graph(op, DType::I32, &[0, 4], &[0], true);
            check(&g, &[("x", &Tensor::from_i32([0, 4], vec![]).unwrap())], Match::Exact);
        }
    }
}

#[test]
fn argmax_argmin_ties_nan_and_dtypes() {
    // Ties (first index wins) and NaN (first NaN wins) along both axes.
    let v = vec![
        1.0,
        3.0,
        3.0,
        -1.0,
        f32::NAN,
        2.0,
        f32::NAN,
        -5.0,
        -0.0,
        0.0,
        0.0,
        -0.0,
        f32::NEG_INFINITY,
        f32::INFINITY,
        f32::INFINITY,
        f32::NEG_INFINITY,
    ];
    let x = Tensor::from_f32([4, 4], v).unwrap();
    for op in [ArgReduceOp::ArgMax, ArgReduceOp::ArgMin] {
        for axis in [0isize, 1] {
            let mut g = Graph::new(format!("{op:?}_{axis}_specials"));
            let xi = g.input("x", &[4, 4], DType::F32).unwrap();
            let y =
                if op == ArgReduceOp::ArgMax { g.argmax(xi, axis, false) } else { g.argmin(xi, axis, true) };
            g.set_outputs(&[y.unwrap()]).unwrap();
            check(&g, &[("x", &x)], Match::Exact);
        }
        for dtype in [DType::F32, DType::I32, DType::U32] {
            for (dims, axis) in
                [(&[3, 300, 5][..], 1isize), (&[7][..], 0), (&[2, 3, 1000][..], -1), (&[2, 1, 3][..], 1)]
            {
                let mut g = Graph::new(format!("{op:?}_{dtype}_{dims:?}_{axis}"));
                let xi = g.input("x", dims, dtype).unwrap();
                let y = if op == ArgReduceOp::ArgMax {
                    g.argmax(xi, axis, true)
                } else {
                    g.argmin(xi, axis, false)
                };
                g.set_outputs(&[y.unwrap()]).unwrap();
                check(&g, &[("x", &tensor_of(dtype, dims, 3))], Match::Exact);
            }
        }
    }
}

#[test]
fn cumsum_over_blocks_and_axes() {
    for (dims, axis) in [
        (&[3, 2500][..], 1isize),
        (&[1500, 3][..], 0),
        (&[2, 5, 3][..], 1),
        (&[1][..], 0),
        (&[4, 1025][..], -1),
    ] {
        let mut g = Graph::new(format!("cumsum_f32_{dims:?}_{axis}"));
        let x = g.input("x", dims, DType::F32).unwrap();
        let y = g.cumsum(x, axis).unwrap();
        g.set_outputs(&[y]).unwrap();
        check(&g, &[("x", &f32s(dims, 4, -1.0, 1.0))], Match::Close);
        for dtype in [DType::I32, DType::U32] {
            let mut g = Graph::new(format!("cumsum_{dtype}_{dims:?}_{axis}"));
            let x = g.input("x", dims, dtype).unwrap();
            let y = g.cumsum(x, axis).unwrap();
            g.set_outputs(&[y]).unwrap();
            // Large values: the running sums wrap.
            let xv =
                if dtype == DType::I32 { i32s(dims, 5, i32::MIN, i32::MAX) } else { u32s(dims, 5, u32::MAX) };
            check(&g, &[("x", &xv)], Match::Exact);
        }
    }
    // NaN and infinities propagate from where they appear.
    let mut g = Graph::new("cumsum_specials");
    let x = g.input("x", &[3, 40], DType::F32).unwrap();
    let y = g.cumsum(x, 1).unwrap();
    g.set_outputs(&[y]).unwrap();
    check(&g, &[("x", &f32s_special(&[3, 40], 8))], Match::Close);
}

#[test]
fn topk_values_and_indices_sorted_with_ties_and_nan() {
    let specials = Tensor::from_f32(
        [2, 8],
        vec![
            1.0,
            f32::NAN,
            3.0,
            3.0,
            -0.0,
            0.0,
            f32::NEG_INFINITY,
            f32::NAN,
            2.0,
            2.0,
            2.0,
            -1.0,
            f32::INFINITY,
            5.0,
            -7.0,
            2.0,
        ],
    )
    .unwrap();
    for largest in [true, false] {
        for k in [1, 3, 8] {
            let mut g = Graph::new(format!("topk_specials_{largest}_{k}"));
            let x = g.input("x", &[2, 8], DType::F32).unwrap();
            let (v, i) = g.topk(x, k, 1, largest).unwrap();
            g.set_outputs(&[v, i]).unwrap();
            check(&g, &[("x", &specials)], Match::Exact);
        }
        for dtype in [DType::F32, DType::I32, DType::U32] {
            for (dims, k, axis) in [
                (&[3, 300][..], 5, 1isize),
                (&[40, 2, 3][..], 40, 0),
                (&[1][..], 1, 0),
                (&[2, 9, 4][..], 4, 1),
            ] {
                let mut g = Graph::new(format!("topk_{dtype}_{dims:?}_{k}_{axis}_{largest}"));
                let x = g.input("x", dims, dtype).unwrap();
                let (v, i) = g.topk(x, k, axis, largest).unwrap();
                g.set_outputs(&[i, v]).unwrap();
                // Small integer ranges: many ties.
                check(&g, &[("x", &tensor_of(dtype, dims, 6))], Match::Exact);
            }
        }
    }
}

#[test]
fn per_row_kernels_on_a_2d_grid() {
    // Lines of 129 take a whole workgroup each, so 65 537 of them need a 2-D grid: the row
    // kernels rebuild the line id from it and skip the padding groups of its last row.
    let dims = [65_537, 129];
    let mut g = Graph::new("rows_2d");
    let x = g.input("x", &dims, DType::F32).unwrap();
    let a = g.argmax(x, 1, false).unwrap();
    g.set_outputs(&[a]).unwrap();
    check(&g, &[("x", &f32s(&dims, 12, -1.0, 1.0))], Match::Exact);
}

#[test]
fn short_rows_share_workgroups() {
    // Rows of 1 to 9 elements: 1 to 16 threads a row, many rows per workgroup, and a last
    // workgroup only partly used.
    for len in [1usize, 2, 3, 5, 9] {
        let dims = [1001, len];
        let mut g = Graph::new(format!("short_rows_{len}"));
        let x = g.input("x", &dims, DType::F32).unwrap();
        let s = g.sum(x, &[1], false).unwrap();
        let m = g.min(x, &[1], true).unwrap();
        let a = g.argmin(x, 1, false).unwrap();
        let c = g.cumsum(x, 1).unwrap();
        let (v, i) = g.topk(x, len.min(2), 1, false).unwrap();
        g.set_outputs(&[s, m, a, c, v, i]).unwrap();
        check(&g, &[("x", &f32s_special(&dims, len as u64))], Match::Close);
    }
}
