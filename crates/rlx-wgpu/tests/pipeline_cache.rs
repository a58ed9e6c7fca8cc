//! The pipeline cache on disk through wgpu (where the device has `Features::PIPELINE_CACHE`:
//! Vulkan adapters, lavapipe in CI): written by a compile, loaded by the next backend whose
//! kernels then compute the same results, a garbage file ignored and then replaced, nothing
//! read or written when off. Each test uses its own temporary folder through `WgpuOptions`,
//! never the user's cache or the environment.

// Tests and their helpers may unwrap, expect and panic: a failure is the test's verdict.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use rlx_ir::{DType, Graph};
use rlx_wgpu::{PipelineCacheDir, WgpuBackend, WgpuOptions};
use std::path::PathBuf;
use std::time::Instant;
use support::*;

/// An empty folder of its own for one test.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rlx-wgpu-pcache-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn options(cache: PipelineCacheDir) -> WgpuOptions {
    WgpuOptions { pipeline_cache: cache, ..WgpuOptions::from_env().unwrap() }
}

/// The backend with its cache in `dir`, or `None` (after a loud skip) without an adapter, or
/// on an adapter without pipeline caches (wgpu has them on Vulkan only).
fn cached_backend(dir: &std::path::Path) -> Option<WgpuBackend> {
    let gpu = backend_with(options(PipelineCacheDir::At(dir.to_path_buf())))?;
    if gpu.pipeline_cache_path().is_none() {
        assert_ne!(gpu.info().backend, "Vulkan", "wgpu offers pipeline caches on Vulkan");
        rlx_test_support::skip(&format!("{} has no pipeline cache", gpu.info().summary()));
        return None;
    }
    Some(gpu)
}

/// x[4,6] · w[6,5] → softmax → gelu: three kernels.
fn graph() -> Graph {
    let mut g = Graph::new("matmul_softmax_gelu");
    let x = g.input("x", &[4, 6], DType::F32).unwrap();
    let w = g.param("w", &[6, 5], DType::F32).unwrap();
    let y = g.matmul(x, w).unwrap();
    let s = g.softmax(y, -1).unwrap();
    let o = g.gelu(s).unwrap();
    g.set_outputs(&[o]).unwrap();
    g
}

fn run(gpu: &WgpuBackend) -> Vec<f32> {
    let (x, w) = (tensor(&[4, 6], 1), tensor(&[6, 5], 2));
    let out = run_once(gpu, &graph(), &[("w", &w)], &[("x", &x)]);
    out[0].to_f32_vec()
}

#[test]
fn a_compile_saves_the_cache_and_the_next_backend_loads_it() {
    let dir = temp_dir("roundtrip");
    let Some(first) = cached_backend(&dir) else { return };
    let path = first.pipeline_cache_path().unwrap();
    assert_eq!(path.parent(), Some(dir.as_path()));
    assert!(!first.pipeline_cache_loaded(), "no file yet");
    first.save_pipeline_cache();
    assert!(!path.exists(), "nothing built, nothing written");

    // Compiling writes the file before anything drops.
    let cold = run(&first);
    assert!(std::fs::metadata(&path).unwrap().len() > 0, "{}", path.display());

    // A second backend on the same adapter (the first still open) starts from the file, and
    // its kernels compute exactly what the first backend's did.
    let second = cached_backend(&dir).unwrap();
    assert!(second.pipeline_cache_loaded(), "{}", path.display());
    assert_eq!(run(&second), cold);
    drop((first, second));
    assert!(cached_backend(&dir).unwrap().pipeline_cache_loaded());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_garbage_file_is_ignored_then_replaced() {
    let dir = temp_dir("garbage");
    let Some(probe) = cached_backend(&dir) else { return };
    let path = probe.pipeline_cache_path().unwrap();
    drop(probe);
    std::fs::create_dir_all(&dir).unwrap();
    let garbage = b"\x00\x01\x02 not a pipeline cache, just bytes \xff\xfe".repeat(10);
    std::fs::write(&path, &garbage).unwrap();

    let gpu = cached_backend(&dir).unwrap();
    assert!(!gpu.pipeline_cache_loaded());
    let out = run(&gpu);
    drop(gpu);
    let replaced = std::fs::read(&path).unwrap();
    assert!(!replaced.is_empty() && replaced != garbage);
    let again = cached_backend(&dir).unwrap();
    assert!(again.pipeline_cache_loaded(), "the replacement is a valid cache");
    assert_eq!(run(&again), out);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A valid file cut short (a crash or a full disk mid-write by another tool): ignored with a
/// warning, and the next save replaces it with one that loads.
#[test]
fn a_truncated_file_is_ignored_then_replaced() {
    let dir = temp_dir("truncated");
    let Some(first) = cached_backend(&dir) else { return };
    let out = run(&first);
    let path = first.pipeline_cache_path().unwrap();
    drop(first);
    let full = std::fs::read(&path).unwrap();
    std::fs::write(&path, &full[..full.len() / 2]).unwrap();

    let gpu = cached_backend(&dir).unwrap();
    assert!(!gpu.pipeline_cache_loaded());
    assert_eq!(run(&gpu), out);
    drop(gpu);
    assert!(std::fs::read(&path).unwrap().len() > full.len() / 2);
    let again = cached_backend(&dir).unwrap();
    assert!(again.pipeline_cache_loaded(), "the replacement is a valid cache");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn off_means_no_cache_file() {
    let Some(gpu) = backend_with(options(PipelineCacheDir::Off)) else { return };
    assert_eq!(gpu.pipeline_cache_path(), None);
    assert!(!gpu.pipeline_cache_loaded());
    // Kernels still build, without a cache.
    assert_eq!(run(&gpu).len(), 20);
}

/// The same graph compiled cold (empty cache) and warm (from the saved file). Prints both
/// times (`--nocapture`); asserts only that the warm backend loaded the file.
#[test]
fn compile_cold_then_warm() {
    let dir = temp_dir("cold-warm");
    let mut times = Vec::new();
    for round in ["cold", "warm"] {
        let Some(gpu) = cached_backend(&dir) else { return };
        assert_eq!(gpu.pipeline_cache_loaded(), round == "warm");
        let start = Instant::now();
        let _ = compile(&gpu, &graph());
        times.push((round, start.elapsed()));
    }
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("wgpu pipeline cache, compile {times:?}\n").as_bytes(),
    );
    let _ = std::fs::remove_dir_all(&dir);
}
