use super::*;

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
fn params_are_16_byte_multiples_within_push_constants() {
    for size in [
        std::mem::size_of::<WhereParams>(),
        std::mem::size_of::<CopyParams>(),
        std::mem::size_of::<FillParams>(),
        std::mem::size_of::<GatherParams>(),
        std::mem::size_of::<ReduceParams>(),
        std::mem::size_of::<AxisParams>(),
        std::mem::size_of::<TopKParams>(),
    ] {
        assert!(size <= 128 && size % 16 == 0, "{size}");
    }
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
fn reduce_params_chunk_and_check_offsets() {
    // x [3, 10000] reduced over axis 1 in chunks of 4096: 3 chunks per output.
    let (p, grid) = ReduceParams::new(&[(3, 10000)], &[(10000, 1)], 4096, 10000.0, 30000).unwrap();
    assert_eq!((p.n_groups, p.count, p.chunk, p.chunks, p.row_threads), (9, 10000, 4096, 3, 256));
    assert_eq!(grid, [9, 1, 1]);
    // A short reduction packs outputs: one thread each for 5 elements, 256 outputs a group.
    let (p, grid) = ReduceParams::new(&[(300, 1)], &[(5, 300)], 4096, 5.0, 1500).unwrap();
    assert_eq!((p.n_groups, p.chunk, p.chunks, p.row_threads), (300, 5, 1, 1));
    assert_eq!(grid, [2, 1, 1]);
    // Offsets past the source are refused.
    assert!(ReduceParams::new(&[(4, 1)], &[(5, 4)], 4096, 5.0, 19).is_err());
    assert!(ReduceParams::new(&[(2, 1); 5], &[(2, 1)], 4096, 2.0, 1 << 10).is_err());
    assert!(ReduceParams::new(&[(2, 1)], &[(0, 1)], 4096, 0.0, 2).is_err());
}

#[test]
fn row_threads_fit_the_row() {
    assert_eq!(row_threads(1, 1), 1);
    assert_eq!(row_threads(0, 1), 1);
    assert_eq!(row_threads(5, 1), 8);
    assert_eq!(row_threads(256, 1), 256);
    assert_eq!(row_threads(100_000, 1), 256);
    assert_eq!(row_threads(9, 4), 4);
    assert_eq!(row_threads(4096, 16), 256);
    assert_eq!(row_threads(usize::MAX, 1), 256);
}

#[test]
fn axis_and_topk_params() {
    let (p, grid) = AxisParams::new("t", 2, 7, 3, 1).unwrap();
    assert_eq!((p.lines, p.len, p.inner, p.row_threads), (6, 7, 3, 8));
    assert_eq!(grid, [1, 1, 1]);
    // 70 000 lines of 1000: a whole workgroup per line, laid out as a 2-D grid.
    let (p, grid) = AxisParams::new("t", 70_000, 1000, 1, 4).unwrap();
    assert_eq!(p.row_threads, 256);
    assert_eq!(grid, [65_535, 2, 1]);
    let (p, _) = TopKParams::new(2, 7, 3, 4, true).unwrap();
    assert_eq!((p.k, p.largest), (4, 1));
    assert!(TopKParams::new(2, 7, 3, 8, false).is_err());
    let (p, grid) = GatherParams::new(2, 5, 3, 4).unwrap();
    assert_eq!((p.numel, p.len, p.nidx, p.inner), (24, 5, 4, 3));
    assert_eq!(grid, [1, 1, 1]);
}
