//! `VulkanBackend` through the rlx-backend contract: graphs optimized for its capabilities,
//! compiled, run and compared with the CPU backend, on every available device (lavapipe also
//! with the discrete-GPU staging paths forced).

// Tests and their helpers may unwrap, expect and panic: a failure is the test's verdict.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use rlx_backend::{Backend, BackendError, Executable};
use rlx_gpu::{
    BinaryParams, BufferId, Dispatch, GpuLimits, KernelKey, Leaf, LeafKind, MatmulParams, Operand, Schedule,
    SoftmaxParams, ValidSchedule,
};
use rlx_ir::{BinaryOp, DType, Graph, NodeId, Tensor, TensorType};
use rlx_opt::PassOptions;
use rlx_test_support::graphs::{input, one_output, param};
use rlx_vulkan::{VulkanBackend, VulkanExecutable};
use std::sync::Arc;
use support::*;

/// One backend per available context (a loud skip when there is none).
fn backends() -> Vec<VulkanBackend> {
    contexts().into_iter().map(VulkanBackend::with_context).collect()
}

fn name_of(b: &VulkanBackend) -> String {
    format!("{} ({:?})", b.info().name, b.context().memory_strategy())
}

/// The node of leaf `name` (input or param) in `g`.
fn leaf(g: &Graph, name: &str) -> NodeId {
    let all = g.inputs().into_iter().chain(g.params());
    all.into_iter().find(|(n, _, _)| *n == name).map(|(_, id, _)| id).unwrap()
}

/// Compiles `g` (optimized for `backend` with `passes`, as rlx-runtime does), sets `params`,
/// runs once with `inputs`.
fn compile_run(
    backend: &dyn Backend,
    g: &Graph,
    passes: PassOptions,
    params: &[(&str, &Tensor)],
    inputs: &[(&str, &Tensor)],
) -> Result<(Box<dyn Executable>, Vec<Tensor>), BackendError> {
    let g = rlx_opt::optimize(g, backend.capabilities(), &passes, None)
        .unwrap_or_else(|e| panic!("optimizing for {}: {e}", backend.capabilities().device_name));
    let mut exe = backend.compile(&g, &Default::default())?;
    for (name, t) in params {
        exe.set_param(leaf(&g, name), t)?;
    }
    let feeds: Vec<(NodeId, &Tensor)> = inputs.iter().map(|(n, t)| (leaf(&g, n), *t)).collect();
    let out = exe.run(&feeds)?;
    Ok((exe, out))
}

/// The CPU backend's outputs for the same graph and values.
fn cpu_reference(g: &Graph, params: &[(&str, &Tensor)], inputs: &[(&str, &Tensor)]) -> Vec<Tensor> {
    let cpu = rlx_cpu::CpuBackend::new();
    compile_run(&cpu, g, PassOptions::none(), params, inputs).unwrap().1
}

fn f32_tensor(dims: &[usize], seed: u64) -> Tensor {
    Tensor::from_f32(dims, data(dims.iter().product(), seed, -1.5, 1.5)).unwrap()
}

/// softmax(x @ w + b) with awkward sizes (primes, not tile multiples).
fn mlp_graph(m: usize, k: usize, n: usize) -> Graph {
    let mut g = Graph::new("add_matmul_softmax");
    let x = g.input("x", &[m, k], DType::F32).unwrap();
    let w = g.param("w", &[k, n], DType::F32).unwrap();
    let b = g.param("b", &[n], DType::F32).unwrap();
    let y = g.matmul(x, w).unwrap();
    let y = g.add(y, b).unwrap();
    let y = g.softmax(y, -1).unwrap();
    g.set_outputs(&[y]).unwrap();
    g
}

