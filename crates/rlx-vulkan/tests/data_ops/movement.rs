//! Permute, slice, expand, reverse, pad, concat and gather: every dtype moves bit for bit.

use super::*;

const DTYPES: [DType; 4] = [DType::F32, DType::I32, DType::U32, DType::Bool];

/// A graph of one input `x` and the outputs `f` builds from it.
fn one_input(
    name: &str,
    dims: &[usize],
    dtype: DType,
    f: impl FnOnce(&mut Graph, NodeId) -> Vec<NodeId>,
) -> Graph {
    let mut g = Graph::new(name);
    let x = g.input("x", dims, dtype).unwrap();
    let outs = f(&mut g, x);
    g.set_outputs(&outs).unwrap();
    g
}

#[test]
fn permute_every_dtype_and_rank() {
    let cases: &[(&[usize], &[usize])] = &[
        (&[3, 5], &[1, 0]),
        (&[2, 3, 5, 7], &[3, 1, 0, 2]),
        (&[1, 4, 1, 3], &[2, 3, 0, 1]),
        (&[2, 2, 3, 2, 2, 3, 2, 2], &[7, 5, 3, 1, 6, 4, 2, 0]),
        (&[6], &[0]),
    ];
    for dtype in DTYPES {
        for (k, &(dims, perm)) in cases.iter().enumerate() {
            let g = one_input(&format!("permute_{dtype}_{k}"), dims, dtype, |g, x| {
                vec![g.permute(x, perm).unwrap()]
            });
            check(&g, &[("x", &tensor_of(dtype, dims, k as u64))], Match::Exact);
        }
    }
}

#[test]
fn slice_with_steps_and_empty_results() {
    let dims = [4, 11, 3];
    let cases = [(1, 0, 11, 1), (1, 2, 11, 3), (1, 10, 11, 4), (0, 1, 4, 2), (2, 1, 2, 1), (1, 5, 5, 1)];
    for dtype in DTYPES {
        for (k, &(axis, start, end, step)) in cases.iter().enumerate() {
            let g = one_input(&format!("slice_{dtype}_{k}"), &dims, dtype, |g, x| {
                vec![g.slice(x, axis, start, end, step).unwrap()]
            });
            check(&g, &[("x", &tensor_of(dtype, &dims, k as u64))], Match::Exact);
        }
    }
}

#[test]
fn expand_and_reverse() {
    let expands: &[(&[usize], &[usize])] = &[
        (&[3, 1], &[2, 3, 5]),
        (&[], &[4, 2]),
        (&[1, 7], &[1, 7]),
        (&[2, 1, 3], &[5, 2, 4, 3]),
        (&[1], &[0, 3]),
    ];
    let reverses: &[(&[usize], &[isize])] =
        &[(&[7], &[0]), (&[3, 4, 5], &[0, 2]), (&[2, 3], &[-1]), (&[2, 1, 3], &[0, 1, 2])];
    for dtype in DTYPES {
        for (k, &(from, to)) in expands.iter().enumerate() {
            let g =
                one_input(&format!("expand_{dtype}_{k}"), from, dtype, |g, x| vec![g.expand(x, to).unwrap()]);
            check(&g, &[("x", &tensor_of(dtype, from, k as u64))], Match::Exact);
        }
        for (k, &(dims, axes)) in reverses.iter().enumerate() {
            let g = one_input(&format!("reverse_{dtype}_{k}"), dims, dtype, |g, x| {
                vec![g.reverse(x, axes).unwrap()]
            });
            check(&g, &[("x", &tensor_of(dtype, dims, k as u64))], Match::Exact);
        }
    }
}

