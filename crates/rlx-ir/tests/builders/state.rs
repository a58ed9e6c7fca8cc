use crate::{assert_msg, f32_in, ty};
use rlx_ir::{DType, Graph, IrError};

#[test]
fn write_rows_takes_one_offset_or_one_per_outer_index() {
    let mut g = Graph::new("g");
    // A batched cache [3, 8, 2, 4] written along axis 1: offsets [1] or [3].
    let s = g.state("s", &[3, 8, 2, 4], DType::F32).unwrap();
    let rows = f32_in(&mut g, "rows", &[3, 1, 2, 4]);
    let per_row = g.input("per_row", &[3], DType::I32).unwrap();
    let w = g.write_rows(s, rows, per_row, 1).unwrap();
    assert_eq!(ty(&g, w), ty(&g, s));

    let mut g = Graph::new("g");
    let s = g.state("s", &[3, 8, 2, 4], DType::F32).unwrap();
    let rows = f32_in(&mut g, "rows", &[3, 1, 2, 4]);
    let one = g.input("one", &[1], DType::I32).unwrap();
    assert!(g.write_rows(s, rows, one, 1).is_ok());

    for (dims, why) in [(&[2][..], "[2]"), (&[3, 1][..], "[3, 1]"), (&[24][..], "[24]")] {
        let mut g = Graph::new("g");
        let s = g.state("s", &[3, 8, 2, 4], DType::F32).unwrap();
        let rows = f32_in(&mut g, "rows", &[3, 1, 2, 4]);
        let off = g.input("off", dims, DType::I32).unwrap();
        let e = g.write_rows(s, rows, off, 1).unwrap_err();
        assert!(matches!(e, IrError::ShapeMismatch { op: "write_rows", .. }), "{why}: {e}");
        assert_msg(&e, &["write_rows", why, "I32 [1]", "I32 [3]", "axis 1"]);
    }

    // Along axis 0 there is no outer dim: only [1] is legal.
    let mut g = Graph::new("g");
    let s = g.state("s", &[4, 8], DType::F32).unwrap();
    let rows = f32_in(&mut g, "rows", &[1, 8]);
    let two = g.input("two", &[2], DType::I32).unwrap();
    let e = g.write_rows(s, rows, two, 0).unwrap_err();
    assert_msg(&e, &["write_rows", "I32 [1]"]);
}