#[test]
fn add_matmul_softmax_matches_the_cpu() {
    let (m, k, n) = (37, 67, 29);
    let g = mlp_graph(m, k, n);
    let (x, w, b) = (f32_tensor(&[m, k], 1), f32_tensor(&[k, n], 2), f32_tensor(&[n], 3));
    let params = [("w", &w), ("b", &b)];
    let reference = cpu_reference(&g, &params, &[("x", &x)]);
    let reference = reference[0].to_f64_vec();
    for backend in backends() {
        for passes in [PassOptions::none(), PassOptions::default()] {
            let what = format!("{} with {passes:?}", name_of(&backend));
            let (mut exe, out) = compile_run(&backend, &g, passes, &params, &[("x", &x)])
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(out.len(), 1);
            assert_eq!((out[0].dtype(), out[0].dims()), (DType::F32, &[m, n][..]), "{what}");
            assert_close(&what, out[0].as_f32().unwrap(), &reference);
            let p = exe.last_profile().expect("a profile after run");
            assert!(p.compute > std::time::Duration::ZERO, "{what}: {p:?}");
            // A second run with other input data uses it.
            let x2 = f32_tensor(&[m, k], 9);
            let reference2 = cpu_reference(&g, &params, &[("x", &x2)]);
            let id = leaf(&rlx_opt::optimize(&g, backend.capabilities(), &passes, None).unwrap(), "x");
            let out2 = exe.run(&[(id, &x2)]).unwrap();
            assert_close(
                &format!("{what}, second run"),
                out2[0].as_f32().unwrap(),
                &reference2[0].to_f64_vec(),
            );
        }
    }
}

/// Outputs that are leaves (input, param, constant) and an empty output: a schedule without
/// steps, read straight from the leaf buffers.
#[test]
fn leaves_and_empty_tensors_as_outputs() {
    let mut g = Graph::new("leaves");
    let x = g.input("x", &[2, 3], DType::F32).unwrap();
    let p = g.param("p", &[4], DType::F32).unwrap();
    let c = g.constant_f32(&[3], vec![0.5, -2.0, 7.25]).unwrap();
    let e = g.input("e", &[0, 5], DType::F32).unwrap();
    g.set_outputs(&[x, p, c, e, x]).unwrap();
    let xv = Tensor::from_f32([2, 3], vec![1.0, f32::NAN, -3.0, 4.0, 5.5, -0.0]).unwrap();
    let pv = Tensor::from_f32([4], vec![9.0, 8.0, 7.0, 6.0]).unwrap();
    let ev = Tensor::from_f32([0, 5], vec![]).unwrap();
    for backend in backends() {
        let what = name_of(&backend);
        let (_, out) =
            compile_run(&backend, &g, PassOptions::none(), &[("p", &pv)], &[("x", &xv), ("e", &ev)])
                .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(out.len(), 5, "{what}");
        let got = out[0].as_f32().unwrap();
        assert_eq!(out[0].dims(), &[2, 3]);
        assert!(got[1].is_nan(), "{what}: NaN passes through");
        assert_eq!([got[0], got[2], got[3], got[4], got[5]], [1.0, -3.0, 4.0, 5.5, 0.0], "{what}");
        assert_eq!(out[1], pv, "{what}");
        assert_eq!(out[2].as_f32().unwrap(), &[0.5, -2.0, 7.25], "{what}");
        assert_eq!((out[3].dims(), out[3].numel()), (&[0, 5][..], 0), "{what}");
        assert_eq!(out[4].dims(), &[2, 3], "{what}");
    }
}

#[test]
fn bool_i32_u32_inputs_pass_through() {
    let mut g = Graph::new("passthrough");
    let m = g.input("m", &[5], DType::Bool).unwrap();
    let i = g.input("i", &[2, 2], DType::I32).unwrap();
    let u = g.input("u", &[3], DType::U32).unwrap();
    g.set_outputs(&[m, i, u]).unwrap();
    let mv = Tensor::from_bool([5], vec![true, false, false, true, true]).unwrap();
    let iv = Tensor::from_i32([2, 2], vec![i32::MIN, -1, 0, i32::MAX]).unwrap();
    let uv = Tensor::from_u32([3], vec![u32::MAX, 1, 0]).unwrap();
    for backend in backends() {
        let what = name_of(&backend);
        let (_, out) =
            compile_run(&backend, &g, PassOptions::none(), &[], &[("m", &mv), ("i", &iv), ("u", &uv)])
                .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(out, vec![mv.clone(), iv.clone(), uv.clone()], "{what}");
    }
}

