//! Sizes at the front door: a shape whose element count or byte size overflows is `TooLarge`
//! naming the op and the shape, in debug and release alike — never a panic, never a wrapped
//! shape. Large but valid shapes (terabytes) are accepted: nothing is allocated.

use super::{assert_msg, f32_in};
use rlx_ir::{
    verify, DType, Graph, IrError, Node, Op, Shape, Tensor, TensorData, TensorType, MAX_TENSOR_BYTES,
};

/// Asserts a `TooLarge` from `op` whose shape prints as `shape`, with advice in the message.
fn too_large<T: std::fmt::Debug>(r: Result<T, IrError>, op: &str, shape: &str) {
    let e = r.unwrap_err();
    assert!(
        matches!(&e, IrError::TooLarge { op: o, limit, .. } if *o == op && *limit == MAX_TENSOR_BYTES),
        "{e:?}"
    );
    assert_msg(&e, &[op, shape, "smaller", "split the op"]);
}

#[test]
fn input_whose_element_count_overflows_is_refused() {
    let mut g = Graph::new("g");
    too_large(g.input("x", &[1 << 32, 1 << 32], DType::F32), "input", "[4294967296, 4294967296]");
    too_large(g.param("w", &[1 << 32, 1 << 32], DType::F32), "param", "[4294967296, 4294967296]");
    assert!(g.is_empty(), "a refused leaf is not added");
}

#[test]
fn byte_size_past_the_limit_is_refused_even_when_the_count_fits() {
    let mut g = Graph::new("g");
    // 2^62 f32 elements fit usize but need 2^64 bytes; 2^61 need 2^63 > isize::MAX.
    too_large(g.input("a", &[1 << 62], DType::F32), "input", "[4611686018427387904]");
    too_large(g.input("b", &[1 << 61], DType::F32), "input", "[2305843009213693952]");
    // Bool counts 4 bytes (a GPU word): 2^61 bools are too many, 2^61 f16 (2^62 bytes) are not.
    too_large(g.input("c", &[1 << 61], DType::Bool), "input", "[2305843009213693952]");
    g.input("d", &[1 << 61], DType::F16).unwrap();
    let e = g.input("e", &[1 << 62], DType::F32).unwrap_err();
    assert_msg(&e, &["4611686018427387904 elements × 4 bytes = 18446744073709551616 bytes", "f32"]);
}

#[test]
fn reshape_of_a_large_valid_input_to_an_overflowing_shape_is_refused() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[1 << 20, 1 << 20]); // 2^40 elements, 4 TiB: valid
    too_large(g.reshape(x, &[1 << 32, 1 << 32]), "reshape", "[4294967296, 4294967296]");
    // 2^40 · (2^24 + 1) wraps to 2^40 in a bare product: it must not pass as a same-count reshape.
    too_large(g.reshape(x, &[1 << 40, (1 << 24) + 1]), "reshape", "[1099511627776, 16777217]");
    let ok = g.reshape(x, &[1 << 30, 1 << 10]).unwrap();
    assert_eq!(g.ty(ok).unwrap().numel(), 1 << 40);
}

#[test]
fn expand_and_broadcast_to_an_overflowing_shape_are_refused() {
    let mut g = Graph::new("g");
    let x = f32_in(&mut g, "x", &[1, 1 << 20]);
    too_large(g.expand(x, &[1 << 50, 1 << 20]), "expand", "[1125899906842624, 1048576]");
    too_large(g.broadcast_to(x, &[1 << 44, 1 << 20]), "expand", "[17592186044416, 1048576]");
    // Implicit broadcasting of two valid operands whose result overflows.
    let a = f32_in(&mut g, "a", &[1 << 40, 1]);
    let b = f32_in(&mut g, "b", &[1, 1 << 40]);
    too_large(g.add(a, b), "add", "[1099511627776, 1099511627776]");
    too_large(g.lt(a, b), "lt", "[1099511627776, 1099511627776]");
}

#[test]
fn matmul_and_concat_producing_an_overflowing_shape_are_refused() {
    let mut g = Graph::new("g");
    let a = f32_in(&mut g, "a", &[1 << 31, 2]);
    let b = f32_in(&mut g, "b", &[2, 1 << 31]);
    too_large(g.matmul(a, b), "matmul", "[2147483648, 2147483648]");
    let c = f32_in(&mut g, "c", &[1 << 60]); // 2^62 bytes: valid
    too_large(g.concat(&[c, c], 0), "concat", "[2305843009213693952]");
    let n = g.len();
    too_large(g.concat(&[c, c, c, c, c], 0), "concat", "[5764607523034234880]");
    assert_eq!(g.len(), n);
}

#[test]
fn tensor_constructors_refuse_overflowing_shapes() {
    // A wrapped count of 0 would have matched empty data.
    too_large(Tensor::from_f32([1 << 32, 1 << 32], vec![]), "tensor", "[4294967296, 4294967296]");
    too_large(Tensor::new([1 << 62], TensorData::Bool(vec![])), "tensor", "[4611686018427387904]");
    too_large(Tensor::try_zeros([1 << 32, 1 << 32], DType::I32), "tensor", "[4294967296, 4294967296]");
    let t = Tensor::from_f32([2, 2], vec![0.0; 4]).unwrap();
    too_large(t.reshape([1 << 40, (1 << 24) + 1]), "tensor", "[1099511627776, 16777217]");
    assert_eq!(Tensor::try_zeros([3, 0], DType::F16).unwrap().numel(), 0);
    let mut g = Graph::new("g");
    too_large(g.full(&[1 << 32, 1 << 32], DType::F32, 1.0), "full", "[4294967296, 4294967296]");
}

#[test]
fn verify_checks_the_size_of_leaves_built_by_hand() {
    let leaf = Node {
        op: Op::Input { name: "x".into() },
        inputs: vec![],
        ty: TensorType::new([1 << 32, 1 << 32], DType::F32),
    };
    let g = Graph::from_parts("g", vec![leaf], vec![rlx_ir::NodeId(0)]);
    too_large(verify(&g), "input", "[4294967296, 4294967296]");
}

#[test]
fn unchecked_shapes_saturate_instead_of_wrapping() {
    let s = Shape::new(&[1 << 32, 1 << 32]);
    assert_eq!(s.checked_numel(), None);
    assert_eq!(s.numel(), usize::MAX);
    assert_eq!(s.strides(), vec![1 << 32, 1]);
    assert_eq!(Shape::new(&[1 << 40, 1 << 40, 0]).numel(), 0);
    assert_eq!(Shape::new(&[1 << 40, 1 << 40, 0]).checked_numel(), None, "its strides overflow");
    assert_eq!(Shape::new(&[3, 0, 5]).checked_numel(), Some(0));
    assert_eq!(Shape::scalar().checked_numel(), Some(1));
    assert_eq!(TensorType::new([1 << 62], DType::F32).storage_bytes(), u64::MAX);
    assert_eq!(TensorType::new([3], DType::Bool).storage_bytes(), 12);
    assert_eq!(TensorType::new([3], DType::Bool).size_bytes(), 3);
}
