use super::params::*;
use crate::GpuError;

/// Every offset `base + Σ c·strides` a copy's params address, computed the kernel's way
/// (wrapping u32), in row-major order of the box.
fn kernel_offsets(p: &CopyParams) -> Vec<(u32, u32)> {
    let mut v = Vec::new();
    for i in 0..p.numel {
        let (mut rem, mut s, mut o) = (i, p.src_base, p.out_base);
        for k in (0..p.rank as usize).rev() {
            let c = rem % p.shape[k];
            rem /= p.shape[k];
            s = s.wrapping_add(c.wrapping_mul(p.src_strides[k]));
            o = o.wrapping_add(c.wrapping_mul(p.out_strides[k]));
        }
        v.push((s, o));
    }
    v
}

#[test]
fn copy_merges_dims_and_reverses_with_wrapping_strides() {
    // Reverse of a [2, 3] tensor along axis 1: base 2, strides (3, -1).
    let c = StridedCopy {
        shape: vec![2, 3],
        src_strides: vec![3, -1],
        src_base: 2,
        src_len: 6,
        out_strides: vec![3, 1],
        out_base: 0,
        out_len: 6,
    };
    let (p, _) = CopyParams::new(&c).unwrap();
    let src: Vec<u32> = kernel_offsets(&p).iter().map(|x| x.0).collect();
    assert_eq!(src, vec![2, 1, 0, 5, 4, 3]);

    // A contiguous [2, 1, 3, 4] box merges into one dim.
    let c = StridedCopy {
        shape: vec![2, 1, 3, 4],
        src_strides: vec![12, 12, 4, 1],
        src_base: 0,
        src_len: 24,
        out_strides: vec![12, 12, 4, 1],
        out_base: 0,
        out_len: 24,
    };
    let (p, _) = CopyParams::new(&c).unwrap();
    assert_eq!((p.rank, p.shape[0], p.numel), (1, 24, 24));
}

#[test]
fn copy_into_a_sub_box_of_the_output() {
    // Part [2, 2] of a concat into [2, 5] along axis 1 at offset 3.
    let c = StridedCopy {
        shape: vec![2, 2],
        src_strides: vec![2, 1],
        src_base: 0,
        src_len: 4,
        out_strides: vec![5, 1],
        out_base: 3,
        out_len: 10,
    };
    let (p, _) = CopyParams::new(&c).unwrap();
    let offs = kernel_offsets(&p);
    assert_eq!(offs, vec![(0, 3), (1, 4), (2, 8), (3, 9)]);
}

#[test]
fn copy_out_of_bounds_or_too_deep_is_refused() {
    let mut c = StridedCopy::contiguous(4);
    c.src_len = 3;
    assert!(matches!(CopyParams::new(&c), Err(GpuError::Shape { .. })));
    let mut c = StridedCopy::contiguous(4);
    c.src_strides = vec![-1];
    assert!(CopyParams::new(&c).is_err());
    // Nine dims that cannot merge (every stride is twice what merging needs).
    let shape = vec![2usize; 9];
    let strides: Vec<i64> = (0..9).rev().map(|d| 1i64 << (2 * d)).collect();
    let c = StridedCopy {
        shape,
        src_strides: strides.clone(),
        src_base: 0,
        src_len: 1 << 18,
        out_strides: strides,
        out_base: 0,
        out_len: 1 << 18,
    };
    assert!(matches!(CopyParams::new(&c), Err(GpuError::Shape { .. })));
    assert!(matches!(FillParams::new(1 << 31, 0), Err(GpuError::TooLarge { .. })));
}

#[test]
fn scatter_add_takes_one_workgroup_per_row_and_lane_block() {
    // MiniLM's embedding gradient: 30522 rows of 384, one block each.
    let (p, grid) = ScatterAddParams::new(1, 30522, 384, 16384).unwrap();
    assert_eq!((p.groups, p.lanes, p.blocks, p.nidx), (30522, 384, 1, 16384));
    assert_eq!(grid, [30522, 1, 1]);
    // Rows of 3·1000 lanes (outer 3, inner 1000) take three blocks of 1024.
    let (p, grid) = ScatterAddParams::new(3, 7, 1000, 5).unwrap();
    assert_eq!((p.groups, p.lanes, p.blocks), (21, 3000, 3));
    assert_eq!(grid, [21, 1, 1]);
    // An empty output launches nothing.
    let (p, grid) = ScatterAddParams::new(2, 0, 4, 5).unwrap();
    assert_eq!((p.groups, grid), (0, [0, 1, 1]));
    assert!(matches!(ScatterAddParams::new(1 << 16, 1 << 16, 1, 1), Err(GpuError::TooLarge { .. })));
}
