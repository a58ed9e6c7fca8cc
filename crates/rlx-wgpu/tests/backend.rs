//! The wgpu backend end to end on whatever adapter the machine has (lavapipe in CI), against
//! the CPU backend. Without an adapter: a loud skip, or a failure when RLX_REQUIRE_GPU=1.

// Tests and their helpers may unwrap, expect and panic: a failure is the test's verdict.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use rlx_backend::{Backend, BackendError};
use rlx_ir::{DType, Graph, Tensor};
use rlx_nn::prelude::*;
use rlx_wgpu::{AdapterChoice, Backends, ShaderChecks, WgpuBackend, WgpuOptions};
use support::*;

/// x[4,6] + b[6] (broadcast) → · w[6,5] → softmax over the last axis.
fn mlp_graph() -> Graph {
    let mut g = Graph::new("add_matmul_softmax");
    let x = g.input("x", &[4, 6], DType::F32).unwrap();
    let b = g.param("b", &[6], DType::F32).unwrap();
    let w = g.param("w", &[6, 5], DType::F32).unwrap();
    let h = g.add(x, b).unwrap();
    let y = g.matmul(h, w).unwrap();
    let s = g.softmax(y, -1).unwrap();
    g.set_outputs(&[s]).unwrap();
    g
}

/// Every way params can travel on this device: immediates (where it has them) and uniforms.
fn option_sets() -> Vec<WgpuOptions> {
    let base = WgpuOptions::from_env().unwrap();
    vec![base.clone(), WgpuOptions { immediates: false, ..base }]
}

#[test]
fn add_matmul_softmax_matches_the_cpu() {
    let (x, b, w) = (tensor(&[4, 6], 1), tensor(&[6], 2), tensor(&[6, 5], 3));
    let g = mlp_graph();
    let params = [("b", &b), ("w", &w)];
    let reference = cpu(&g, &params, &[("x", &x)]);
    for opts in option_sets() {
        let immediates = opts.immediates;
        let Some(gpu) = backend_with(opts) else { return };
        let mut c = compile(&gpu, &g);
        for (n, t) in params {
            c.set(n, t);
        }
        let started = std::time::Instant::now();
        let out = c.run(&[("x", &x)]);
        let elapsed = started.elapsed();
        let what = format!("{} (immediates allowed: {immediates})", gpu.info().summary());
        // The profile splits the run: its parts add up to at most the time the call took, and
        // the compute part is there (from GPU timestamps where the device has them).
        let p = c.exe.last_profile().expect("a profile after a run");
        assert!(p.upload + p.compute + p.readback <= elapsed, "{what}: {p:?} vs {elapsed:?}");
        assert!(p.compute > std::time::Duration::ZERO, "{what}: {p:?}");
        assert_close(&what, &out, &reference, 1e-5);
        // Softmax rows sum to one: a check independent of the CPU.
        for row in out[0].to_f32_vec().chunks(5) {
            assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-5, "{what}: {row:?}");
        }
    }
}

#[test]
fn leaves_as_outputs_and_empty_outputs_come_back_exactly() {
    let Some(gpu) = backend() else { return };
    let mut g = Graph::new("leaves");
    let x = g.input("x", &[2, 3], DType::F32).unwrap();
    let i = g.input("i", &[4], DType::I32).unwrap();
    let m = g.input("m", &[3], DType::Bool).unwrap();
    let p = g.param("p", &[5], DType::U32).unwrap();
    let e = g.input("e", &[0, 3], DType::F32).unwrap();
    let c = g.constant(Tensor::from_i32(vec![2], vec![-5, 9]).unwrap()).unwrap();
    g.set_outputs(&[x, i, m, p, e, c, x]).unwrap();
    let xv = Tensor::from_f32(vec![2, 3], vec![1.0, -2.5, f32::NAN, 0.0, 1e30, -1e-30]).unwrap();
    let iv = Tensor::from_i32(vec![4], vec![i32::MIN, -1, 0, i32::MAX]).unwrap();
    let mv = Tensor::from_bool(vec![3], vec![true, false, true]).unwrap();
    let pv = Tensor::from_u32(vec![5], vec![0, 1, 2, u32::MAX, 7]).unwrap();
    let ev = Tensor::from_f32(vec![0, 3], vec![]).unwrap();
    let mut c_exe = compile(&gpu, &g);
    c_exe.set("p", &pv);
    let out = c_exe.run(&[("x", &xv), ("i", &iv), ("m", &mv), ("e", &ev)]);
    assert_eq!(out.len(), 7);
    let bits = |t: &Tensor| t.to_f32_vec().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&out[0]), bits(&xv), "f32 bits, NaN included");
    assert_eq!(out[1], iv);
    assert_eq!(out[2], mv);
    assert_eq!(out[3], pv);
    assert_eq!(out[4], ev);
    assert_eq!(out[5], Tensor::from_i32(vec![2], vec![-5, 9]).unwrap());
    assert_eq!(bits(&out[6]), bits(&xv));
    // The staging buffers are reused: a second run with other inputs gives the new values.
    let xv2 = tensor(&[2, 3], 9);
    let out = c_exe.run(&[("x", &xv2), ("i", &iv), ("m", &mv), ("e", &ev)]);
    assert_eq!(out[0], xv2);
    assert_eq!(out[6], xv2);
    let profile = c_exe.exe.last_profile().expect("a profile after a run");
    assert!(profile.upload + profile.compute + profile.readback > std::time::Duration::ZERO);
}

