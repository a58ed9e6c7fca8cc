//! What the matmul lowerings put in a schedule: kernels, launches, bindings.

use crate::catalog::matmul::MatmulKernel;
use crate::schedule::BufferId;
use crate::{lower, KernelKey, MatmulParams};
use rlx_ir::{DType, Graph, Op, UnaryOp};

use super::test_util::{graph, keys, limits, lowered, schedule};

fn matmul_params(bytes: &[u8]) -> MatmulParams {
    bytemuck::pod_read_unaligned(bytes)
}

/// A matmul with a bias and `activation` fused in.
fn biased(transpose_b: bool, activation: Option<UnaryOp>) -> Op {
    Op::FusedMatMul { transpose_a: false, transpose_b, bias: true, activation }
}

#[test]
fn matmul_with_zero_k_binds_dummies() {
    let g = graph("k0", &[("a", &[4, 0]), ("b", &[0, 3])], |g, x| g.matmul(x[0], x[1]).unwrap());
    let s = schedule(&g);
    assert_eq!(keys(&s), [KernelKey::MATMUL_TILED_F32]);
    let ops = &s.steps[0].operands;
    assert!(matches!(ops[0].buffer, BufferId::Scratch(_)) && ops[0].size == 4, "{ops:?}");
    assert!(matches!(ops[1].buffer, BufferId::Scratch(_)) && ops[1].size == 4, "{ops:?}");
    assert_eq!((ops[2].buffer, ops[2].size), (BufferId::Pool(0), 48));
    assert_eq!(matmul_params(&s.steps[0].params).k, 0);
}

#[test]
fn activation_without_an_epilogue_runs_as_a_unary_step() {
    for (act, expect) in [
        (
            Some(UnaryOp::Exp),
            vec![
                KernelKey::Matmul(MatmulKernel::Tiled { bias: true, act: None }),
                KernelKey::unary_f32(UnaryOp::Exp),
            ],
        ),
        (
            Some(UnaryOp::Gelu),
            vec![KernelKey::Matmul(MatmulKernel::Tiled {
                bias: true,
                act: Some(crate::catalog::matmul::Epilogue::Gelu),
            })],
        ),
    ] {
        let inputs: [(&str, &[usize]); 3] = [("a", &[5, 3]), ("b", &[3, 7]), ("bias", &[7])];
        let g = graph("fused", &inputs, |g, x| g.push(biased(false, act), x).unwrap());
        let s = schedule(&g);
        assert_eq!(keys(&s), expect);
        if let [mm, un] = s.steps.as_slice() {
            // The matmul writes a scratch buffer the unary step reads.
            assert_eq!(mm.operands[3], un.operands[0]);
            assert!(matches!(mm.operands[3].buffer, BufferId::Scratch(_)));
            assert!(matches!(un.operands[1].buffer, BufferId::Pool(_)));
        }
    }
}

#[test]
fn alternating_batch_broadcast_is_several_launches() {
    let inputs: [(&str, &[usize]); 2] = [("a", &[2, 1, 3, 5, 7]), ("b", &[1, 4, 3, 7, 6])];
    let g = graph("alt", &inputs, |g, x| g.matmul(x[0], x[1]).unwrap());
    let s = schedule(&g);
    assert_eq!(keys(&s), [KernelKey::MATMUL_TILED_F32; 2]);
    let offsets: Vec<u32> = s.steps.iter().map(|d| matmul_params(&d.params).c_offset).collect();
    assert_eq!(offsets, [0, 360]);
}

#[test]
fn matmul_keys_by_epilogue() {
    use super::matmul::matmul_key;
    use crate::catalog::matmul::{Epilogue, MatmulRung};
    let t = MatmulRung::Tiled64;
    assert_eq!(matmul_key(t, false, None, false), KernelKey::MATMUL_TILED_F32);
    assert_eq!(
        crate::variant(matmul_key(t, true, Some(Epilogue::Relu), false)).name,
        "matmul_tiled_bias_relu_f32"
    );
    assert_eq!(crate::variant(matmul_key(t, true, None, false)).bindings.len(), 4);
    assert_eq!(crate::variant(matmul_key(t, false, Some(Epilogue::Tanh), false)).bindings.len(), 3);
    let r = MatmulRung::Reg128;
    assert_eq!(crate::variant(matmul_key(r, false, None, false)).name, "matmul_reg_f32");
    assert_eq!(
        crate::variant(matmul_key(r, true, Some(Epilogue::Gelu), false)).name,
        "matmul_reg_bias_gelu_f32"
    );
    assert_eq!(crate::variant(matmul_key(r, true, None, false)).bindings.len(), 4);
    assert_eq!(crate::variant(matmul_key(r, false, Some(Epilogue::Silu), false)).bindings.len(), 3);
}

