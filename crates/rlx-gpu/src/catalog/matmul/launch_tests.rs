use super::launch::*;

#[test]
fn matmul_two_level_broadcast_is_one_launch() {
    let (launches, out) = matmul_launches(&[3, 1, 4, 5], &[1, 4, 5, 6], false, false).unwrap();
    assert_eq!(out, vec![3, 4, 4, 6]);
    assert_eq!(launches.len(), 1);
    let (p, grid) = launches[0];
    assert_eq!((p.a_offset, p.b_offset, p.c_offset), (0, 0, 0));
    assert_eq!(grid, [1, 1, 12]);
}

#[test]
fn matmul_alternating_broadcast_splits_into_offset_launches() {
    // Batch [2, 1, 3] · [1, 4, 3]: three runs; the leading dim (2) is walked on the host.
    // a matrices 5×7 = 35 elements, b 7×6 = 42, c 5×6 = 30.
    let (launches, out) = matmul_launches(&[2, 1, 3, 5, 7], &[1, 4, 3, 7, 6], false, false).unwrap();
    assert_eq!(out, vec![2, 4, 3, 5, 6]);
    assert_eq!(launches.len(), 2);
    let offsets: Vec<(u32, u32, u32)> =
        launches.iter().map(|(p, _)| (p.a_offset, p.b_offset, p.c_offset)).collect();
    // a: dim 0 stride 3·35 = 105; b broadcast on dim 0; c: dim 0 stride 4·3·30 = 360.
    assert_eq!(offsets, [(0, 0, 0), (105, 0, 360)]);
    for (p, grid) in &launches {
        assert_eq!((p.batch, p.batch_inner, grid[2]), (12, 3, 12));
        assert_eq!((p.a_batch_outer, p.a_batch_inner, p.b_batch_outer, p.b_batch_inner), (0, 35, 126, 42));
    }
    // Shape errors that no split fixes still come back.
    assert!(matmul_launches(&[2, 3], &[4, 5], false, false).is_err());
    assert!(matmul_launches(&[2, 3, 4], &[3, 4, 5], false, false).is_err());
}

#[test]
fn matmul_zero_k_still_launches() {
    let (launches, out) = matmul_launches(&[3, 0], &[0, 4], false, false).unwrap();
    assert_eq!(out, vec![3, 4]);
    assert_eq!(launches.len(), 1);
    assert_eq!((launches[0].0.k, launches[0].1), (0, [1, 1, 1]));
}

#[test]
fn matmul_batches_past_one_grid_dimension_split_into_launches() {
    // 70 001 batches of a 1×2 · 2×1 product: two launches covering every batch once.
    let (launches, out) = matmul_launches(&[70_001, 1, 2], &[70_001, 2, 1], false, false).unwrap();
    assert_eq!(out, vec![70_001, 1, 1]);
    let total: u32 = launches
        .iter()
        .map(|(p, g)| {
            assert!(g[2] <= crate::grid::MAX_GROUPS_PER_DIM && g[2] == p.batch);
            p.batch
        })
        .sum();
    assert_eq!(total, 70_001);
    // Each launch starts where the previous one ended (c holds 1 element per batch).
    let mut next = 0;
    for (p, _) in &launches {
        assert_eq!(p.c_offset, next);
        assert_eq!(p.a_offset, 2 * next);
        next += p.batch;
    }
}
