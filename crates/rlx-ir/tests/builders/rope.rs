use crate::{assert_msg, f32_in, tt, ty};
use rlx_ir::{AttnLayout, DType, Graph, IrError, RopeStyle};

#[test]
fn rope_checks() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[1, 4, 2, 8]);
    let cos = f32_in(&mut g, "cos", &[4, 3]);
    let sin = f32_in(&mut g, "sin", &[4, 3]);
    let y = g.rope(x, cos, sin, RopeStyle::NeoX, AttnLayout::Bshd, 6).unwrap();
    assert_eq!(ty(&g, y), tt(&[1, 4, 2, 8], DType::F32));
    let xh = f32_in(&mut g, "xh", &[1, 2, 4, 8]);
    assert!(g.rope(xh, cos, sin, RopeStyle::GptJ, AttnLayout::Bhsd, 6).is_ok());
    assert!(g.rope(xh, cos, sin, RopeStyle::GptJ, AttnLayout::Bshd, 6).is_err());
    for rd in [5, 10, 0] {
        let e = g.rope(x, cos, sin, RopeStyle::NeoX, AttnLayout::Bshd, rd).unwrap_err();
        assert!(matches!(e, IrError::Attribute { op: "rope", attr: "rotary_dims", .. }));
        assert_msg(&e, &["rope", "[1, 4, 2, 8]", "even"]);
    }
    let e = g.rope(x, cos, sin, RopeStyle::NeoX, AttnLayout::Bshd, 4).unwrap_err();
    assert_msg(&e, &["rope", "[4, 3]", "[4, 2]"]);
    let ci = g.input("ci", &[4, 3], DType::F16).unwrap();
    assert!(matches!(
        g.rope(x, ci, sin, RopeStyle::NeoX, AttnLayout::Bshd, 6),
        Err(IrError::DType { op: "rope", operand: 1, .. })
    ));
}
