//! The shape, reduce and elementwise lowerings' steps, checked without a device: which kernels run, how many
//! steps, fills, scratch buffers and the errors for what no kernel takes.

use super::test_util::{keys, lowered};
use crate::catalog::elementwise::ElementwiseKernel;
use crate::catalog::elementwise::{BinaryFn, UnaryFn};
use crate::catalog::reduce::IntType;
use crate::catalog::reduce::ReduceKernel;
use crate::catalog::shape::ShapeKernel;
use crate::catalog::WordType;
use crate::{GpuError, GpuLimits, KernelKey, Schedule};
use rlx_ir::{BinaryOp, CompareOp, DType, Graph, NodeId, ReduceOp};

/// Lowers a graph of one input `x` and the single output `f` builds.
fn lower_one(
    dims: &[usize],
    dtype: DType,
    f: impl FnOnce(&mut Graph, NodeId) -> NodeId,
) -> Result<Schedule, GpuError> {
    let mut g = Graph::new("t");
    let x = g.input("x", dims, dtype).unwrap();
    let y = f(&mut g, x);
    g.set_outputs(&[y]).unwrap();
    lowered(&g, &GpuLimits::lavapipe())
}

/// The key of the binary kernel computing `f` on `t` words.
fn binary(f: BinaryFn, t: WordType) -> KernelKey {
    KernelKey::Elementwise(ElementwiseKernel::Binary(f, t))
}

const COPY: KernelKey = KernelKey::Shape(ShapeKernel::Copy);
const FILL: KernelKey = KernelKey::Shape(ShapeKernel::Fill);

#[test]
fn pad_fills_then_copies_the_interior() {
    let s = lower_one(&[3, 4], DType::I32, |g, x| g.pad(x, &[(1, 0), (2, 2)], 5.0).unwrap()).unwrap();
    assert_eq!(keys(&s), vec![FILL, COPY]);
    // The fill word is the value as an i32.
    assert_eq!(&s.steps[0].params[4..8], &5u32.to_ne_bytes());
    // An empty input leaves only the fill.
    let s = lower_one(&[0, 4], DType::F32, |g, x| g.pad(x, &[(1, 0), (0, 0)], 1.0).unwrap()).unwrap();
    assert_eq!(keys(&s), vec![FILL]);
}

#[test]
fn concat_copies_each_non_empty_part() {
    let mut g = Graph::new("c");
    let a = g.input("a", &[2, 3], DType::Bool).unwrap();
    let e = g.input("e", &[2, 0], DType::Bool).unwrap();
    let b = g.input("b", &[2, 4], DType::Bool).unwrap();
    let y = g.concat(&[a, e, b], 1).unwrap();
    g.set_outputs(&[y]).unwrap();
    let s = lowered(&g, &GpuLimits::lavapipe()).unwrap();
    assert_eq!(keys(&s), vec![COPY, COPY]);
}

#[test]
fn long_reductions_take_passes_through_scratch() {
    let s = lower_one(&[3, 10_000], DType::F32, |g, x| g.mean(x, &[1], false).unwrap()).unwrap();
    assert_eq!(
        keys(&s),
        vec![
            KernelKey::Reduce(ReduceKernel::F32(ReduceOp::Sum)),
            KernelKey::Reduce(ReduceKernel::F32(ReduceOp::Mean))
        ]
    );
    // Partials of 3 outputs × 3 chunks (36 bytes), in a buffer of whole 16-byte units.
    assert_eq!(s.scratch, vec![48]);
    // A short one is a single step; 6 outputs of 100 take 8 threads each, one workgroup.
    let s = lower_one(&[6, 100], DType::U32, |g, x| g.max(x, &[1], false).unwrap()).unwrap();
    assert_eq!(
        keys(&s),
        vec![KernelKey::Reduce(ReduceKernel::Int(crate::catalog::reduce::IntReduceOp::Max, IntType::U32))]
    );
    assert_eq!(s.steps[0].workgroups, [1, 1, 1]);
    assert!(s.scratch.is_empty());
}

#[test]
fn empty_reductions_and_gathers_are_fills() {
    let s = lower_one(&[3, 0], DType::F32, |g, x| g.max(x, &[1], false).unwrap()).unwrap();
    assert_eq!(keys(&s), vec![FILL]);
    assert!(f32::from_ne_bytes(s.steps[0].params[4..8].try_into().unwrap()).is_nan());
    let mut g = Graph::new("g");
    let d = g.input("d", &[0, 3], DType::F32).unwrap();
    let i = g.input("i", &[2], DType::I32).unwrap();
    let y = g.gather(d, i, 0).unwrap();
    g.set_outputs(&[y]).unwrap();
    assert_eq!(keys(&lowered(&g, &GpuLimits::lavapipe()).unwrap()), vec![FILL]);
}

