//! Builder of user-defined ops ([`crate::CustomOp`]).

use crate::{CustomCall, CustomOp, Graph, IrError, NodeId, Op};
use std::sync::Arc;

impl Graph {
    /// Applies the user-defined `op` to `inputs`. Its shape rule gives the output type; a
    /// refusal is `IrError::Custom`, naming the op, the operand shapes and the rule's reason.
    pub fn custom(&mut self, op: &Arc<CustomOp>, inputs: &[NodeId]) -> Result<NodeId, IrError> {
        self.push(Op::Custom(CustomCall(op.clone())), inputs)
    }
}

#[cfg(test)]
mod tests {
    use crate::{CustomOp, DType, Graph, Tensor, TensorType};

    fn row_sum() -> std::sync::Arc<CustomOp> {
        CustomOp::builder("row_sum")
            .shape(|ins: &[&TensorType]| match ins {
                [x] if x.shape.rank() == 2 && x.dtype == DType::F32 => {
                    Ok(TensorType::new(vec![x.shape.dims()[0]], DType::F32))
                }
                _ => Err("takes one f32 matrix".into()),
            })
            .cpu(|ins: &[&Tensor], out: &TensorType| {
                let x = ins[0].to_f32_vec();
                let cols = ins[0].dims()[1].max(1);
                let v = x.chunks(cols).map(|r| r.iter().sum()).collect();
                Tensor::from_f32(out.shape.clone(), v).map_err(|e| e.to_string())
            })
            .build()
            .unwrap()
    }

    #[test]
    fn the_shape_rule_types_the_node_and_its_refusal_names_the_op() {
        let op = row_sum();
        let mut g = Graph::new("c");
        let x = g.input("x", &[3, 4], DType::F32).unwrap();
        let y = g.custom(&op, &[x]).unwrap();
        assert_eq!(g.node(y).unwrap().ty, TensorType::new(vec![3], DType::F32));
        let v = g.input("v", &[4], DType::F32).unwrap();
        let e = g.custom(&op, &[v]).unwrap_err().to_string();
        assert!(e.contains("row_sum") && e.contains("[4]") && e.contains("one f32 matrix"), "{e}");
        assert!(crate::dump(&g).contains("name=row_sum"));
    }

    #[test]
    fn a_cpu_reference_of_the_wrong_shape_is_an_error() {
        let op = CustomOp::builder("bad")
            .shape(|ins: &[&TensorType]| Ok(ins[0].clone()))
            .cpu(|_: &[&Tensor], _: &TensorType| {
                Tensor::from_f32(vec![1], vec![0.0]).map_err(|e| e.to_string())
            })
            .build()
            .unwrap();
        let x = Tensor::from_f32(vec![2], vec![1.0, 2.0]).unwrap();
        let out = TensorType::new(vec![2], DType::F32);
        assert!(op.cpu(&[&x], &out).unwrap_err().contains("shape rule"));
    }

    #[test]
    fn builder_refuses_missing_parts_and_bad_names() {
        assert!(CustomOp::builder("Bad Name").build().unwrap_err().contains("lowercase"));
        assert!(CustomOp::builder("x").build().unwrap_err().contains("shape rule"));
        let e = CustomOp::builder("x")
            .shape(|i: &[&TensorType]| Ok(i[0].clone()))
            .cpu(|i: &[&Tensor], _: &TensorType| Ok(i[0].clone()))
            .wgsl("", [64, 1, 1], 20, |_: &[&TensorType], _: &TensorType| Ok((vec![], [1, 1, 1])))
            .build()
            .unwrap_err();
        assert!(e.contains("multiple of 16"), "{e}");
    }
}