#[test]
fn pad_fills_borders_with_the_value_converted_to_the_dtype() {
    type PadCase = (&'static [usize], &'static [(usize, usize)], f64);
    let cases: &[PadCase] = &[
        (&[3, 4], &[(1, 2), (0, 3)], 1.5),
        (&[2, 1, 3], &[(0, 0), (2, 2), (1, 0)], -2.75),
        (&[0, 3], &[(2, 1), (1, 1)], 7.0),
        (&[5], &[(0, 0)], 0.0),
        (&[2, 2], &[(1, 1), (1, 1)], 1e12),
    ];
    for dtype in DTYPES {
        for (k, &(dims, pads, value)) in cases.iter().enumerate() {
            let g = one_input(&format!("pad_{dtype}_{k}"), dims, dtype, |g, x| {
                vec![g.pad(x, pads, value).unwrap()]
            });
            check(&g, &[("x", &tensor_of(dtype, dims, k as u64))], Match::Exact);
        }
    }
    let g = one_input("pad_nan", &[2, 3], DType::F32, |g, x| {
        vec![g.pad(x, &[(1, 0), (0, 2)], f64::NAN).unwrap()]
    });
    check(&g, &[("x", &f32s(&[2, 3], 1, -1.0, 1.0))], Match::Exact);
}

#[test]
fn concat_parts_including_empty_ones() {
    let cases: &[(&[&[usize]], isize)] = &[
        (&[&[2, 3], &[2, 5], &[2, 1]], 1),
        (&[&[1, 4], &[3, 4]], 0),
        (&[&[2, 0, 3], &[2, 2, 3], &[2, 0, 3], &[2, 1, 3]], 1),
        (&[&[3, 2, 2]], -1),
        (&[&[2, 3, 1], &[2, 3, 4]], 2),
    ];
    for dtype in DTYPES {
        for (k, &(parts, axis)) in cases.iter().enumerate() {
            let mut g = Graph::new(format!("concat_{dtype}_{k}"));
            let names: Vec<String> = (0..parts.len()).map(|i| format!("x{i}")).collect();
            let ids: Vec<NodeId> =
                parts.iter().zip(&names).map(|(d, n)| g.input(n, d, dtype).unwrap()).collect();
            let y = g.concat(&ids, axis).unwrap();
            g.set_outputs(&[y]).unwrap();
            let values: Vec<Tensor> =
                parts.iter().enumerate().map(|(i, d)| tensor_of(dtype, d, (10 * k + i) as u64)).collect();
            let feeds: Vec<(&str, &Tensor)> = names.iter().map(|s| s.as_str()).zip(&values).collect();
            check(&g, &feeds, Match::Exact);
        }
    }
}

#[test]
fn gather_takes_rows_and_zeroes_out_of_range_indices() {
    // (data dims, axis, index dims, indices)
    type GatherCase = (&'static [usize], isize, &'static [usize], &'static [i32]);
    let cases: &[GatherCase] = &[
        (&[5, 3], 0, &[4], &[4, 0, 2, 2]),
        (&[5, 3], 0, &[2, 3], &[1, -1, 5, 3, 4, 100]),
        (&[2, 7, 3], 1, &[3], &[6, i32::MIN, 0]),
        (&[2, 7, 3], -1, &[1], &[2]),
        (&[4], 0, &[], &[3]),
        (&[0, 3], 0, &[2], &[0, 1]),
        (&[2, 3], 1, &[0], &[]),
    ];
    for dtype in DTYPES {
        for (k, &(dims, axis, idims, idx)) in cases.iter().enumerate() {
            let mut g = Graph::new(format!("gather_{dtype}_{k}"));
            let x = g.input("x", dims, dtype).unwrap();
            let i = g.input("i", idims, DType::I32).unwrap();
            let y = g.gather(x, i, axis).unwrap();
            g.set_outputs(&[y]).unwrap();
            let iv = Tensor::from_i32(idims, idx.to_vec()).unwrap();
            check(&g, &[("x", &tensor_of(dtype, dims, k as u64)), ("i", &iv)], Match::Exact);
        }
    }
}

#[test]
fn reshape_views_and_movement_chains() {
    // A chain whose intermediate values share the arena: reshape views feed copies.
    let g = one_input("chain", &[4, 6, 5], DType::F32, |g, x| {
        let t = g.permute(x, &[2, 0, 1]).unwrap();
        let r = g.reshape(t, &[5, 24]).unwrap();
        let s = g.slice(r, 1, 3, 24, 2).unwrap();
        let v = g.reverse(s, &[0]).unwrap();
        let p = g.pad(v, &[(1, 1), (0, 2)], -1.0).unwrap();
        let back = g.reshape(p, &[7 * 13]).unwrap();
        vec![back, r]
    });
    check(&g, &[("x", &f32s_special(&[4, 6, 5], 3))], Match::Exact);
}