#[test]
fn set_param_twice_uses_the_second_value() {
    let mut g = Graph::new("param");
    let p = g.param("p", &[3], DType::F32).unwrap();
    g.set_outputs(&[p]).unwrap();
    let (first, second) = (
        Tensor::from_f32([3], vec![1.0, 2.0, 3.0]).unwrap(),
        Tensor::from_f32([3], vec![-4.0, 0.5, 6.0]).unwrap(),
    );
    for backend in backends() {
        let what = name_of(&backend);
        let (mut exe, out) = compile_run(&backend, &g, PassOptions::none(), &[("p", &first)], &[]).unwrap();
        assert_eq!(out[0], first, "{what}");
        exe.set_param(leaf(&g, "p"), &second).unwrap();
        assert_eq!(exe.run(&[]).unwrap()[0], second, "{what}");
    }
}

/// The same through a kernel that reads the param (needs rlx-gpu's binary lowering).
#[test]
fn set_param_twice_through_a_kernel() {
    let (g, _, _) =
        one_output("param_add", [input("x", &[4], DType::F32), param("p", &[4], DType::F32)], |g, [x, p]| {
            g.add(x, p)
        });
    let xv = Tensor::from_f32([4], vec![1.0, 2.0, 3.0, 4.0]).unwrap();
    let p1 = Tensor::from_f32([4], vec![10.0; 4]).unwrap();
    let p2 = Tensor::from_f32([4], vec![100.0, 200.0, 300.0, 400.0]).unwrap();
    for backend in backends() {
        let what = name_of(&backend);
        let (mut exe, out) = compile_run(&backend, &g, PassOptions::none(), &[("p", &p1)], &[("x", &xv)])
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(out[0].as_f32().unwrap(), &[11.0, 12.0, 13.0, 14.0], "{what}");
        let opt = rlx_opt::optimize(&g, backend.capabilities(), &PassOptions::none(), None).unwrap();
        exe.set_param(leaf(&opt, "p"), &p2).unwrap();
        let out = exe.run(&[(leaf(&opt, "x"), &xv)]).unwrap();
        assert_eq!(out[0].as_f32().unwrap(), &[101.0, 202.0, 303.0, 404.0], "{what}");
    }
}

#[test]
fn a_tensor_past_one_binding_is_a_compile_error_naming_the_node() {
    for backend in backends() {
        let what = name_of(&backend);
        // The device's own limit: checked before anything is allocated.
        let max = backend.limits().max_binding_bytes;
        let n = (max / 4 + 1) as usize;
        let mut g = Graph::new("huge");
        let x = g.input("big", &[n], DType::F32).unwrap();
        g.set_outputs(&[x]).unwrap();
        let e = backend.compile(&g, &Default::default()).err().unwrap();
        match &e {
            BackendError::LimitExceeded { node, requested, limit, .. } => {
                assert!(node.contains("%0") && node.contains(&n.to_string()), "{what}: {e}");
                assert_eq!((*requested, *limit), (n as u64 * 4, max), "{what}");
            }
            other => panic!("{what}: expected LimitExceeded, got {other}"),
        }

        // A small limit through the test hook: a 4 KiB intermediate of two 128-byte leaves past
        // a 1 KiB binding.
        let limits = GpuLimits { max_binding_bytes: 1024, ..backend.limits().clone() };
        let backend = backend.with_limits_override(limits);
        assert_eq!(backend.capabilities().max_tensor_bytes, 1024);
        let (g, _, _) = one_output(
            "small_limit",
            [input("x", &[32, 1], DType::F32), param("w", &[1, 32], DType::F32)],
            |g, [x, w]| g.matmul(x, w),
        );
        let e = backend.compile(&g, &Default::default()).err().unwrap();
        let text = e.to_string();
        assert!(
            matches!(e, BackendError::LimitExceeded { requested: 4096, limit: 1024, .. }),
            "{what}: {text}"
        );
        assert!(text.contains("%2 matmul") && text.contains("[32, 32]"), "{what}: {text}");
    }
}

