//! The host boundary: every bad value gives an `Error` variant whose message names the culprit,
//! and none of them panics.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rlx_backend::{Backend, BackendError, Capabilities};
use rlx_cpu::CpuBackend;
use rlx_ir::{DType, Graph, IrError, Node, NodeId, Op, OpKind, Tensor, TensorType, UnaryOp};
use rlx_opt::OptError;
use rlx_runtime::{CompileOptions, Device, Error, Executable, HostData, PassOptions, PortKind, Session};
use rlx_vulkan::AdapterType;

/// Points the calibration cache at a per-process temporary directory before a test that may
/// calibrate (`Auto` on a real GPU measures uncached devices), so tests never write the user's
/// ~/.cache. Set once, before the first `Auto` in this process.
fn isolate_calibration_cache() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let dir = std::env::temp_dir().join(format!("rlx-runtime-boundary-cache-{}", std::process::id()));
        std::env::set_var("XDG_CACHE_HOME", dir);
    });
}

/// Whether RLX_DEVICE names a device (then it decides, not the ranking).
fn device_env_set() -> bool {
    Device::from_env_or(Device::Auto).map_or(true, |d| d != Device::Auto)
}

/// y = (x @ w + b) * mask, with x f32[2, 4], w f32[4, 3], b f32[3], mask f32[2, 3].
fn graph() -> Graph {
    let mut g = Graph::new("boundary");
    let x = g.input("x", &[2, 4], DType::F32).unwrap();
    let mask = g.input("mask", &[2, 3], DType::F32).unwrap();
    let w = g.param("w", &[4, 3], DType::F32).unwrap();
    let b = g.param("b", &[3], DType::F32).unwrap();
    let y = g.matmul(x, w).unwrap();
    let y = g.add(y, b).unwrap();
    let y = g.mul(y, mask).unwrap();
    g.set_outputs(&[y]).unwrap();
    g
}

const X: [f32; 8] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
const MASK: [f32; 6] = [1.0, 0.0, 1.0, 1.0, 1.0, 0.0];
/// w[i][j] = 1 where i == j: x @ w keeps the first three columns of x.
const W: [f32; 12] = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0];
const B: [f32; 3] = [0.5, -1.0, 2.0];
/// By hand: [[1,2,3],[5,6,7]] + b = [[1.5,1,5],[5.5,5,9]], times the mask.
const Y: [f32; 6] = [1.5, 0.0, 5.0, 5.5, 5.0, 0.0];

fn compiled() -> Executable {
    Session::new(Device::Cpu).unwrap().compile(&graph()).unwrap()
}

fn ready() -> Executable {
    let mut exe = compiled();
    exe.set_param("w", &W).unwrap();
    exe.set_param("b", &B).unwrap();
    exe
}

fn msg(e: &Error) -> String {
    e.to_string()
}

#[test]
fn happy_path_matches_hand_computation() {
    let mut exe = ready();
    let x_vec: Vec<f32> = X.to_vec();
    // The call-site ergonomics the API promises: a Vec behind `&` coerces to `&dyn HostData`.
    let out = exe.run(&[("x", &x_vec), ("mask", &MASK)]).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].dims(), &[2, 3]);
    assert_eq!(out[0].as_f32().unwrap(), &Y);

    // Slices, references to slices and exact-shape tensors are accepted too; order is free.
    let x_slice: &[f32] = &X;
    let mask_t = Tensor::from_f32([2, 3], MASK.to_vec()).unwrap();
    let out = exe.run(&[("mask", &mask_t), ("x", &x_slice)]).unwrap();
    assert_eq!(out[0].as_f32().unwrap(), &Y);

    // A param can be replaced; the next run sees the new value.
    exe.set_param("b", &Tensor::from_f32([3], vec![0.0; 3]).unwrap()).unwrap();
    let out = exe.run(&[("x", &x_vec), ("mask", &MASK)]).unwrap();
    assert_eq!(out[0].as_f32().unwrap(), &[1.0, 0.0, 3.0, 5.0, 6.0, 0.0]);
}

#[test]
fn signature_is_discoverable() {
    let exe = compiled();
    let inputs: Vec<(&str, String)> =
        exe.inputs().iter().map(|p| (p.name.as_str(), p.ty.to_string())).collect();
    assert_eq!(inputs, vec![("x", "f32[2, 4]".to_string()), ("mask", "f32[2, 3]".to_string())]);
    let params: Vec<&str> = exe.params().iter().map(|p| p.name.as_str()).collect();
    assert_eq!(params, vec!["w", "b"]);
    assert_eq!(exe.outputs(), &[TensorType::new([2, 3], DType::F32)]);
    assert_eq!(exe.unset_params(), vec!["w", "b"]);
}

