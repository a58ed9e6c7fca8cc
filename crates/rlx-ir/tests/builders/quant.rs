use crate::{assert_msg, f32_in, on_copy, tt};
use rlx_ir::{DType, Graph, IrError, Op, QuantType};

#[test]
fn quant_matmul_shapes() {
    for q in QuantType::ALL {
        let k = 2 * q.block_elems();
        let row = 2 * q.block_bytes();
        let mut g = Graph::new("g");
        let x = f32_in(&mut g, "x", &[3, 5, k]);
        let w = g.param("w", &[7, row], DType::U8).unwrap();
        assert_eq!(on_copy(&g, |g| g.quant_matmul(x, w, q)), tt(&[3, 5, 7], DType::F32), "{q}");
        let h = g.input("h", &[k], DType::F16).unwrap();
        assert_eq!(on_copy(&g, |g| g.quant_matmul(h, w, q)), tt(&[7], DType::F32), "{q}");
        let y = g.quant_matmul(x, w, q).unwrap();
        assert_eq!(g.node(y).unwrap().op, Op::QuantMatMul { quant: q });
        assert!(rlx_ir::dump(&g).contains(&format!("quant_matmul(%0, %1) quant={q}")));
    }
}

#[test]
fn quant_matmul_errors_name_shapes_and_the_fix() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[2, 256]);
    let w = g.param("w", &[4, 143], DType::U8).unwrap();
    let e = g.quant_matmul(x, w, QuantType::Q4K).unwrap_err();
    assert!(matches!(e, IrError::ShapeMismatch { op: "quant_matmul", .. }), "{e}");
    assert_msg(&e, &["quant_matmul", "[2, 256] and [4, 143]", "144 bytes", "[N, 144]"]);
    let x40 = f32_in(&mut g, "x40", &[2, 40]);
    let w8 = g.param("w8", &[4, 34], DType::U8).unwrap();
    let e = g.quant_matmul(x40, w8, QuantType::Q8_0).unwrap_err();
    assert_msg(&e, &["quant_matmul", "K = 40", "32 elements"]);
    let wf = g.param("wf", &[4, 34], DType::F32).unwrap();
    let x32 = f32_in(&mut g, "x32", &[32]);
    let e = g.quant_matmul(x32, wf, QuantType::Q8_0).unwrap_err();
    assert!(matches!(e, IrError::DType { op: "quant_matmul", operand: 1, .. }), "{e}");
    let xi = g.input("xi", &[32], DType::I32).unwrap();
    let e = g.quant_matmul(xi, w8, QuantType::Q8_0).unwrap_err();
    assert!(matches!(e, IrError::DType { operand: 0, .. }), "{e}");
    let w3 = g.param("w3", &[1, 4, 34], DType::U8).unwrap();
    assert_msg(&g.quant_matmul(x32, w3, QuantType::Q8_0).unwrap_err(), &["2-D U8"]);
}

#[test]
fn quant_gather_shapes_and_errors() {
    let mut g = Graph::new("g");
    let t = g.param("t", &[10, 2 * 210], DType::U8).unwrap();
    let ids = g.input("ids", &[2, 3], DType::I32).unwrap();
    assert_eq!(on_copy(&g, |g| g.quant_gather(t, ids, QuantType::Q6K)), tt(&[2, 3, 512], DType::F32));
    let e = g.quant_gather(t, ids, QuantType::Q4K).unwrap_err();
    assert_msg(&e, &["quant_gather", "[10, 420] and [2, 3]", "420 bytes", "Q4_K"]);
    let f = f32_in(&mut g, "f", &[3]);
    let e = g.quant_gather(t, f, QuantType::Q6K).unwrap_err();
    assert!(matches!(e, IrError::DType { op: "quant_gather", operand: 1, .. }), "{e}");
}
