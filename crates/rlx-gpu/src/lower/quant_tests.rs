//! What the quant-family lowerings put in a schedule: the path per row count, device and
//! forced kernel, the packed weight bound as its bytes, and the fills for empty weights.

use super::test_util::{keys, lowered_with, schedule_with};
use crate::catalog::quant::{QuantKernel, QuantParams};
use crate::schedule::{BufferId, GpuLimits};
use crate::KernelKey;
use rlx_backend::{KernelOptions, MatmulKernel, Precision};
use rlx_ir::{DType, Graph, QuantType};

fn quant_graph(m: usize, n: usize, k: usize, q: QuantType) -> Graph {
    let mut g = Graph::new("q");
    let x = g.input("x", &[m, k], DType::F32).unwrap();
    let w = g.param("w", &[n, q.byte_len(k).unwrap()], DType::U8).unwrap();
    let y = g.quant_matmul(x, w, q).unwrap();
    g.set_outputs(&[y]).unwrap();
    g
}

#[test]
fn rows_device_and_forcing_pick_the_kernel() {
    let q = QuantType::Q6K;
    let lava = GpuLimits::lavapipe();
    let s = schedule_with(&quant_graph(1, 9, 512, q), &lava, &KernelOptions::default());
    assert_eq!(keys(&s), [KernelKey::Quant(QuantKernel::MatVecOne(q))]);
    assert_eq!(s.steps[0].workgroups, [3, 1, 1]);
    // The weight is bound as its 9 · 420 bytes, not widened.
    let w = s.steps[0].operands[1];
    assert_eq!((w.buffer, w.size), (BufferId::Leaf(1), 9 * 420));
    let p: QuantParams = bytemuck::pod_read_unaligned(&s.steps[0].params);
    assert_eq!((p.m, p.n, p.k, p.row_bytes, p.last_word), (1, 9, 512, 420, (9 * 420 - 1) / 4));
    let s = schedule_with(&quant_graph(2, 9, 512, q), &lava, &KernelOptions::default());
    assert_eq!(keys(&s), [KernelKey::Quant(QuantKernel::MatVec(q))]);
    let s = schedule_with(&quant_graph(37, 70, 512, q), &lava, &KernelOptions::default());
    assert_eq!(keys(&s), [KernelKey::Quant(QuantKernel::Tiled(q))]);
    assert_eq!(s.steps[0].workgroups, [2, 1, 1]);
    let mixed = KernelOptions { precision: Precision::Mixed, matmul: None };
    let s = schedule_with(&quant_graph(37, 70, 512, q), &GpuLimits::hopper(), &mixed);
    assert_eq!(keys(&s), [KernelKey::Quant(QuantKernel::Coop(q))]);
    let tiled = KernelOptions { matmul: Some(MatmulKernel::Tiled64), ..mixed };
    let s = schedule_with(&quant_graph(1, 9, 512, q), &GpuLimits::hopper(), &tiled);
    assert_eq!(keys(&s), [KernelKey::Quant(QuantKernel::Tiled(q))]);
    let coop = KernelOptions { matmul: Some(MatmulKernel::Coop), ..mixed };
    let e = lowered_with(&quant_graph(1, 9, 512, q), &lava, &coop).unwrap_err();
    assert!(e.to_string().contains("cooperative matrices"), "{e}");
}

#[test]
fn empty_weights_fill_zeros_and_gathers_take_their_kernel() {
    let lava = GpuLimits::lavapipe();
    let s = schedule_with(&quant_graph(3, 5, 0, QuantType::Q8_0), &lava, &KernelOptions::default());
    assert_eq!(keys(&s), [KernelKey::Shape(crate::catalog::shape::ShapeKernel::Fill)]);
    let mut g = Graph::new("gather");
    let t = g.param("t", &[7, 36], DType::U8).unwrap();
    let ids = g.input("ids", &[2, 3], DType::I32).unwrap();
    let y = g.quant_gather(t, ids, QuantType::Q4_0).unwrap();
    g.set_outputs(&[y]).unwrap();
    let s = schedule_with(&g, &lava, &KernelOptions::default());
    assert_eq!(keys(&s), [KernelKey::Quant(QuantKernel::Gather(QuantType::Q4_0))]);
    let p: QuantParams = bytemuck::pod_read_unaligned(&s.steps[0].params);
    assert_eq!((p.m, p.n, p.k, p.row_bytes), (6, 7, 64, 36));
}

/// Every format has GPU kernels: each lowers to its own variant on both paths and the gather.
#[test]
fn every_format_lowers_to_its_own_kernels() {
    let lava = GpuLimits::lavapipe();
    for q in QuantType::ALL {
        let k = 2 * q.block_elems();
        let s = schedule_with(&quant_graph(1, 3, k, q), &lava, &KernelOptions::default());
        assert_eq!(keys(&s), [KernelKey::Quant(QuantKernel::MatVecOne(q))]);
        let s = schedule_with(&quant_graph(3, 3, k, q), &lava, &KernelOptions::default());
        assert_eq!(keys(&s), [KernelKey::Quant(QuantKernel::MatVec(q))]);
        let s = schedule_with(&quant_graph(9, 3, k, q), &lava, &KernelOptions::default());
        assert_eq!(keys(&s), [KernelKey::Quant(QuantKernel::Tiled(q))]);
        let p: QuantParams = bytemuck::pod_read_unaligned(&s.steps[0].params);
        assert_eq!(p.row_bytes as usize, 2 * q.block_bytes(), "{q}");
        let mut g = Graph::new("gather");
        let t = g.param("t", &[7, 2 * q.block_bytes()], DType::U8).unwrap();
        let ids = g.input("ids", &[2, 3], DType::I32).unwrap();
        let y = g.quant_gather(t, ids, q).unwrap();
        g.set_outputs(&[y]).unwrap();
        let s = schedule_with(&g, &lava, &KernelOptions::default());
        assert_eq!(keys(&s), [KernelKey::Quant(QuantKernel::Gather(q))]);
    }
}