#[test]
fn capabilities_follow_the_device() {
    for backend in backends() {
        let caps = backend.capabilities();
        let info = backend.info();
        assert_eq!(caps.device_name, info.name);
        assert_eq!(caps.max_tensor_bytes, u64::from(info.limits.max_storage_buffer_range));
        assert!(caps.buffer_alignment >= 16 && caps.buffer_alignment.is_power_of_two());
        assert!(caps.native_broadcast);
        // Every dtype stored at its own size; f16 where the device has f16 shaders and 16-bit
        // storage; kernels compute on 32-bit words only.
        let f16 = info.features.shader_f16 && info.features.storage_buffer_16bit;
        assert_eq!(caps.dtypes.contains(&DType::F16), f16);
        assert_eq!(caps.missing_dtype_features.contains_key(&DType::F16), !f16);
        for d in [DType::BF16, DType::U8, DType::Bool, DType::F32] {
            assert!(caps.dtypes.contains(&d), "{d}");
        }
        assert!(!caps.compute_dtypes.contains(&DType::F16) && !caps.compute_dtypes.contains(&DType::U8));
        assert!(!caps.supports(rlx_ir::OpKind::Conv2d));
        assert!(caps.supports(rlx_ir::OpKind::Attention) && caps.supports(rlx_ir::OpKind::MatMul));
        assert!(caps.supports(rlx_ir::OpKind::FusedElementwise) && caps.fusion_limits.is_some());
        assert_eq!(backend.name(), "vulkan");
    }
}

