use crate::{assert_msg, f32_in, tt};
use rlx_ir::{DType, Graph, IrError, Op, FFT_NATIVE_MAX};

fn ops(g: &Graph) -> Vec<&'static str> {
    g.nodes().iter().map(|n| n.op.name()).collect()
}

#[test]
fn fft_is_native_for_small_powers_of_two_and_built_otherwise() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[3, 64, 2]);
    let y = g.fft(x, true).unwrap();
    assert_eq!(g.node(y).unwrap().op, Op::Fft { inverse: true });
    assert!(rlx_ir::dump(&g).contains("inverse=true"), "{}", rlx_ir::dump(&g));
    for n in [1, 3, 100, 1000, 2 * FFT_NATIVE_MAX, 8192] {
        let mut g = Graph::new("g");
        let x = f32_in(&mut g, "x", &[2, 5, n, 2]);
        let y = g.fft(x, false).unwrap();
        assert_eq!(g.ty(y).unwrap(), &tt(&[2, 5, n, 2], DType::F32), "n {n}");
        let ffts = ops(&g).iter().filter(|&&o| o == "fft").count();
        // Native: one node; four-step: two; Bluestein: a forward and an inverse transform.
        let want = if n.is_power_of_two() && n <= FFT_NATIVE_MAX { 1 } else { 2 };
        assert_eq!(ffts, want, "n {n}: {:?}", ops(&g));
        g.set_outputs(&[y]).unwrap();
        rlx_ir::verify(&g).unwrap();
    }
}

#[test]
fn fft_errors_name_the_shape_and_the_fix() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[4, 3]);
    let e = g.fft(x, false).unwrap_err();
    assert_msg(&e, &["fft", "[4, 3]", "[..., N, 2]", "rfft"]);
    let y = f32_in(&mut g, "y", &[12, 2]);
    let e = g.push(Op::Fft { inverse: false }, &[y]).unwrap_err();
    assert!(matches!(e, IrError::ShapeMismatch { op: "fft", .. }), "{e}");
    assert_msg(&e, &["power-of-two", "N = 12", "Graph::fft"]);
    let h = g.input("h", &[8, 2], DType::F16).unwrap();
    assert!(matches!(g.fft(h, false).unwrap_err(), IrError::DType { op: "fft", .. }));
    let empty = f32_in(&mut g, "e", &[3, 0, 2]);
    assert_msg(&g.fft(empty, false).unwrap_err(), &["N ≥ 1"]);
}