#[test]
fn big_matmuls_take_the_register_tile_with_its_grid() {
    use crate::catalog::matmul::Epilogue;
    // (a, b, transpose_b, bias + gelu): the key and the workgroups of the one launch.
    type Big = (&'static [usize], &'static [usize], bool, bool, KernelKey, [u32; 3]);
    // The register tile needs M, N ≥ 128 and at least 128 of its workgroups.
    let cases: [Big; 5] = [
        (
            &[1153, 67],
            &[67, 1665],
            false,
            false,
            KernelKey::Matmul(MatmulKernel::Reg { bias: false, act: None }),
            [14, 10, 1],
        ),
        (&[127, 131], &[131, 257], false, false, KernelKey::MATMUL_TILED_F32, [5, 2, 1]),
        (&[129, 131], &[131, 257], false, false, KernelKey::MATMUL_TILED_F32, [5, 3, 1]),
        (
            &[40, 256, 64],
            &[384, 64],
            true,
            false,
            KernelKey::Matmul(MatmulKernel::Reg { bias: false, act: None }),
            [3, 2, 40],
        ),
        (
            &[1300, 64],
            &[1536, 64],
            true,
            true,
            KernelKey::Matmul(MatmulKernel::Reg { bias: true, act: Some(Epilogue::Gelu) }),
            [12, 11, 1],
        ),
    ];
    for (da, db, tb, fused, key, grid) in cases {
        let mut g = Graph::new("big");
        let a = g.input("a", da, DType::F32).unwrap();
        let b = g.input("b", db, DType::F32).unwrap();
        let c = if fused {
            let n = if tb { db[db.len() - 2] } else { db[db.len() - 1] };
            let bias = g.input("bias", &[n], DType::F32).unwrap();
            g.push(biased(tb, Some(UnaryOp::Gelu)), &[a, b, bias]).unwrap()
        } else {
            g.push(Op::MatMul { transpose_a: false, transpose_b: tb }, &[a, b]).unwrap()
        };
        g.set_outputs(&[c]).unwrap();
        let s = schedule(&g);
        assert_eq!(keys(&s), [key], "{da:?} {db:?}");
        assert_eq!(s.steps[0].workgroups, grid, "{da:?} {db:?}");
        // A 16 KiB device keeps the 64 tile.
        let small = lowered(&g, &limits(16 * 1024)).unwrap();
        assert!(!matches!(small.steps[0].key, KernelKey::Matmul(MatmulKernel::Reg { .. })));
    }
}

#[test]
fn a_small_m_matmul_with_a_long_k_is_split_along_k() {
    // Nine rows: past the matrix-vector kernel's eight.
    let inputs: [(&str, &[usize]); 3] = [("a", &[9, 512]), ("b", &[100, 512]), ("bias", &[100])];
    let g = graph("splitk", &inputs, |g, x| g.push(biased(true, Some(UnaryOp::Gelu)), x).unwrap());
    let s = schedule(&g);
    let gelu = Some(crate::catalog::matmul::Epilogue::Gelu);
    assert_eq!(
        keys(&s),
        [KernelKey::MATMUL_TILED_F32, KernelKey::Matmul(MatmulKernel::SplitK { bias: true, act: gelu })]
    );
    // Four slices of 128 (the shortest): a batch of 4 partial products into a scratch
    // [4][9][100].
    let p = matmul_params(&s.steps[0].params);
    assert_eq!((p.k, p.batch, p.a_batch_inner, p.b_batch_inner), (128, 4, 128, 128));
    let parts = s.steps[0].operands[2];
    assert!(matches!(parts.buffer, BufferId::Scratch(_)) && parts.size == 4 * 9 * 100 * 4);
    assert_eq!(s.steps[0].workgroups, [2, 1, 4]);
    // The sum reads the parts and the bias and writes the result.
    assert_eq!(s.steps[1].operands[0], parts);
    assert_eq!(s.steps[1].operands.len(), 3);
}

