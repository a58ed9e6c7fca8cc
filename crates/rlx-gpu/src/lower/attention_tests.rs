//! What the attention lowering puts in a schedule: kernels, launches, bindings.

use crate::catalog::attention::{AttentionKernel, AttnBlock, KvStore};
use crate::schedule::BufferId;
use crate::{lower, KernelKey};
use rlx_ir::{AttentionSpec, AttnLayout, Graph, MaskKind};

use super::test_util::{graph, keys, limits, lowered, schedule};

/// A graph of one attention (Bshd, `mask`, no mask operand) of f32 inputs q, k, v of `dims`.
fn attention(name: &str, dims: [&[usize]; 3], mask: MaskKind) -> Graph {
    graph(name, &[("q", dims[0]), ("k", dims[1]), ("v", dims[2])], |g, x| {
        g.attention(x[0], x[1], x[2], None, AttentionSpec::new(AttnLayout::Bshd, mask)).unwrap()
    })
}

#[test]
fn attention_bindings_for_missing_operands() {
    // Sk = 0: k and v are empty and bound to dummies; no mask operand: q stands in.
    let g = attention("attn", [&[1, 5, 2, 8], &[1, 0, 2, 8], &[1, 0, 2, 300]], MaskKind::None);
    let s = schedule(&g);
    assert_eq!(keys(&s), [KernelKey::Attention(AttentionKernel::Rows(AttnBlock::D256, KvStore::F32))]);
    let ops = &s.steps[0].operands;
    assert_eq!(ops[0].buffer, BufferId::Leaf(0));
    assert!(matches!(ops[1].buffer, BufferId::Scratch(_)) && matches!(ops[2].buffer, BufferId::Scratch(_)));
    assert_eq!(ops[3], ops[0]);
    // 5 rows: one query block; 2 heads; Dv 300: two column blocks.
    assert_eq!(s.steps[0].workgroups, [1, 2, 2]);
    // A device with the guaranteed 16 KiB of workgroup memory gets the D128 variant.
    let small = lowered(&g, &limits(16 * 1024)).unwrap();
    assert_eq!(
        small.steps[0].key,
        KernelKey::Attention(AttentionKernel::Rows(AttnBlock::D128, KvStore::F32))
    );
    assert_eq!(small.steps[0].workgroups, [1, 2, 3]);
}

#[test]
fn few_query_rows_take_the_split_kernel_unless_forced() {
    // A decode step: 1 query row, 600 cached keys, 8 query heads over 2 kv heads.
    let g = attention("decode", [&[2, 1, 8, 64], &[2, 600, 2, 64], &[2, 600, 2, 64]], MaskKind::Causal);
    let s = schedule(&g);
    assert_eq!(
        keys(&s),
        [
            KernelKey::Attention(AttentionKernel::Split(KvStore::F32)),
            KernelKey::Attention(AttentionKernel::Combine)
        ]
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
    assert_eq!(keys(&s), [KernelKey::Attention(AttentionKernel::Rows(AttnBlock::D64, KvStore::F32))]);
}
