//! What the norm, softmax and rope lowerings put in a schedule.

use crate::catalog::norm::{NormKernel, NormRow};
use crate::catalog::rope::RopeKernel;
use crate::KernelKey;
use rlx_ir::{AttnLayout, BinaryOp, DType, Graph, NormKind, Op};

use super::test_util::{keys, schedule};

#[test]
fn add_norm_fuses_unless_an_operand_broadcasts() {
    for (r, expect) in [
        (vec![3, 8], vec![KernelKey::Norm(NormKernel::Row(NormRow::AddLayerNorm))]),
        (
            vec![8],
            vec![KernelKey::binary_f32(BinaryOp::Add), KernelKey::Norm(NormKernel::Row(NormRow::LayerNorm))],
        ),
    ] {
        let mut g = Graph::new("add_norm");
        let x = g.input("x", &[3, 8], DType::F32).unwrap();
        let res = g.input("r", &r, DType::F32).unwrap();
        let gamma = g.input("g", &[8], DType::F32).unwrap();
        let beta = g.input("b", &[8], DType::F32).unwrap();
        let y = g.push(Op::AddNorm { norm: NormKind::LayerNorm, eps: 1e-5 }, &[x, res, gamma, beta]).unwrap();
        g.set_outputs(&[y]).unwrap();
        let s = schedule(&g);
        assert_eq!(keys(&s), expect);
        let last = s.steps.last().unwrap();
        assert_eq!(last.operands.len(), if expect.len() == 1 { 5 } else { 4 });
        // One workgroup per row.
        assert_eq!(last.workgroups, [3, 1, 1]);
    }
}

#[test]
fn rope_and_softmax_are_one_step_each() {
    let mut g = Graph::new("rope");
    let x = g.input("x", &[2, 3, 4, 6], DType::F32).unwrap();
    let c = g.input("c", &[3, 2], DType::F32).unwrap();
    let sn = g.input("s", &[3, 2], DType::F32).unwrap();
    let y = g.rope(x, c, sn, rlx_ir::RopeStyle::GptJ, AttnLayout::Bshd, 4).unwrap();
    let z = g.log_softmax(y, -1).unwrap();
    g.set_outputs(&[z]).unwrap();
    let s = schedule(&g);
    assert_eq!(keys(&s), [KernelKey::Rope(RopeKernel::F32), KernelKey::Norm(NormKernel::LogSoftmax)]);
    // 144 elements in one group of 256; 24 rows of 6.
    assert_eq!((s.steps[0].workgroups, s.steps[1].workgroups), ([1, 1, 1], [24, 1, 1]));
}