#[test]
fn a_param_set_twice_keeps_the_second_value() {
    let (x, w1, w2) = (tensor(&[3, 4], 4), tensor(&[4, 2], 5), tensor(&[4, 2], 6));
    let mut g = Graph::new("param_twice");
    let xi = g.input("x", &[3, 4], DType::F32).unwrap();
    let w = g.param("w", &[4, 2], DType::F32).unwrap();
    let y = g.matmul(xi, w).unwrap();
    g.set_outputs(&[y, w]).unwrap();
    let Some(gpu) = backend() else { return };
    let mut c = compile(&gpu, &g);
    // Twice before the first run: the second wins.
    c.set("w", &w2);
    c.set("w", &w1);
    let first = c.run(&[("x", &x)]);
    assert_close("w1", &first, &cpu(&g, &[("w", &w1)], &[("x", &x)]), 1e-5);
    // Again between runs.
    c.set("w", &w2);
    let second = c.run(&[("x", &x)]);
    assert_close("w2", &second, &cpu(&g, &[("w", &w2)], &[("x", &x)]), 1e-5);
    assert_eq!(second[1], w2);
}

#[test]
fn two_backends_in_one_process_run_side_by_side() {
    let Some(first) = backend() else { return };
    // The second on another adapter where the machine has one reachable through another wgpu
    // backend (lavapipe through Vulkan and llvmpipe through GL on CI), else a second device of
    // its own (instance, adapter, device, queue, pipeline cache) on the same adapter.
    let other = if first.info().backend == "Vulkan" { Backends::GL } else { Backends::VULKAN };
    let elsewhere = WgpuOptions { backends: Some(other), adapter: None, ..WgpuOptions::default() };
    let second = match WgpuBackend::with_options(elsewhere) {
        Ok(b) => b,
        Err(_) => {
            let mut opts = WgpuOptions::from_env().unwrap();
            opts.adapter = Some(AdapterChoice::Name(first.info().name.clone()));
            let Some(b) = backend_with(opts) else { return };
            b
        }
    };
    let note = format!("two backends: {} and {}\n", first.info().summary(), second.info().summary());
    let _ = std::io::Write::write_all(&mut std::io::stderr(), note.as_bytes());
    let (x, b, w) = (tensor(&[4, 6], 7), tensor(&[6], 8), tensor(&[6, 5], 9));
    let g = mlp_graph();
    let params = [("b", &b), ("w", &w)];
    let reference = cpu(&g, &params, &[("x", &x)]);
    std::thread::scope(|s| {
        for gpu in [&first, &second] {
            let (g, reference, x) = (&g, &reference, &x);
            s.spawn(move || {
                let mut c = compile(gpu, g);
                for (n, t) in params {
                    c.set(n, t);
                }
                for _ in 0..3 {
                    assert_close("threaded", &c.run(&[("x", x)]), reference, 1e-5);
                }
            });
        }
    });
    // Pipelines are cached per device: both built their own, and compiling again builds none.
    let built = first.cached_pipelines();
    assert!(built > 0 && second.cached_pipelines() == built);
    let _ = compile(&first, &g);
    assert_eq!(first.cached_pipelines(), built);
}

#[test]
/// Kernels run trusted (no wgpu runtime checks) by default; the debug option turns the checks
/// back on, and the results do not change.
fn checked_kernels_give_the_same_results() {
    let (x, b, w) = (tensor(&[4, 6], 10), tensor(&[6], 11), tensor(&[6, 5], 12));
    let g = mlp_graph();
    let params = [("b", &b), ("w", &w)];
    assert_eq!(WgpuOptions::default().shader_checks, ShaderChecks::Trusted);
    let opts = WgpuOptions { shader_checks: ShaderChecks::Checked, ..WgpuOptions::from_env().unwrap() };
    let Some(gpu) = backend_with(opts) else { return };
    let out = run_once(&gpu, &g, &params, &[("x", &x)]);
    assert_close("checked", &out, &cpu(&g, &params, &[("x", &x)]), 1e-5);
}

