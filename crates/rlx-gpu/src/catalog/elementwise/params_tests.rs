use super::params::*;
use crate::GpuError;

fn dims(p: &[u32; MAX_RANK], rank: usize) -> Vec<u32> {
    p[..rank].to_vec()
}

#[test]
fn binary_column_plus_row() {
    let (p, grid) = BinaryParams::broadcast(&[3, 4], &[3, 1], &[1, 4]).unwrap();
    assert_eq!((p.numel, p.rank), (12, 2));
    assert_eq!(dims(&p.shape, 2), [3, 4]);
    assert_eq!(dims(&p.a_strides, 2), [1, 0]);
    assert_eq!(dims(&p.b_strides, 2), [0, 1]);
    assert_eq!(grid, [1, 1, 1]);
}

#[test]
fn binary_right_aligned_lower_rank() {
    let (p, _) = BinaryParams::broadcast(&[2, 3, 4], &[4], &[2, 1, 4]).unwrap();
    assert_eq!(dims(&p.a_strides, 3), [0, 0, 1]);
    assert_eq!(dims(&p.b_strides, 3), [4, 0, 1]);
    assert_eq!(p.numel, 24);
}

#[test]
fn binary_same_shape_is_contiguous() {
    let (p, grid) = BinaryParams::broadcast(&[5, 7, 300], &[5, 7, 300], &[5, 7, 300]).unwrap();
    assert_eq!(dims(&p.a_strides, 3), [2100, 300, 1]);
    assert_eq!(p.a_strides, p.b_strides);
    // 10 500 elements / 256 = 41.02 → 42 groups.
    assert_eq!(grid, [42, 1, 1]);
}

#[test]
fn binary_scalar_and_empty() {
    let (p, grid) = BinaryParams::broadcast(&[], &[], &[]).unwrap();
    assert_eq!((p.numel, p.rank, grid), (1, 0, [1, 1, 1]));
    let (p, grid) = BinaryParams::broadcast(&[0, 3], &[1, 3], &[0, 1]).unwrap();
    assert_eq!((p.numel, grid), (0, [0, 1, 1]));
}

#[test]
fn binary_rejects_bad_shapes() {
    let e = BinaryParams::broadcast(&[3, 4], &[3, 2], &[3, 4]).unwrap_err();
    assert!(matches!(e, GpuError::Shape { kernel: "binary", .. }), "{e}");
    assert!(e.to_string().contains("[3, 2]"), "{e}");
    let r9 = [1usize; 9];
    assert!(BinaryParams::broadcast(&r9, &r9, &r9).is_err());
    assert!(BinaryParams::broadcast(&[4], &[2, 4], &[4]).is_err());
    let big = [1 << 20, 1 << 13];
    assert!(matches!(BinaryParams::broadcast(&big, &big, &big), Err(GpuError::TooLarge { .. })));
}

#[test]
fn binary_params_layout_matches_wgsl() {
    // numel, rank, 2 pad words, then three arrays of 8 u32 (two vec4 each) = 112 bytes.
    assert_eq!(std::mem::size_of::<BinaryParams>(), 112);
    let (p, _) = BinaryParams::broadcast(&[2, 3], &[2, 3], &[3]).unwrap();
    let words: &[u32] = bytemuck::cast_slice(bytemuck::bytes_of(&p));
    assert_eq!(&words[..6], &[6, 2, 0, 0, 2, 3]);
    assert_eq!(&words[12..14], &[3, 1]);
    assert_eq!(&words[20..22], &[0, 1]);
}

#[test]
fn unary_grid() {
    let (p, grid) = UnaryParams::new(1000).unwrap();
    assert_eq!((p.numel, grid), (1000, [4, 1, 1]));
    assert!(UnaryParams::new(1 << 33).is_err());
}

#[test]
fn params_sizes() {
    assert_eq!(std::mem::size_of::<UnaryParams>(), 16);
    assert_eq!(std::mem::size_of::<BinaryParams>(), 112);
}

#[test]
fn where_params_fill_push_constants() {
    assert_eq!(std::mem::size_of::<WhereParams>(), 128);
}

#[test]
fn where_strides_broadcast_each_operand() {
    let (p, grid) = WhereParams::broadcast(&[2, 3], &[2, 1], &[3], &[]).unwrap();
    assert_eq!((p.numel, p.rank), (6, 2));
    assert_eq!(p.dims[0], [2, 1, 0, 0]);
    assert_eq!(p.dims[1], [3, 0, 1, 0]);
    assert_eq!(grid, [1, 1, 1]);
    assert!(WhereParams::broadcast(&[2, 3], &[2, 2], &[3], &[]).is_err());
    assert!(WhereParams::broadcast(&[2; 8], &[1], &[1], &[1]).is_err());
}
