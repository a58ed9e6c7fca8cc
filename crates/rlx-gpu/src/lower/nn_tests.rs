//! What the nn-family lowerings put in a schedule: kernels, launches, bindings.

use crate::catalog::nn::{AttnBlock, NnKernel, NormRow};
use crate::schedule::{BufferId, GpuLimits, Schedule};
use crate::{lower, KernelKey, MatmulParams};
use rlx_ir::{AttentionSpec, AttnLayout, BinaryOp, DType, Graph, MaskKind, NormKind, Op, UnaryOp};

fn limits(shared: u32) -> GpuLimits {
    GpuLimits { shared_memory_bytes: shared, ..GpuLimits::lavapipe() }
}

fn schedule(g: &Graph) -> Schedule {
    lower(g, &limits(32 * 1024), &rlx_backend::KernelOptions::default()).unwrap().into_inner()
}

fn keys(s: &Schedule) -> Vec<KernelKey> {
    s.steps.iter().map(|d| d.key).collect()
}

fn matmul_params(bytes: &[u8]) -> MatmulParams {
    bytemuck::pod_read_unaligned(bytes)
}

#[test]
fn matmul_with_zero_k_binds_dummies() {
    let mut g = Graph::new("k0");
    let a = g.input("a", &[4, 0], DType::F32).unwrap();
    let b = g.input("b", &[0, 3], DType::F32).unwrap();
    let c = g.matmul(a, b).unwrap();
    g.set_outputs(&[c]).unwrap();
    let s = schedule(&g);
    assert_eq!(keys(&s), [KernelKey::MatmulTiledF32]);
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
            vec![KernelKey::Nn(NnKernel::MatmulBias(None)), KernelKey::unary_f32(UnaryOp::Exp)],
        ),
        (
            Some(UnaryOp::Gelu),
            vec![KernelKey::Nn(NnKernel::MatmulBias(Some(crate::catalog::nn::Epilogue::Gelu)))],
        ),
    ] {
        let mut g = Graph::new("fused");
        let a = g.input("a", &[5, 3], DType::F32).unwrap();
        let b = g.input("b", &[3, 7], DType::F32).unwrap();
        let bias = g.input("bias", &[7], DType::F32).unwrap();
        let op = Op::FusedMatMul { transpose_a: false, transpose_b: false, bias: true, activation: act };
        let c = g.push(op, &[a, b, bias]).unwrap();
        g.set_outputs(&[c]).unwrap();
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
    let mut g = Graph::new("alt");
    let a = g.input("a", &[2, 1, 3, 5, 7], DType::F32).unwrap();
    let b = g.input("b", &[1, 4, 3, 7, 6], DType::F32).unwrap();
    let c = g.matmul(a, b).unwrap();
    g.set_outputs(&[c]).unwrap();
    let s = schedule(&g);
    assert_eq!(keys(&s), [KernelKey::MatmulTiledF32; 2]);
    let offsets: Vec<u32> = s.steps.iter().map(|d| matmul_params(&d.params).c_offset).collect();
    assert_eq!(offsets, [0, 360]);
}

