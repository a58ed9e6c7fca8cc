//! Property tests: random shapes (sizes 0 to 4, broadcast 1s, any rank up to 4) checked against
//! straightforward index arithmetic written here.
// Test crate: its helpers may unwrap, expect and panic, as the #[test] functions do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::*;
use proptest::prelude::*;
use rlx_ir::{BinaryOp, Op, ReduceOp};

/// Row-major index → multi-index of `dims`.
fn unravel(mut i: usize, dims: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; dims.len()];
    for d in (0..dims.len()).rev() {
        idx[d] = i % dims[d];
        i /= dims[d];
    }
    idx
}

fn ravel(idx: &[usize], dims: &[usize]) -> usize {
    idx.iter().zip(dims).fold(0, |acc, (&i, &d)| acc * d + i)
}

/// Two shapes that broadcast together: a base shape, each operand dropping leading dims and
/// turning some dims into 1.
fn broadcast_pair() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    (proptest::collection::vec(0usize..5, 0..4), any::<u64>()).prop_map(|(base, bits)| {
        let pick = |shift: u64| {
            let drop = ((bits >> shift) % (base.len() as u64 + 1)) as usize;
            base[drop..]
                .iter()
                .enumerate()
                .map(|(i, &d)| if (bits >> (shift + 8 + i as u64)) & 1 == 1 { 1 } else { d })
                .collect::<Vec<_>>()
        };
        (pick(0), pick(20))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn broadcast_add_matches_index_arithmetic((da, db) in broadcast_pair(), seed in any::<u64>()) {
        let rank = da.len().max(db.len());
        let out: Vec<usize> = (0..rank)
            .map(|i| {
                let a = (i + da.len()).checked_sub(rank).map_or(1, |j| da[j]);
                let b = (i + db.len()).checked_sub(rank).map_or(1, |j| db[j]);
                if a == 1 { b } else { a }
            })
            .collect();
        let a = rand_vec(da.iter().product(), seed);
        let b = rand_vec(db.iter().product(), seed ^ 1);
        let r = evf(Op::Binary(BinaryOp::Sub), &[&t32(&da, a.clone()), &t32(&db, b.clone())], &out);
        prop_assert_eq!(r.len(), out.iter().product::<usize>());
        for (i, &got) in r.iter().enumerate() {
            let idx = unravel(i, &out);
            let pick = |dims: &[usize]| -> usize {
                let sub: Vec<usize> = dims
                    .iter()
                    .enumerate()
                    .map(|(j, &d)| if d == 1 { 0 } else { idx[rank - dims.len() + j] })
                    .collect();
                ravel(&sub, dims)
            };
            prop_assert_eq!(got, a[pick(&da)] - b[pick(&db)]);
        }
    }

    #[test]
    fn sum_over_random_axes(dims in proptest::collection::vec(0usize..5, 1..5), mask in any::<u8>(), keep in any::<bool>(), seed in any::<u64>()) {
        let mut axes: Vec<usize> = (0..dims.len()).filter(|&d| (mask >> d) & 1 == 1).collect();
        if axes.is_empty() {
            axes.push(dims.len() - 1);
        }
        let out: Vec<usize> = dims
            .iter()
            .enumerate()
            .filter_map(|(d, &n)| if axes.contains(&d) { keep.then_some(1) } else { Some(n) })
            .collect();
        let kept: Vec<usize> = (0..dims.len()).filter(|d| !axes.contains(d)).collect();
        let kept_dims: Vec<usize> = kept.iter().map(|&d| dims[d]).collect();
        let x = rand_vec(dims.iter().product(), seed);
        let r = evf(Op::Reduce { op: ReduceOp::Sum, axes: axes.clone(), keepdim: keep }, &[&t32(&dims, x.clone())], &out);
        let mut want = vec![0f64; kept_dims.iter().product()];
        for (i, &v) in x.iter().enumerate() {
            let idx = unravel(i, &dims);
            let sub: Vec<usize> = kept.iter().map(|&d| idx[d]).collect();
            want[ravel(&sub, &kept_dims)] += v as f64;
        }
        close64(&r, &want, 1e-6);
    }

    #[test]
    fn permute_then_inverse_is_identity(dims in proptest::collection::vec(0usize..5, 1..5), seed in any::<u64>()) {
        let rank = dims.len();
        // A rotation by `seed % rank` positions, and its inverse.
        let k = (seed as usize) % rank;
        let perm: Vec<usize> = (0..rank).map(|i| (i + k) % rank).collect();
        let mut inv = vec![0; rank];
        for (i, &p) in perm.iter().enumerate() {
            inv[p] = i;
        }
        let pdims: Vec<usize> = perm.iter().map(|&p| dims[p]).collect();
        let x = rand_vec(dims.iter().product(), seed);
        let y = t32(&pdims, evf(Op::Permute(perm.clone()), &[&t32(&dims, x.clone())], &pdims));
        // Spot-check the forward permutation element by element.
        for (i, &v) in y.as_f32().unwrap().iter().enumerate() {
            let idx = unravel(i, &pdims);
            let mut src = vec![0; rank];
            for (j, &p) in perm.iter().enumerate() {
                src[p] = idx[j];
            }
            prop_assert_eq!(v, x[ravel(&src, &dims)]);
        }
        prop_assert_eq!(evf(Op::Permute(inv), &[&y], &dims), x);
    }

    #[test]
    fn matmul_random_shapes(m in 0usize..6, k in 0usize..6, n in 0usize..6, batch in 1usize..4, bcast in any::<bool>(),
                            ta in any::<bool>(), tb in any::<bool>(), seed in any::<u64>()) {
        let bb = if bcast { 1 } else { batch };
        let ad = if ta { vec![batch, k, m] } else { vec![batch, m, k] };
        let bd = if tb { vec![bb, n, k] } else { vec![bb, k, n] };
        let a = rand_vec(batch * m * k, seed);
        let b = rand_vec(bb * k * n, seed ^ 7);
        let r = evf(Op::MatMul { transpose_a: ta, transpose_b: tb }, &[&t32(&ad, a.clone()), &t32(&bd, b.clone())], &[batch, m, n]);
        let mut want = vec![0f64; batch * m * n];
        for z in 0..batch {
            let zb = if bcast { 0 } else { z };
            for i in 0..m {
                for j in 0..n {
                    for p in 0..k {
                        let x = if ta { a[(z * k + p) * m + i] } else { a[(z * m + i) * k + p] };
                        let y = if tb { b[(zb * n + j) * k + p] } else { b[(zb * k + p) * n + j] };
                        want[(z * m + i) * n + j] += x as f64 * y as f64;
                    }
                }
            }
        }
        close64(&r, &want, 1e-5);
    }
}