#[test]
fn a_tensor_past_the_binding_limit_is_refused_at_compile_time() {
    let Some(gpu) = backend() else { return };
    let limit = gpu.limits().max_binding_bytes;
    let n = (limit / 4 + 1) as usize;
    let g = rlx_test_support::exp_graph("too_large", &[n], DType::F32);
    // Straight to the backend: the optimizer accepts the graph, the device cannot bind it.
    match gpu.compile(&g, &Default::default()) {
        Err(BackendError::LimitExceeded { requested, limit: l, .. }) => {
            assert_eq!(l, limit);
            assert!(requested > limit);
        }
        Err(e) => panic!("expected LimitExceeded, got {e}"),
        Ok(_) => panic!("a {n}-element tensor compiled past a {limit}-byte binding limit"),
    }
}

#[test]
fn a_run_without_its_input_is_an_error_not_a_panic() {
    let Some(gpu) = backend() else { return };
    let mut c = compile(&gpu, &mlp_graph());
    let e = c.exe.run(&[]).unwrap_err();
    assert!(e.to_string().contains("was not given"), "{e}");
    // The executable still works afterwards.
    c.set("b", &tensor(&[6], 1));
    c.set("w", &tensor(&[6, 5], 2));
    assert_eq!(c.run(&[("x", &tensor(&[4, 6], 3))])[0].dims(), &[4, 5]);
}

#[test]
fn a_missing_adapter_is_an_error_not_a_panic() {
    let opts = WgpuOptions {
        adapter: Some(AdapterChoice::Name("no adapter is called this 7f3a".into())),
        ..WgpuOptions::default()
    };
    match WgpuBackend::with_options(opts) {
        Err(BackendError::DeviceUnavailable { device, reason }) => {
            assert_eq!(device, "wgpu");
            assert!(reason.contains("RLX_WGPU_ADAPTER"), "{reason}");
        }
        Err(e) => panic!("expected DeviceUnavailable, got {e}"),
        Ok(b) => panic!("an adapter matched a nonsense name: {}", b.info().summary()),
    }
    let opts = WgpuOptions { adapter: Some(AdapterChoice::Index(10_000)), ..WgpuOptions::default() };
    assert!(matches!(WgpuBackend::with_options(opts), Err(BackendError::DeviceUnavailable { .. })));
}

#[test]
fn info_and_capabilities_describe_the_device() {
    let Some(gpu) = backend() else { return };
    let info = gpu.info();
    assert!(!info.name.is_empty());
    // Into the CI log: which adapter and features the other tests ran on.
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("wgpu device: {:?}\n", info.details()).as_bytes(),
    );
    let caps = gpu.capabilities();
    assert_eq!(caps.max_tensor_bytes, gpu.limits().max_binding_bytes);
    assert_eq!(caps.buffer_alignment as u64, info.limits.min_storage_buffer_offset_alignment as u64);
    assert!(info.details().iter().any(|(k, v)| k == "adapter" && *v == info.name));
    assert_eq!(gpu.name(), "wgpu");
}