#[test]
fn unknown_param_lists_known_names() {
    let mut exe = compiled();
    let e = exe.set_param("weight", &W).unwrap_err();
    assert!(matches!(&e, Error::UnknownName { kind: PortKind::Param, name, .. } if name == "weight"), "{e}");
    let m = msg(&e);
    assert!(m.contains("'weight'") && m.contains("'w'") && m.contains("'b'"), "{m}");
}

#[test]
fn input_given_to_set_param_says_so() {
    let mut exe = compiled();
    let e = exe.set_param("x", &X).unwrap_err();
    assert!(matches!(e, Error::UnknownName { kind: PortKind::Param, .. }), "{e}");
    assert!(msg(&e).contains("'x' is an input of this graph: pass it to run"), "{e}");
}

#[test]
fn unknown_input_lists_known_names() {
    let mut exe = ready();
    let e = exe.run(&[("x", &X), ("mask", &MASK), ("bias", &B)]).unwrap_err();
    assert!(matches!(&e, Error::UnknownName { kind: PortKind::Input, name, .. } if name == "bias"), "{e}");
    let m = msg(&e);
    assert!(m.contains("'bias'") && m.contains("'x'") && m.contains("'mask'"), "{m}");
}

#[test]
fn missing_inputs_are_named() {
    let mut exe = ready();
    let e = exe.run(&[("x", &X)]).unwrap_err();
    assert!(
        matches!(&e, Error::MissingInputs { missing, .. } if missing.0 == vec!["mask".to_string()]),
        "{e}"
    );
    let m = msg(&e);
    assert!(m.contains("'mask'") && m.contains("mask: f32[2, 3]"), "{m}");

    let e = exe.run(&[]).unwrap_err();
    assert!(msg(&e).contains("'x', 'mask'"), "{e}");
}

#[test]
fn duplicate_input_is_rejected() {
    let mut exe = ready();
    let e = exe.run(&[("x", &X), ("mask", &MASK), ("x", &X)]).unwrap_err();
    assert!(matches!(&e, Error::DuplicateInput { name, count: 2 } if name == "x"), "{e}");
    assert!(msg(&e).contains("'x'"), "{e}");
}

#[test]
fn wrong_length_names_shape_and_counts() {
    let mut exe = compiled();
    let e = exe.set_param("w", &vec![0.0f32; 10]).unwrap_err();
    assert!(
        matches!(&e, Error::WrongLength { kind: PortKind::Param, name, expected: 12, got: 10, .. } if name == "w"),
        "{e}"
    );
    let m = msg(&e);
    assert!(m.contains("'w'") && m.contains("[4, 3]") && m.contains("12") && m.contains("10"), "{m}");

    let mut exe = ready();
    let e = exe.run(&[("x", &[1.0f32; 9]), ("mask", &MASK)]).unwrap_err();
    assert!(matches!(&e, Error::WrongLength { kind: PortKind::Input, expected: 8, got: 9, .. }), "{e}");
    assert!(msg(&e).contains("'x'") && msg(&e).contains("[2, 4]"), "{e}");
}

#[test]
fn wrong_dtype_names_both_types() {
    let mut exe = compiled();
    let e = exe.set_param("b", &vec![1i32, 2, 3]).unwrap_err();
    assert!(
        matches!(&e, Error::WrongDType { kind: PortKind::Param, expected: DType::F32, got: DType::I32, .. }),
        "{e}"
    );
    let m = msg(&e);
    assert!(m.contains("'b'") && m.contains("f32") && m.contains("i32"), "{m}");

    // A tensor of the wrong dtype is caught before its shape is looked at.
    let mut exe = ready();
    let ids = Tensor::from_u32([2, 4], vec![0; 8]).unwrap();
    let e = exe.run(&[("x", &ids), ("mask", &MASK)]).unwrap_err();
    assert!(matches!(e, Error::WrongDType { got: DType::U32, .. }), "{e}");
}

