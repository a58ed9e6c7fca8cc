use super::params::*;
use crate::catalog::shape::params::GatherParams;
use crate::catalog::words::row_threads;

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