#[test]
fn a_ragged_k_adds_a_launch_for_its_rest() {
    // K = 600: four slices of 128 and a rest of 88, the fifth partial product.
    let inputs: [(&str, &[usize]); 2] = [("a", &[9, 600]), ("b", &[100, 600])];
    let g = graph("ragged", &inputs, |g, x| g.matmul_t(x[0], x[1], false, true).unwrap());
    let s = schedule(&g);
    let sum = KernelKey::Matmul(MatmulKernel::SplitK { bias: false, act: None });
    assert_eq!(keys(&s), [KernelKey::MATMUL_TILED_F32, KernelKey::MATMUL_TILED_F32, sum]);
    let (slices, rest) = (matmul_params(&s.steps[0].params), matmul_params(&s.steps[1].params));
    assert_eq!((slices.k, slices.batch, rest.k, rest.batch), (128, 4, 88, 1));
    assert_eq!((rest.a_offset, rest.b_offset, rest.c_offset), (512, 512, 4 * 9 * 100));
    assert_eq!((s.steps[0].workgroups, s.steps[1].workgroups), ([2, 1, 4], [2, 1, 1]));
    // Both write the one scratch of five parts, which the sum reads.
    let parts = s.steps[0].operands[2];
    assert_eq!(parts.size, 5 * 9 * 100 * 4);
    assert_eq!((s.steps[1].operands[2], s.steps[2].operands[0]), (parts, parts));
    assert_eq!(
        bytemuck::pod_read_unaligned::<crate::catalog::matmul::SplitKParams>(&s.steps[2].params).splits,
        5
    );
}

#[test]
fn a_weight_gradient_takes_the_register_tile_through_split_k() {
    // dW = Xᵀ·dY of a MiniLM fine-tune step: X [15 616, 384], dY [15 616, 1536]. 36 tiles of 128
    // in 16 slices of 960 (576 workgroups), and the rest of 256.
    let inputs: [(&str, &[usize]); 2] = [("x", &[15_616, 384]), ("dy", &[15_616, 1536])];
    let g = graph("dw", &inputs, |g, x| g.matmul_t(x[0], x[1], true, false).unwrap());
    let s = schedule(&g);
    let reg = KernelKey::Matmul(MatmulKernel::Reg { bias: false, act: None });
    let sum = KernelKey::Matmul(MatmulKernel::SplitK { bias: false, act: None });
    assert_eq!(keys(&s), [reg, reg, sum]);
    assert_eq!((s.steps[0].workgroups, s.steps[1].workgroups), ([12, 3, 16], [12, 3, 1]));
    let (slices, rest) = (matmul_params(&s.steps[0].params), matmul_params(&s.steps[1].params));
    assert_eq!((slices.k, rest.k, rest.a_offset, rest.b_offset), (960, 256, 15_360 * 384, 15_360 * 1536));
    // 384×384 has too few tiles of 128 for that: the 64 tile in 16 slices.
    let inputs: [(&str, &[usize]); 2] = [("x", &[15_616, 384]), ("dy", &[15_616, 384])];
    let g = graph("dw", &inputs, |g, x| g.matmul_t(x[0], x[1], true, false).unwrap());
    let s = schedule(&g);
    assert_eq!(keys(&s), [KernelKey::MATMUL_TILED_F32, KernelKey::MATMUL_TILED_F32, sum]);
    assert_eq!(s.steps[0].workgroups, [6, 6, 16]);
}

#[test]
fn a_decode_row_times_a_linear_weight_takes_the_vector_kernel() {
    let g = graph("decode", &[("a", &[1, 64]), ("w", &[10, 64])], |g, x| {
        g.matmul_t(x[0], x[1], false, true).unwrap()
    });
    let s = schedule(&g);
    assert_eq!(keys(&s), [KernelKey::Matmul(MatmulKernel::Vec { bias: false, act: None, f16_b: false })]);
    assert_eq!(s.steps[0].workgroups, [1, 1, 1]); // 10 columns, 16 a workgroup at K = 64
                                                  // A forced rung keeps its own kernel.
    let forced =
        rlx_backend::KernelOptions { matmul: Some(rlx_backend::MatmulKernel::Tiled64), ..Default::default() };
    let s = lower(&g, &limits(32 * 1024), &forced).unwrap().into_inner();
    assert_eq!(keys(&s), [KernelKey::MATMUL_TILED_F32]);
}