#[test]
fn tensor_shape_is_checked_exactly() {
    let mut exe = ready();
    // Same element count, other shape: flat data would be accepted, a tensor is not.
    let x = Tensor::from_f32([4, 2], X.to_vec()).unwrap();
    let e = exe.run(&[("x", &x), ("mask", &MASK)]).unwrap_err();
    assert!(matches!(&e, Error::WrongShape { kind: PortKind::Input, name, .. } if name == "x"), "{e}");
    let m = msg(&e);
    assert!(m.contains("'x'") && m.contains("[2, 4]") && m.contains("[4, 2]"), "{m}");
}

#[test]
fn run_before_params_lists_unset_ones() {
    let mut exe = compiled();
    exe.set_param("b", &B).unwrap();
    let e = exe.run(&[("x", &X), ("mask", &MASK)]).unwrap_err();
    assert!(matches!(&e, Error::ParamsNotSet { unset } if unset.0 == vec!["w".to_string()]), "{e}");
    assert!(msg(&e).contains("'w'") && !msg(&e).contains("'b'"), "{e}");
}

#[test]
fn failed_set_param_leaves_param_unset() {
    let mut exe = compiled();
    assert!(exe.set_param("w", &[0.0f32; 3]).is_err());
    assert_eq!(exe.unset_params(), vec!["w", "b"]);
}

#[test]
fn graph_without_outputs_is_a_compile_error() {
    let mut g = Graph::new("headless");
    let x = g.input("x", &[2], DType::F32).unwrap();
    g.relu(x).unwrap();
    let e = Session::new(Device::Cpu).unwrap().compile(&g).unwrap_err();
    assert!(matches!(e, Error::Ir(IrError::NoOutputs { .. })), "{e}");
    assert!(msg(&e).contains("headless") && msg(&e).contains("set_outputs"), "{e}");
}

#[test]
fn verifier_errors_surface_at_compile() {
    // Node 0 reads node 1, which comes after it: a dangling id / cycle.
    let ty = TensorType::new([2], DType::F32);
    let nodes = vec![
        Node { op: Op::Unary(UnaryOp::Relu), inputs: vec![NodeId(1)], ty: ty.clone() },
        Node { op: Op::Input { name: "x".into() }, inputs: vec![], ty },
    ];
    let g = Graph::from_parts("broken", nodes, vec![NodeId(0)]);
    let e = Session::new(Device::Cpu).unwrap().compile(&g).unwrap_err();
    assert!(matches!(e, Error::Ir(IrError::NotTopological { .. })), "{e}");
    assert!(msg(&e).contains("broken") && msg(&e).contains("%1"), "{e}");
}

/// The CPU backend with some ops taken out of its capabilities.
struct Limited {
    cpu: CpuBackend,
    caps: Capabilities,
}

impl Limited {
    fn without(kinds: &[OpKind]) -> Self {
        let cpu = CpuBackend::new();
        let mut caps = cpu.capabilities().clone();
        caps.device_name = "limited-test-device".into();
        for k in kinds {
            caps.native_ops.remove(k);
        }
        Limited { cpu, caps }
    }
}

impl Backend for Limited {
    fn name(&self) -> &'static str {
        "limited"
    }
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }
    fn compile(
        &self,
        graph: &Graph,
        options: &rlx_backend::KernelOptions,
    ) -> Result<Box<dyn rlx_backend::Executable>, BackendError> {
        self.cpu.compile(graph, options)
    }
}

#[test]
fn unsupported_op_is_an_opt_error_naming_op_and_device() {
    // Cumsum has no decomposition (conv2d has one since rlx-opt decomposes it for GPUs).
    let mut g = Graph::new("scan");
    let x = g.input("x", &[2, 5], DType::F32).unwrap();
    let y = g.cumsum(x, -1).unwrap();
    g.set_outputs(&[y]).unwrap();
    let session = Session::with_backend(Device::Cpu, Box::new(Limited::without(&[OpKind::Cumsum])));
    let e = session.compile(&g).unwrap_err();
    assert!(matches!(e, Error::Opt(OptError::Unsupported { .. })), "{e}");
    let m = msg(&e);
    assert!(m.contains("cumsum") && m.contains("limited-test-device"), "{m}");
}

/// Whether wgpu opens an adapter here (lavapipe counts), and whether it is a real GPU.
fn wgpu_here() -> (bool, bool) {
    match rlx_wgpu::WgpuBackend::new() {
        Ok(b) => (true, !b.info().is_software()),
        Err(_) => (false, false),
    }
}

