//! The verifier catches each defect of a hand-assembled graph; the dump has a stable form.

use rlx_ir::{dump, verify, BinaryOp, DType, Graph, IrError, Node, NodeId, Op, Tensor, TensorType, UnaryOp};

fn leaf(name: &str, dims: &[usize]) -> Node {
    Node { op: Op::Input { name: name.into() }, inputs: vec![], ty: TensorType::new(dims, DType::F32) }
}

fn add(a: u32, b: u32, dims: &[usize]) -> Node {
    Node {
        op: Op::Binary(BinaryOp::Add),
        inputs: vec![NodeId(a), NodeId(b)],
        ty: TensorType::new(dims, DType::F32),
    }
}

#[test]
fn built_graphs_verify() {
    let mut g = Graph::new("ok");
    let x = g.input("x", &[2, 3], DType::F32).unwrap();
    let w = g.param("w", &[3, 3], DType::F32).unwrap();
    let y = g.matmul(x, w).unwrap();
    let z = g.softmax(y, 0).unwrap();
    g.set_outputs(&[z]).unwrap();
    verify(&g).unwrap();
    let parts =
        Graph::from_parts("p", vec![leaf("a", &[2]), leaf("b", &[2]), add(0, 1, &[2])], vec![NodeId(2)]);
    verify(&parts).unwrap();
}

#[test]
fn verifier_requires_outputs() {
    let g = Graph::from_parts("g", vec![leaf("a", &[2])], vec![]);
    assert_eq!(verify(&g).unwrap_err(), IrError::NoOutputs { graph: "g".into() });
    let g = Graph::from_parts("g", vec![leaf("a", &[2])], vec![NodeId(1)]);
    assert!(matches!(verify(&g), Err(IrError::UnknownNode { id: NodeId(1), .. })));
}

#[test]
fn verifier_catches_dangling_ids_and_cycles() {
    let g = Graph::from_parts("g", vec![leaf("a", &[2]), add(0, 9, &[2])], vec![NodeId(1)]);
    let e = verify(&g).unwrap_err();
    assert_eq!(
        e,
        IrError::NotTopological { graph: "g".into(), node: NodeId(1), op: "add", input: NodeId(9) }
    );
    // node 1 reads node 2, which reads node 1
    let g = Graph::from_parts("g", vec![leaf("a", &[2]), add(0, 2, &[2]), add(1, 0, &[2])], vec![NodeId(2)]);
    assert!(matches!(verify(&g), Err(IrError::NotTopological { node: NodeId(1), input: NodeId(2), .. })));
    // a node reading itself
    let g = Graph::from_parts("g", vec![leaf("a", &[2]), add(0, 1, &[2])], vec![NodeId(1)]);
    assert!(matches!(verify(&g), Err(IrError::NotTopological { .. })));
    // use_counts must not panic on such graphs
    assert_eq!(g.use_counts(), vec![1, 2]);
}

#[test]
fn verifier_catches_type_drift() {
    let g = Graph::from_parts(
        "g",
        vec![leaf("a", &[2, 1]), leaf("b", &[3]), add(0, 1, &[2, 1])],
        vec![NodeId(2)],
    );
    let e = verify(&g).unwrap_err();
    assert_eq!(
        e,
        IrError::TypeDrift {
            graph: "g".into(),
            node: NodeId(2),
            op: "add",
            recorded: "f32[2, 1]".into(),
            inferred: "f32[2, 3]".into()
        }
    );
    let mut nodes = vec![leaf("a", &[2])];
    nodes.push(Node {
        op: Op::Unary(UnaryOp::Exp),
        inputs: vec![NodeId(0)],
        ty: TensorType::new([2], DType::F16),
    });
    assert!(matches!(
        verify(&Graph::from_parts("g", nodes, vec![NodeId(1)])),
        Err(IrError::TypeDrift { .. })
    ));
}

#[test]
fn verifier_catches_invalid_ops_and_names() {
    let bad = Node { op: Op::MatMul { transpose_a: false, transpose_b: false }, ..add(0, 1, &[2, 2]) };
    let g = Graph::from_parts("g", vec![leaf("a", &[2, 3]), leaf("b", &[2, 3]), bad], vec![NodeId(2)]);
    assert!(matches!(verify(&g), Err(IrError::ShapeMismatch { op: "matmul", .. })));
    let p = Node { op: Op::Param { name: "a".into() }, ..leaf("x", &[2]) };
    let g = Graph::from_parts("g", vec![leaf("a", &[2]), p], vec![NodeId(1)]);
    assert_eq!(
        verify(&g).unwrap_err(),
        IrError::DuplicateName { kind: "param", name: "a".into(), existing: NodeId(0) }
    );
    let with_input = Node { inputs: vec![NodeId(0)], ..leaf("b", &[2]) };
    let g = Graph::from_parts("g", vec![leaf("a", &[2]), with_input], vec![NodeId(1)]);
    assert!(matches!(verify(&g), Err(IrError::Arity { op: "input", .. })));
}

#[test]
fn dump_golden() {
    let mut g = Graph::new("tiny");
    let x = g.input("x", &[2, 4], DType::F32).unwrap();
    let w = g.param("w", &[3, 4], DType::F32).unwrap();
    let y = g.matmul_t(x, w, false, true).unwrap();
    let b = g.constant_f32(&[3], vec![0.5, 1.0, 2.0]).unwrap();
    let z = g.add(y, b).unwrap();
    let r = g.relu(z).unwrap();
    let s = g.sum(r, &[-1], true).unwrap();
    let big = g.constant(Tensor::from_i32([6], vec![1, 2, 3, 4, 5, 6]).unwrap()).unwrap();
    let c = g.cast(big, DType::F32).unwrap();
    g.set_outputs(&[r, s, c]).unwrap();
    let want = "\
graph \"tiny\"
%0 = input \"x\" : f32[2, 4]
%1 = param \"w\" : f32[3, 4]
%2 = matmul(%0, %1) transpose_b=true : f32[2, 3]
%3 = constant [0.5, 1.0, 2.0] : f32[3]
%4 = add(%2, %3) : f32[2, 3]
%5 = relu(%4) : f32[2, 3]
%6 = sum(%5) axes=[1] keepdim=true : f32[2, 1]
%7 = constant [1, 2, 3, 4, …] : i32[6]
%8 = cast(%7) to=f32 : f32[6]
outputs: %5, %6, %8
";
    assert_eq!(dump(&g), want);
    assert_eq!(g.to_string(), want);
}