/// The driver half alone, on a hand-made schedule (independent of rlx-gpu's lowerings):
/// softmax(x @ w + c) with x an input, w a param, c a constant, three kernels over two pools
/// (the third step writes the pool the first one wrote), a leaf output and an empty output.
#[test]
fn hand_made_schedule_runs_like_the_reference() {
    let (m, k, n) = (13, 31, 17);
    let (xv, wv) = (data(m * k, 4, -1.0, 1.0), data(k * n, 5, -1.0, 1.0));
    let cv = data(n, 6, -0.5, 0.5);
    for backend in backends() {
        let what = name_of(&backend);
        let limits = backend.limits().clone();
        let bytes = (m * n * 4) as u64;
        // Buffers come in whole 16-byte units (rlx_gpu::BINDING_UNIT); bindings are rounded up.
        let whole = |b: usize| (b as u64).div_ceil(16) * 16;
        let (o_mm, o_add, o_sm) = (0, 1, 0);
        let slot = |pool| Operand { buffer: BufferId::Pool(pool), offset: 0, size: bytes };
        let leaf_op = |i, size| Operand { buffer: BufferId::Leaf(i), offset: 0, size };
        let f32_ty = |d: &[usize]| TensorType::new(d, DType::F32);
        let leaves = vec![
            Leaf {
                node: NodeId(0),
                kind: LeafKind::Input("x".into()),
                ty: f32_ty(&[m, k]),
                bytes: whole(m * k * 4),
            },
            Leaf {
                node: NodeId(1),
                kind: LeafKind::Param("w".into()),
                ty: f32_ty(&[k, n]),
                bytes: whole(k * n * 4),
            },
            Leaf {
                node: NodeId(2),
                kind: LeafKind::Constant(Tensor::from_f32([n], cv.clone()).unwrap()),
                ty: f32_ty(&[n]),
                bytes: whole(n * 4),
            },
        ];
        let (mp, _, mg) = MatmulParams::from_shapes(&[m, k], &[k, n], false, false).unwrap();
        let (bp, bg) = BinaryParams::broadcast(&[m, n], &[m, n], &[n]).unwrap();
        let (sp, sg) = SoftmaxParams::new(m, n).unwrap();
        let steps = vec![
            Dispatch::new(
                KernelKey::MATMUL_TILED_F32,
                "%3 matmul",
                vec![leaf_op(0, leaves[0].bytes), leaf_op(1, leaves[1].bytes), slot(o_mm)],
                &mp,
                mg,
            ),
            Dispatch::new(
                KernelKey::binary_f32(BinaryOp::Add),
                "%4 add",
                vec![slot(o_mm), leaf_op(2, leaves[2].bytes), slot(o_add)],
                &bp,
                bg,
            ),
            Dispatch::new(KernelKey::SOFTMAX_ROW_F32, "%5 softmax", vec![slot(o_add), slot(o_sm)], &sp, sg),
        ];
        let schedule = Schedule {
            name: "hand".into(),
            steps,
            pools: vec![whole(m * n * 4), whole(m * n * 4)],
            leaves,
            scratch: vec![],
            outputs: vec![
                (Some(slot(o_sm)), f32_ty(&[m, n])),
                (Some(leaf_op(1, (k * n * 4) as u64)), f32_ty(&[k, n])),
                (None, f32_ty(&[0, n])),
            ],
        };
        let schedule = ValidSchedule::new(schedule, &limits).unwrap();
        let mut exe = VulkanExecutable::build(Arc::clone(backend.context()), &schedule)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!((exe.dispatches(), exe.barriers()), (3, 2), "{what}: each step reads the one before");
        exe.set_param(NodeId(1), &Tensor::from_f32([k, n], wv.clone()).unwrap()).unwrap();
        let mut x_nan = xv.clone();
        x_nan[k] = f32::NAN; // row 1 of the input
        let out = exe.run(&[(NodeId(0), &Tensor::from_f32([m, k], x_nan).unwrap())]).unwrap();
        assert_eq!(out.len(), 3);

        let mm = cpu_matmul(&xv, &wv, m, k, n);
        let mut reference = Vec::with_capacity(m * n);
        for (r, row) in mm.chunks(n).enumerate() {
            let logits: Vec<f64> = row.iter().zip(&cv).map(|(v, c)| v + *c as f64).collect();
            let max = logits.iter().cloned().fold(f64::MIN, f64::max);
            let sum: f64 = logits.iter().map(|l| (l - max).exp()).sum();
            reference.extend(logits.iter().map(|l| if r == 1 { f64::NAN } else { (l - max).exp() / sum }));
        }
        assert_close(&what, out[0].as_f32().unwrap(), &reference);
        assert!(out[0].as_f32().unwrap()[n..2 * n].iter().all(|v| v.is_nan()), "{what}: NaN row");
        assert_eq!(out[1].as_f32().unwrap(), &wv[..], "{what}: param read back");
        assert_eq!(out[2].dims(), &[0, n]);
        let p = exe.last_profile().unwrap();
        assert!(p.compute > std::time::Duration::ZERO, "{what}");
    }
}

/// A schedule that breaks the lowering's promises never reaches the driver: the only way to
/// one is `ValidSchedule`, whose check names the step.
#[test]
fn a_broken_schedule_is_an_error() {
    for backend in backends() {
        let ty = TensorType::new([4], DType::F32);
        let (p, grid) = rlx_gpu::UnaryParams::new(4).unwrap();
        let schedule = Schedule {
            name: "broken".into(),
            steps: vec![Dispatch::new(
                KernelKey::unary_f32(rlx_ir::UnaryOp::Exp),
                "%1 exp",
                // Past the end of a 16-byte pool.
                vec![
                    Operand { buffer: BufferId::Pool(0), offset: 0, size: 16 },
                    Operand { buffer: BufferId::Pool(0), offset: 16, size: 16 },
                ],
                &p,
                grid,
            )],
            pools: vec![16],
            leaves: vec![],
            scratch: vec![],
            outputs: vec![(None, ty)],
        };
        let e = ValidSchedule::new(schedule, backend.limits()).unwrap_err();
        assert!(e.to_string().contains("%1 exp"), "{e}");
    }
}