/// `Session::new(device)` opens exactly where `available` says: then on `backend`, and
/// `opened` checks the session; elsewhere it is `DeviceUnavailable` for `device`, which
/// `refused` checks (the error and its reason).
fn opens_where_available(
    device: Device,
    backend: &str,
    available: bool,
    opened: impl FnOnce(&Session),
    refused: impl FnOnce(&Error, &str),
) {
    let r = Session::new(device);
    match (&r, available) {
        (Ok(s), true) => {
            assert_eq!((s.device(), s.backend_name()), (device, backend));
            opened(s);
        }
        (Err(e @ Error::DeviceUnavailable { device: d, reason }), false) if *d == device => {
            refused(e, reason)
        }
        (_, expected) => panic!("{backend} available = {expected}, but Session::new gave {r:?}"),
    }
}

#[test]
fn gpu_opens_where_wgpu_finds_an_adapter_and_says_why_not_elsewhere() {
    opens_where_available(
        Device::Gpu,
        "wgpu",
        wgpu_here().0,
        |s| assert!(s.capabilities().dtypes.contains(&DType::F32)),
        |e, _| assert!(msg(e).contains("gpu"), "{e}"),
    );
}

#[test]
fn auto_for_a_graph_is_the_cpu_without_a_real_gpu() {
    if device_env_set() {
        return; // RLX_DEVICE decides, not the ranking.
    }
    isolate_calibration_cache();
    let mut g = Graph::new("mm");
    let a = g.input("a", &[256, 256], DType::F32).unwrap();
    let c = g.matmul(a, a).unwrap();
    g.set_outputs(&[c]).unwrap();
    let s = Session::auto_for(&g).unwrap();
    if !(vulkan_here().1 || wgpu_here().1) {
        assert_eq!(s.device(), Device::Cpu);
    }
    // Whatever was chosen compiles and runs the graph.
    let mut exe = s.compile(&g).unwrap();
    let out = exe.run(&[("a", &vec![1.0f32; 256 * 256])]).unwrap();
    assert!(out[0].as_f32().unwrap().iter().all(|&v| (v - 256.0).abs() < 1e-3));
}

/// Whether this machine has a usable Vulkan device, and whether it is a real GPU (what `Auto`
/// takes) rather than a CPU implementation such as lavapipe.
fn vulkan_here() -> (bool, bool) {
    let Ok(all) = rlx_vulkan::probe() else { return (false, false) };
    match rlx_vulkan::pick(&all) {
        Ok(a) => (true, matches!(a.adapter_type, AdapterType::Discrete | AdapterType::Integrated)),
        Err(_) => (false, false),
    }
}

#[test]
fn vulkan_opens_where_a_device_exists_and_says_why_not_elsewhere() {
    opens_where_available(
        Device::Vulkan,
        "vulkan",
        vulkan_here().0,
        |s| {
            // Every dtype stored (f16 where the device has f16 shaders), kernels on 32-bit words.
            let caps = s.capabilities();
            assert!(caps.dtypes.contains(&DType::BF16) && caps.dtypes.contains(&DType::U8));
            assert!(!caps.compute_dtypes.contains(&DType::F16));
        },
        |_, reason| assert!(!reason.is_empty()),
    );
}

#[test]
fn cpu_and_auto_resolve() {
    assert_eq!(Session::new(Device::Cpu).unwrap().device(), Device::Cpu);
    // RLX_DEVICE is not set by the test suite, so Auto ranks: on a real GPU (lavapipe does not
    // count) one of the GPU backends beats the CPU on its BERT-layer workload; else the CPU.
    if !device_env_set() {
        isolate_calibration_cache();
        let auto = Session::new(Device::Auto).unwrap().device();
        if vulkan_here().1 || wgpu_here().1 {
            assert_ne!(auto, Device::Cpu);
        } else {
            assert_eq!(auto, Device::Cpu);
        }
    }
}

#[test]
fn rlx_device_values_parse() {
    let p = |v: Option<&str>| Device::from_env_value(v, Device::Auto);
    assert_eq!(p(None).unwrap(), Device::Auto);
    assert_eq!(p(Some("")).unwrap(), Device::Auto);
    assert_eq!(p(Some("Vulkan")).unwrap(), Device::Vulkan);
    assert_eq!(p(Some(" cpu\n")).unwrap(), Device::Cpu);
    let e = p(Some("cuda")).unwrap_err();
    assert!(matches!(e, Error::InvalidEnv { var: "RLX_DEVICE", .. }), "{e}");
    let m = msg(&e);
    assert!(m.contains("cuda") && m.contains("cpu, gpu, vulkan, auto"), "{m}");
}