/// A graph with its params and inputs, by name.
struct Case {
    graph: Graph,
    params: Vec<(&'static str, Tensor)>,
    inputs: Vec<(&'static str, Tensor)>,
}

/// x → linear → gelu → linear → + x → layer_norm: fuses into matmul epilogues and add-norm.
fn encoder_block() -> Case {
    let mut g = Graph::new("encoder_block");
    let x = g.input("x", &[6, 8], DType::F32).unwrap();
    let w1 = g.param("w1", &[16, 8], DType::F32).unwrap();
    let b1 = g.param("b1", &[16], DType::F32).unwrap();
    let w2 = g.param("w2", &[8, 16], DType::F32).unwrap();
    let gamma = g.param("gamma", &[8], DType::F32).unwrap();
    let beta = g.param("beta", &[8], DType::F32).unwrap();
    let h = g.linear(x, w1, Some(b1)).unwrap();
    let h = g.gelu(h).unwrap();
    let h = g.linear(h, w2, None).unwrap();
    let r = g.add(h, x).unwrap();
    let y = g.layer_norm(r, Some(gamma), Some(beta), -1, 1e-5).unwrap();
    g.set_outputs(&[y]).unwrap();
    let params = vec![
        ("w1", tensor(&[16, 8], 20)),
        ("b1", tensor(&[16], 21)),
        ("w2", tensor(&[8, 16], 22)),
        ("gamma", tensor(&[8], 23)),
        ("beta", tensor(&[8], 24)),
    ];
    Case { graph: g, params, inputs: vec![("x", tensor(&[6, 8], 25))] }
}

/// Embedding lookup with i32 ids, then a sum and an argmax over the hidden axis.
fn embedding_reduce() -> Case {
    let mut g = Graph::new("embedding_reduce");
    let ids = g.input("ids", &[5], DType::I32).unwrap();
    let table = g.param("table", &[10, 4], DType::F32).unwrap();
    let e = g.gather(table, ids, 0).unwrap();
    let s = g.sum(e, &[-1], false).unwrap();
    let a = g.argmax(e, 1, false).unwrap();
    g.set_outputs(&[e, s, a]).unwrap();
    let ids_v = Tensor::from_i32(vec![5], vec![3, 0, 9, 3, 7]).unwrap();
    Case { graph: g, params: vec![("table", tensor(&[10, 4], 26))], inputs: vec![("ids", ids_v)] }
}

/// Compare → bool, where, and casts between f32, i32 and bool.
fn compare_where_cast() -> Case {
    let mut g = Graph::new("compare_where_cast");
    let a = g.input("a", &[3, 4], DType::F32).unwrap();
    let b = g.input("b", &[4], DType::F32).unwrap();
    let m = g.lt(a, b).unwrap();
    let w = g.where_(m, a, b).unwrap();
    let mi = g.cast(m, DType::I32).unwrap();
    let ten = g.scalar(10.0).unwrap();
    let a10 = g.mul(a, ten).unwrap();
    let ai = g.cast(a10, DType::I32).unwrap();
    g.set_outputs(&[m, w, mi, ai]).unwrap();
    Case { graph: g, params: vec![], inputs: vec![("a", tensor(&[3, 4], 27)), ("b", tensor(&[4], 28))] }
}

/// Permute, concat and cumsum: pure data movement plus a scan.
fn permute_concat_cumsum() -> Case {
    let mut g = Graph::new("permute_concat_cumsum");
    let x = g.input("x", &[2, 3, 4], DType::F32).unwrap();
    let y = g.input("y", &[4, 2, 3], DType::F32).unwrap();
    let p = g.permute(x, &[2, 0, 1]).unwrap();
    let c = g.concat(&[p, y], 0).unwrap();
    let s = g.cumsum(c, 1).unwrap();
    g.set_outputs(&[c, s]).unwrap();
    Case {
        graph: g,
        params: vec![],
        inputs: vec![("x", tensor(&[2, 3, 4], 29)), ("y", tensor(&[4, 2, 3], 30))],
    }
}

/// Causal attention in [B, S, H, D].
fn causal_attention() -> Case {
    let mut g = Graph::new("causal_attention");
    let dims = [1, 5, 2, 4];
    let q = g.input("q", &dims, DType::F32).unwrap();
    let k = g.input("k", &dims, DType::F32).unwrap();
    let v = g.input("v", &dims, DType::F32).unwrap();
    let spec = rlx_ir::AttentionSpec::new(rlx_ir::AttnLayout::Bshd, rlx_ir::MaskKind::Causal);
    let o = g.attention(q, k, v, None, spec).unwrap();
    g.set_outputs(&[o]).unwrap();
    let inputs = vec![("q", tensor(&dims, 31)), ("k", tensor(&dims, 32)), ("v", tensor(&dims, 33))];
    Case { graph: g, params: vec![], inputs }
}

#[test]
fn more_ops_match_the_cpu() {
    let Some(gpu) = backend() else { return };
    let cases = [
        encoder_block(),
        embedding_reduce(),
        compare_where_cast(),
        permute_concat_cumsum(),
        causal_attention(),
    ];
    let mut failures = Vec::new();
    for case in &cases {
        let params: Vec<(&str, &Tensor)> = case.params.iter().map(|(n, t)| (*n, t)).collect();
        let inputs: Vec<(&str, &Tensor)> = case.inputs.iter().map(|(n, t)| (*n, t)).collect();
        let reference = cpu(&case.graph, &params, &inputs);
        // One case's failure must not hide the others: collect them all.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let out = run_once(&gpu, &case.graph, &params, &inputs);
            assert_close(case.graph.name(), &out, &reference, 1e-5);
        }));
        if let Err(p) = result {
            let msg = p.downcast_ref::<String>().cloned().unwrap_or_else(|| "panic".into());
            failures.push(msg);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