#[test]
fn scatter_add_is_one_launch_and_no_ids_a_zero_fill() {
    use crate::catalog::shape::params::ScatterAddParams;
    let mut g = Graph::new("g");
    let ids = g.input("ids", &[2, 3], DType::I32).unwrap();
    let src = g.input("src", &[4, 2, 3, 5], DType::F32).unwrap();
    let y = g.scatter_add(ids, src, 1, 9).unwrap();
    g.set_outputs(&[y]).unwrap();
    let s = lowered(&g, &GpuLimits::lavapipe()).unwrap();
    assert_eq!(keys(&s), vec![KernelKey::Shape(ShapeKernel::ScatterAdd)]);
    // Output [4, 9, 5]: outer 4, len 9, inner 5, six ids; a row's 20 lanes are one block, so
    // one workgroup per row.
    let p = ScatterAddParams { groups: 9, len: 9, nidx: 6, inner: 5, lanes: 20, blocks: 1, _pad: [0; 2] };
    assert_eq!(s.steps[0].params, bytemuck::bytes_of(&p));
    assert_eq!(s.steps[0].workgroups, [9, 1, 1]);
    let mut g = Graph::new("g");
    let ids = g.input("ids", &[0], DType::I32).unwrap();
    let src = g.input("src", &[3, 0], DType::F32).unwrap();
    let y = g.scatter_add(ids, src, 1, 4).unwrap();
    g.set_outputs(&[y]).unwrap();
    let s = lowered(&g, &GpuLimits::lavapipe()).unwrap();
    assert_eq!(keys(&s), vec![FILL]);
    assert_eq!(&s.steps[0].params[4..8], &0u32.to_ne_bytes());
}

#[test]
fn elementwise_keys_follow_the_dtype() {
    let s = lower_one(&[4], DType::Bool, |g, x| g.cast(x, DType::I32).unwrap()).unwrap();
    assert_eq!(keys(&s), vec![COPY]);
    let s = lower_one(&[4], DType::F32, |g, x| g.cast(x, DType::Bool).unwrap()).unwrap();
    assert_eq!(keys(&s), vec![KernelKey::Elementwise(ElementwiseKernel::Unary(UnaryFn::NonzeroF32))]);
    let s = lower_one(&[4], DType::I32, |g, x| g.binary(BinaryOp::Div, x, x).unwrap()).unwrap();
    assert_eq!(keys(&s), vec![binary(BinaryFn::Arith(BinaryOp::Div), WordType::I32)]);
    let s = lower_one(&[4], DType::Bool, |g, x| g.compare(CompareOp::Lt, x, x).unwrap()).unwrap();
    assert_eq!(keys(&s), vec![binary(BinaryFn::Compare(CompareOp::Lt), WordType::U32)]);
    let s = lower_one(&[4], DType::F32, |g, x| g.binary(BinaryOp::Pow, x, x).unwrap()).unwrap();
    assert_eq!(keys(&s), vec![KernelKey::binary_f32(BinaryOp::Pow)]);
}

#[test]
fn shapes_no_kernel_takes_are_errors_not_panics() {
    // A where whose broadcast pattern alternates over 8 dims cannot merge below rank 7.
    let mut g = Graph::new("w");
    let c = g.input("c", &[2, 1, 2, 1, 2, 1, 2, 1], DType::Bool).unwrap();
    let a = g.input("a", &[1, 2, 1, 2, 1, 2, 1, 2], DType::F32).unwrap();
    let b = g.input("b", &[1], DType::F32).unwrap();
    let y = g.where_(c, a, b).unwrap();
    g.set_outputs(&[y]).unwrap();
    assert!(matches!(lowered(&g, &GpuLimits::lavapipe()), Err(GpuError::Shape { kernel: "data_where", .. })));
    // A word kernel on a packed dtype (which rlx-opt would have wrapped in casts) is refused.
    for dtype in [DType::F16, DType::BF16, DType::U8] {
        let e = lower_one(&[3], dtype, |g, x| g.reverse(x, &[0]).unwrap()).unwrap_err();
        assert!(matches!(&e, GpuError::Lowering { node, .. } if node == "%1 reverse"), "{e}");
        assert!(e.to_string().contains("32-bit words"), "{e}");
    }
}

#[test]
fn packed_dtypes_move_only_through_casts_and_views() {
    let s = lower_one(&[5], DType::F16, |g, x| g.cast(x, DType::F32).unwrap()).unwrap();
    assert!(matches!(keys(&s)[..], [KernelKey::Cast(f)] if f.from() == DType::F16));
    // A reshape is a view: no step, whatever the element size.
    let s = lower_one(&[2, 3], DType::U8, |g, x| g.reshape(x, &[3, 2]).unwrap()).unwrap();
    assert!(s.steps.is_empty());
    assert_eq!(s.outputs[0].0.map(|o| o.size), Some(8));
}