#[test]
fn passes_off_gives_the_same_result() {
    let opts = CompileOptions { passes: PassOptions::none(), ..Default::default() };
    let mut exe = Session::new(Device::Cpu).unwrap().compile_with(&graph(), &opts).unwrap();
    exe.set_param("w", &W).unwrap();
    exe.set_param("b", &B).unwrap();
    let out = exe.run(&[("x", &X), ("mask", &MASK)]).unwrap();
    assert_eq!(out[0].as_f32().unwrap(), &Y);
}

#[test]
fn bad_inputs_never_panic() {
    let bad_x = Tensor::from_f32([8], X.to_vec()).unwrap();
    let nan = [f32::NAN; 8];
    let runs: Vec<Vec<(&str, &dyn HostData)>> = vec![
        vec![],
        vec![("x", &X)],
        vec![("nope", &X), ("mask", &MASK)],
        vec![("x", &X), ("x", &X), ("mask", &MASK)],
        vec![("x", &[0.0f32; 0]), ("mask", &MASK)],
        vec![("x", &[1i32; 8]), ("mask", &MASK)],
        vec![("x", &[true; 8]), ("mask", &MASK)],
        vec![("x", &bad_x), ("mask", &MASK)],
        vec![("w", &W), ("x", &X), ("mask", &MASK)],
        vec![("", &X)],
    ];
    for (i, inputs) in runs.iter().enumerate() {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ready().run(inputs)));
        match r {
            Ok(Err(_)) => {}
            Ok(Ok(_)) => panic!("bad run #{i} succeeded"),
            Err(_) => panic!("bad run #{i} panicked"),
        }
    }
    // NaN data is not bad input: it runs and propagates.
    let out = ready().run(&[("x", &nan), ("mask", &MASK)]).unwrap();
    assert!(out[0].as_f32().unwrap().iter().all(|v| v.is_nan()));

    let b_2d = Tensor::from_f32([1, 3], B.to_vec()).unwrap();
    let params: Vec<(&str, &dyn HostData)> =
        vec![("x", &X), ("W", &W), ("w", &[0.0f32; 13]), ("w", &[0u32; 12]), ("b", &b_2d)];
    for (name, value) in params {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| compiled().set_param(name, value)));
        assert!(matches!(r, Ok(Err(_))), "set_param({name}) did not return Err");
    }
    let r = std::panic::catch_unwind(|| Session::new(Device::Gpu).map(|_| ()));
    assert!(r.is_ok(), "Session::new(gpu) panicked");
    let r = std::panic::catch_unwind(|| Session::new(Device::Vulkan).map(|_| ()));
    assert!(r.is_ok(), "Session::new(vulkan) panicked");
    let r = std::panic::catch_unwind(|| {
        Session::new(Device::Cpu).unwrap().compile(&Graph::new("empty")).map(|_| ())
    });
    assert!(matches!(r, Ok(Err(_))), "compiling an empty graph did not return Err");
}

/// A backend whose executables return a wrong-typed output: the runtime must catch it.
struct Lying(Capabilities);

struct LyingExe;

impl rlx_backend::Executable for LyingExe {
    fn set_param(&mut self, _: NodeId, _: &Tensor) -> Result<(), BackendError> {
        Ok(())
    }
    fn run(&mut self, _: &[(NodeId, &Tensor)]) -> Result<Vec<Tensor>, BackendError> {
        Ok(vec![Tensor::zeros([3, 2], DType::F32)])
    }
}

impl Backend for Lying {
    fn name(&self) -> &'static str {
        "lying"
    }
    fn capabilities(&self) -> &Capabilities {
        &self.0
    }
    fn compile(
        &self,
        _: &Graph,
        _: &rlx_backend::KernelOptions,
    ) -> Result<Box<dyn rlx_backend::Executable>, BackendError> {
        Ok(Box::new(LyingExe))
    }
}

#[test]
fn wrong_backend_output_is_reported() {
    let session = Session::with_backend(Device::Cpu, Box::new(Lying(Capabilities::everything("lying"))));
    let mut exe = session.compile(&graph()).unwrap();
    exe.set_param("w", &W).unwrap();
    exe.set_param("b", &B).unwrap();
    let e = exe.run(&[("x", &X), ("mask", &MASK)]).unwrap_err();
    assert!(matches!(e, Error::OutputMismatch { backend: "lying", index: 0, .. }), "{e}");
    let m = msg(&e);
    assert!(m.contains("f32[3, 2]") && m.contains("f32[2, 3]"), "{m}");
}