#[test]
fn an_f16_weight_widened_only_for_decode_rows_is_read_as_f16() {
    let build = |extra_reader: bool| {
        let mut g = Graph::new("decode_f16");
        let a = g.input("a", &[1, 64], DType::F32).unwrap();
        let w = g.param("w", &[10, 64], DType::F16).unwrap();
        let wide = g.cast(w, DType::F32).unwrap();
        let c = g.matmul_t(a, wide, false, true).unwrap();
        let out = if extra_reader { vec![c, g.neg(wide).unwrap()] } else { vec![c] };
        g.set_outputs(&out).unwrap();
        schedule(&g)
    };
    let s = build(false);
    assert_eq!(keys(&s), [KernelKey::Matmul(MatmulKernel::Vec { bias: false, act: None, f16_b: true })]);
    // The weight's own (f16) buffer is bound as B.
    assert_eq!(s.steps[0].operands[1].buffer, BufferId::Leaf(1));
    assert_eq!(s.steps[0].operands[1].size, 10 * 64 * 2);
    // Another reader needs the f32 copy: the cast stays and the matmul reads it.
    let s = build(true);
    assert!(s.steps.iter().any(|d| matches!(d.key, KernelKey::Cast(_))), "{:?}", keys(&s));
    assert!(s
        .steps
        .iter()
        .any(|d| d.key == KernelKey::Matmul(MatmulKernel::Vec { bias: false, act: None, f16_b: false })));
}

/// Batched decode rows (M = 32 streams, past the matrix-vector kernel) on tensor cores: the f16
/// weight is bound as stored by the cooperative-matrix kernel and the cast launches nothing;
/// the q/k/v group's launch binds its three f16 weights; without tensor cores (lavapipe) the
/// cast stays and the f32 rung reads its output.
#[test]
fn an_f16_weight_read_by_the_tensor_core_rung_is_bound_as_stored() {
    use rlx_backend::{KernelOptions, Precision};
    let build = |rows: usize, widths: &[usize]| {
        let mut g = Graph::new("batch_f16");
        let a = g.input("a", &[rows, 64], DType::F32).unwrap();
        let mut outs = Vec::new();
        for (i, &n) in widths.iter().enumerate() {
            let w = g.param(&format!("w{i}"), &[n, 64], DType::F16).unwrap();
            let wide = g.cast(w, DType::F32).unwrap();
            outs.push(g.matmul_t(a, wide, false, true).unwrap());
        }
        g.set_outputs(&outs).unwrap();
        g
    };
    let mixed = KernelOptions { precision: Precision::Mixed, ..Default::default() };
    let hopper = crate::GpuLimits::hopper();
    let s = super::test_util::schedule_with(&build(32, &[96]), &hopper, &mixed);
    let coop = KernelKey::Matmul(MatmulKernel::Coop { wide: false, bias: false, act: None, f16_b: true });
    assert_eq!(keys(&s), [coop]);
    assert_eq!(s.steps[0].operands[1].buffer, BufferId::Leaf(1));
    assert_eq!(s.steps[0].operands[1].size, 96 * 64 * 2);
    assert_eq!(crate::variant(coop).name, "matmul_coop64_f16w_f32");

    let s = super::test_util::schedule_with(&build(32, &[64, 16, 16]), &hopper, &mixed);
    assert_eq!(
        keys(&s),
        [KernelKey::Matmul(MatmulKernel::CoopSplit { wide: false, bias: false, f16_b: true })]
    );
    let sizes: Vec<u64> = s.steps[0].operands[1..4].iter().map(|o| o.size).collect();
    assert_eq!(sizes, [64 * 64 * 2, 16 * 64 * 2, 16 * 64 * 2]);

    let s = super::test_util::schedule_with(&build(32, &[96]), &crate::GpuLimits::lavapipe(), &mixed);
    assert!(s.steps.iter().any(|d| matches!(d.key, KernelKey::Cast(_))), "{:?}", keys(&s));
    assert!(!keys(&s).iter().any(|k| k.needs_cooperative_matrix()), "{:?}", keys(&s));
}
