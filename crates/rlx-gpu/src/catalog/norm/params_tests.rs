use super::params::*;

#[test]
fn softmax_grid() {
    let (p, grid) = SoftmaxParams::new(70_000, 3).unwrap();
    assert_eq!((p.rows, p.cols, grid), (70_000, 3, [65_535, 2, 1]));
    assert!(SoftmaxParams::new(1 << 20, 1 << 13).is_err());
}

#[test]
fn params_sizes_match_the_wgsl_structs() {
    assert_eq!(std::mem::size_of::<SoftmaxParams>(), 16);
    assert_eq!(std::mem::size_of::<NormParams>(), 16);
}

#[test]
fn norm_rows_get_one_workgroup_each() {
    let (p, grid) = NormParams::new(70_000, 3, 1e-5).unwrap();
    assert_eq!((p.rows, p.cols, p.eps), (70_000, 3, 1e-5));
    assert_eq!(grid, [65_535, 2, 1]);
    assert!(NormParams::new(1 << 20, 1 << 13, 0.0).is_err());
}
