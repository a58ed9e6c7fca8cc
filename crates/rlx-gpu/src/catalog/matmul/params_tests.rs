use super::params::*;
use crate::GpuError;

#[test]
fn matmul_plain_and_transposed() {
    let (p, out, grid) = MatmulParams::from_shapes(&[7, 5], &[5, 13], false, false).unwrap();
    assert_eq!((p.m, p.n, p.k, p.batch, p.batch_inner), (7, 13, 5, 1, 1));
    assert_eq!((p.a_stride_m, p.a_stride_k, p.b_stride_k, p.b_stride_n), (5, 1, 13, 1));
    assert_eq!((out, grid), (vec![7, 13], [1, 1, 1]));

    let (p, out, _) = MatmulParams::from_shapes(&[5, 7], &[13, 5], true, true).unwrap();
    assert_eq!((p.m, p.n, p.k), (7, 13, 5));
    assert_eq!((p.a_stride_m, p.a_stride_k, p.b_stride_k, p.b_stride_n), (1, 7, 1, 5));
    assert_eq!(out, vec![7, 13]);

    let (_, _, grid) = MatmulParams::from_shapes(&[100, 129], &[129, 37], false, false).unwrap();
    assert_eq!(grid, [1, 2, 1]);
}

#[test]
fn matmul_batch_broadcast_uses_two_levels() {
    // a [2,3,4,5] · b [3,5,6]: dim 0 only in a, dim 1 in both.
    let (p, out, grid) = MatmulParams::from_shapes(&[2, 3, 4, 5], &[3, 5, 6], false, false).unwrap();
    assert_eq!(out, vec![2, 3, 4, 6]);
    assert_eq!((p.batch, p.batch_inner), (6, 3));
    assert_eq!((p.a_batch_outer, p.a_batch_inner), (60, 20));
    assert_eq!((p.b_batch_outer, p.b_batch_inner), (0, 30));
    assert_eq!(grid, [1, 1, 6]);
}

#[test]
fn matmul_same_batch_dims_merge_into_one_level() {
    let (p, out, _) = MatmulParams::from_shapes(&[2, 3, 4, 5], &[2, 3, 5, 6], false, false).unwrap();
    assert_eq!(out, vec![2, 3, 4, 6]);
    assert_eq!((p.batch, p.batch_inner), (6, 6));
    assert_eq!((p.a_batch_outer, p.a_batch_inner, p.b_batch_outer, p.b_batch_inner), (0, 20, 0, 30));
    // Size-1 batch dims drop out: batch [1, 4, 2] · [2] is a run of 4 only in a, then a run
    // of 2 in both. Matrices: a 2×3 = 6 elements, b 3×5 = 15.
    let (p, out, _) = MatmulParams::from_shapes(&[1, 4, 2, 2, 3], &[2, 3, 5], false, false).unwrap();
    assert_eq!(out, vec![1, 4, 2, 2, 5]);
    assert_eq!((p.batch, p.batch_inner), (8, 2));
    assert_eq!((p.a_batch_outer, p.a_batch_inner, p.b_batch_outer, p.b_batch_inner), (12, 6, 0, 15));
}

#[test]
fn matmul_rejects_what_it_cannot_address() {
    let alt = MatmulParams::from_shapes(&[2, 1, 3, 4, 5], &[1, 4, 3, 5, 6], false, false).unwrap_err();
    assert!(matches!(alt, GpuError::Shape { .. }), "{alt}");
    let k = MatmulParams::from_shapes(&[2, 3], &[4, 5], false, false).unwrap_err();
    assert!(k.to_string().contains("3 vs 4"), "{k}");
    assert!(MatmulParams::from_shapes(&[3], &[3, 4], false, false).is_err());
    assert!(MatmulParams::from_shapes(&[2, 3, 4], &[3, 4, 5], false, false).is_err());
    let tall = MatmulParams::from_shapes(&[64 * 65_535 + 1, 1], &[1, 1], false, false).unwrap_err();
    assert!(matches!(tall, GpuError::TooLarge { what: "row tile count", .. }), "{tall}");
    let many = MatmulParams::from_shapes(&[70_000, 1, 1], &[1, 1], false, false).unwrap_err();
    assert!(matches!(many, GpuError::TooLarge { what: "batch count", .. }), "{many}");
}

#[test]
fn matmul_empty_output_launches_nothing() {
    let (p, out, grid) = MatmulParams::from_shapes(&[0, 5], &[5, 3], false, false).unwrap();
    assert_eq!((out, grid, p.batch_inner), (vec![0, 3], [0, 1, 1], 1));
    let (p, out, grid) = MatmulParams::from_shapes(&[2, 3, 0], &[0, 4], false, false).unwrap();
    // K = 0 is not empty: the output is zeros and the kernel writes them.
    assert_eq!((out, grid, p.k), (vec![2, 3, 4], [1, 1, 2], 0));
}

#[test]
fn params_size() {
    assert_eq!(std::mem::size_of::<MatmulParams>(), 64);
}