#[test]
fn add_norm_fuses_unless_an_operand_broadcasts() {
    for (r, expect) in [
        (vec![3, 8], vec![KernelKey::Nn(NnKernel::Norm(NormRow::AddLayerNorm))]),
        (
            vec![8],
            vec![KernelKey::binary_f32(BinaryOp::Add), KernelKey::Nn(NnKernel::Norm(NormRow::LayerNorm))],
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
fn attention_bindings_for_missing_operands() {
    // Sk = 0: k and v are empty and bound to dummies; no mask operand: q stands in.
    let mut g = Graph::new("attn");
    let q = g.input("q", &[1, 5, 2, 8], DType::F32).unwrap();
    let k = g.input("k", &[1, 0, 2, 8], DType::F32).unwrap();
    let v = g.input("v", &[1, 0, 2, 300], DType::F32).unwrap();
    let spec = AttentionSpec {
        layout: AttnLayout::Bshd,
        mask: MaskKind::None,
        scale: None,
        softcap: None,
        kv_lengths: false,
    };
    let o = g.attention(q, k, v, None, spec).unwrap();
    g.set_outputs(&[o]).unwrap();
    let s = schedule(&g);
    assert_eq!(keys(&s), [KernelKey::Nn(NnKernel::Attention(AttnBlock::D256))]);
    let ops = &s.steps[0].operands;
    assert_eq!(ops[0].buffer, BufferId::Leaf(0));
    assert!(matches!(ops[1].buffer, BufferId::Scratch(_)) && matches!(ops[2].buffer, BufferId::Scratch(_)));
    assert_eq!(ops[3], ops[0]);
    // 5 rows: one query block; 2 heads; Dv 300: two column blocks.
    assert_eq!(s.steps[0].workgroups, [1, 2, 2]);
    // A device with the guaranteed 16 KiB of workgroup memory gets the D128 variant.
    let small = lower(&g, &limits(16 * 1024), &rlx_backend::KernelOptions::default()).unwrap();
    assert_eq!(small.steps[0].key, KernelKey::Nn(NnKernel::Attention(AttnBlock::D128)));
    assert_eq!(small.steps[0].workgroups, [1, 2, 3]);
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
    assert_eq!(keys(&s), [KernelKey::Nn(NnKernel::Rope), KernelKey::Nn(NnKernel::LogSoftmaxRow)]);
    // 144 elements in one group of 256; 24 rows of 6.
    assert_eq!((s.steps[0].workgroups, s.steps[1].workgroups), ([1, 1, 1], [24, 1, 1]));
}

#[test]
fn matmul_keys_by_epilogue() {
    use super::matmul_key;
    use crate::catalog::nn::{Epilogue, MatmulRung};
    let t = MatmulRung::Tiled64;
    assert_eq!(matmul_key(t, false, None), KernelKey::MatmulTiledF32);
    assert_eq!(crate::variant(matmul_key(t, true, Some(Epilogue::Relu))).name, "matmul_tiled_bias_relu_f32");
    assert_eq!(crate::variant(matmul_key(t, true, None)).bindings.len(), 4);
    assert_eq!(crate::variant(matmul_key(t, false, Some(Epilogue::Tanh))).bindings.len(), 3);
    let r = MatmulRung::Reg128;
    assert_eq!(crate::variant(matmul_key(r, false, None)).name, "matmul_reg_f32");
    assert_eq!(crate::variant(matmul_key(r, true, Some(Epilogue::Gelu))).name, "matmul_reg_bias_gelu_f32");
    assert_eq!(crate::variant(matmul_key(r, true, None)).bindings.len(), 4);
    assert_eq!(crate::variant(matmul_key(r, false, Some(Epilogue::Silu))).bindings.len(), 3);
}

#[test]
fn big_matmuls_take_the_register_tile_with_its_grid() {
    use crate::catalog::nn::Epilogue;
    // (a, b, transpose_b, bias + gelu): the key and the workgroups of the one launch.
    type Big = (&'static [usize], &'static [usize], bool, bool, KernelKey, [u32; 3]);
    // The register tile needs M, N ≥ 128 and at least 128 of its workgroups.
    let cases: [Big; 5] = [
        (
            &[1153, 67],
            &[67, 1665],
            false,
            false,
            KernelKey::Nn(NnKernel::MatmulReg { bias: false, act: None }),
            [14, 10, 1],
        ),
        (&[127, 131], &[131, 257], false, false, KernelKey::MatmulTiledF32, [5, 2, 1]),
        (&[129, 131], &[131, 257], false, false, KernelKey::MatmulTiledF32, [5, 3, 1]),
        (
            &[40, 256, 64],
            &[384, 64],
            true,
            false,
            KernelKey::Nn(NnKernel::MatmulReg { bias: false, act: None }),
            [3, 2, 40],
        ),
        (
            &[1300, 64],
            &[1536, 64],
            true,
            true,
            KernelKey::Nn(NnKernel::MatmulReg { bias: true, act: Some(Epilogue::Gelu) }),
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
            let op = Op::FusedMatMul {
                transpose_a: false,
                transpose_b: tb,
                bias: true,
                activation: Some(UnaryOp::Gelu),
            };
            g.push(op, &[a, b, bias]).unwrap()
        } else {
            g.push(Op::MatMul { transpose_a: false, transpose_b: tb }, &[a, b]).unwrap()
        };
        g.set_outputs(&[c]).unwrap();
        let s = schedule(&g);
        assert_eq!(keys(&s), [key], "{da:?} {db:?}");
        assert_eq!(s.steps[0].workgroups, grid, "{da:?} {db:?}");
        // A 16 KiB device keeps the 64 tile.
        let small = lower(&g, &limits(16 * 1024), &rlx_backend::KernelOptions::default()).unwrap();
        assert!(!matches!(small.steps[0].key, KernelKey::Nn(NnKernel::MatmulReg { .. })));
    }
}

#[test]
fn a_small_m_matmul_with_a_long_k_is_split_along_k() {
    // Nine rows: past the matrix-vector kernel's eight.
    let mut g = Graph::new("splitk");
    let a = g.input("a", &[9, 512], DType::F32).unwrap();
    let b = g.input("b", &[100, 512], DType::F32).unwrap();
    let bias = g.input("bias", &[100], DType::F32).unwrap();
    let op = Op::FusedMatMul {
        transpose_a: false,
        transpose_b: true,
        bias: true,
        activation: Some(UnaryOp::Gelu),
    };
    let c = g.push(op, &[a, b, bias]).unwrap();
    g.set_outputs(&[c]).unwrap();
    let s = schedule(&g);
    let gelu = Some(crate::catalog::nn::Epilogue::Gelu);
    assert_eq!(
        keys(&s),
        [KernelKey::MatmulTiledF32, KernelKey::Nn(NnKernel::MatmulSplitK { bias: true, act: gelu })]
    );
    // Four slices of 128: a batch of 4 partial products into a scratch [4][9][100].
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
fn a_decode_row_times_a_linear_weight_takes_the_vector_kernel() {
    let mut g = Graph::new("decode");
    let a = g.input("a", &[1, 64], DType::F32).unwrap();
    let w = g.input("w", &[10, 64], DType::F32).unwrap();
    let c = g.matmul_t(a, w, false, true).unwrap();
    g.set_outputs(&[c]).unwrap();
    let s = schedule(&g);
    assert_eq!(keys(&s), [KernelKey::Nn(NnKernel::MatmulVec { bias: false, act: None, f16_b: false })]);
    assert_eq!(s.steps[0].workgroups, [1, 1, 1]); // 10 columns, 16 a workgroup at K = 64
                                                  // A forced rung keeps its own kernel.
    let forced =
        rlx_backend::KernelOptions { matmul: Some(rlx_backend::MatmulKernel::Tiled64), ..Default::default() };
    let s = lower(&g, &limits(32 * 1024), &forced).unwrap().into_inner();
    assert_eq!(keys(&s), [KernelKey::MatmulTiledF32]);
}

#[test]
fn few_query_rows_take_the_split_kernel_unless_forced() {
    // A decode step: 1 query row, 600 cached keys, 8 query heads over 2 kv heads.
    let mut g = Graph::new("decode");
    let q = g.input("q", &[2, 1, 8, 64], DType::F32).unwrap();
    let k = g.input("k", &[2, 600, 2, 64], DType::F32).unwrap();
    let v = g.input("v", &[2, 600, 2, 64], DType::F32).unwrap();
    let spec = AttentionSpec {
        layout: AttnLayout::Bshd,
        mask: MaskKind::Causal,
        scale: None,
        softcap: None,
        kv_lengths: false,
    };
    let o = g.attention(q, k, v, None, spec).unwrap();
    g.set_outputs(&[o]).unwrap();
    let s = schedule(&g);
    assert_eq!(
        keys(&s),
        [KernelKey::Nn(NnKernel::AttentionSplit), KernelKey::Nn(NnKernel::AttentionCombine)]
    );
    // 10 chunks of 64 keys × 16 rows (2 batches × 8 heads × 1 query); one combine group per row.
    assert_eq!((s.steps[0].workgroups, s.steps[1].workgroups), ([10, 16, 1], [1, 16, 1]));
    let partials = s.steps[0].operands[6];
    assert_eq!((partials.size, s.steps[1].operands[0]), (16 * 10 * 66 * 4, partials));
    assert_eq!(s.steps[1].waits_for, [0]);
    // A forced row-blocked kernel keeps the parity table on it.
    let forced =
        rlx_backend::KernelOptions { matmul: Some(rlx_backend::MatmulKernel::Tiled64), ..Default::default() };
    let s = lower(&g, &limits(48 * 1024), &forced).unwrap();
    assert_eq!(keys(&s), [KernelKey::Nn(NnKernel::Attention(AttnBlock::D64))]);
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
    assert_eq!(keys(&s), [KernelKey::Nn(NnKernel::MatmulVec { bias: false, act: None, f16_b: true })]);
    // The weight's own (f16) buffer is bound as B.
    assert_eq!(s.steps[0].operands[1].buffer, BufferId::Leaf(1));
    assert_eq!(s.steps[0].operands[1].size, 10 * 64 * 2);
    // Another reader needs the f32 copy: the cast stays and the matmul reads it.
    let s = build(true);
    assert!(s.steps.iter().any(|d| matches!(d.key, KernelKey::Cast(_))), "{:?}", keys(&s));
    assert!(s
        .steps
        .iter()
        .any(|d| d.key == KernelKey::Nn(NnKernel::MatmulVec { bias: false, act: None, f16_b: false })));
}
