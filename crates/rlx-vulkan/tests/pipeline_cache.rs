//! The pipeline cache on disk, on every available Vulkan device: written once pipelines are
//! built, loaded by the next context, a garbage file ignored and then replaced, nothing read or
//! written when off. Each test uses its own temporary folder through `ContextOptions`, never
//! the user's cache or the environment.

// Tests and their helpers may unwrap, expect and panic: a failure is the test's verdict.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use rlx_backend::Backend;
use rlx_gpu::KernelKey;
use rlx_ir::DType;
use rlx_opt::PassOptions;
use rlx_vulkan::{Context, ContextOptions, PipelineCacheDir, VulkanBackend};
use std::path::PathBuf;
use std::time::Instant;
use support::no_device;

/// Indices of the usable adapters (after a loud skip when there are none).
fn adapters() -> Vec<usize> {
    let found: Vec<usize> = match rlx_vulkan::probe() {
        Ok(list) => list.iter().filter(|a| a.is_usable()).map(|a| a.index).collect(),
        Err(e) => {
            no_device(&e.to_string());
            return Vec::new();
        }
    };
    if found.is_empty() {
        no_device("no usable adapter");
    }
    found
}

/// An empty folder of its own for one test and adapter.
fn temp_dir(test: &str, adapter: usize) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rlx-vulkan-pcache-{}-{test}-{adapter}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn open(adapter: usize, cache: &PipelineCacheDir) -> Context {
    let options =
        ContextOptions { adapter: Some(adapter), pipeline_cache: cache.clone(), ..Default::default() };
    Context::with_options(options).unwrap_or_else(|e| panic!("opening adapter {adapter}: {e}"))
}

/// Every kernel this device can build (the tensor-core ones only where it has cooperative
/// matrices).
fn runnable_keys(ctx: &Context) -> Vec<KernelKey> {
    let coop = rlx_vulkan::gpu_limits(ctx.info()).cooperative_matrix;
    rlx_gpu::keys().into_iter().filter(|k| coop || !k.needs_cooperative_matrix()).collect()
}

#[test]
fn built_pipelines_are_saved_and_the_next_context_loads_them() {
    for a in adapters() {
        let dir = temp_dir("roundtrip", a);
        let at = PipelineCacheDir::At(dir.clone());
        let first = open(a, &at);
        let path = first.pipeline_cache_path().expect("a cache file when the cache is on");
        assert_eq!(path.parent(), Some(dir.as_path()));
        assert!(path.file_name().unwrap().to_string_lossy().starts_with("vulkan-"), "{}", path.display());
        assert!(!first.pipeline_cache_loaded(), "no file yet");
        first.save_pipeline_cache();
        assert!(!path.exists(), "nothing built, nothing written");

        first.pipeline(KernelKey::SOFTMAX_ROW_F32).unwrap();
        first.save_pipeline_cache();
        assert!(std::fs::metadata(&path).unwrap().len() > 0);

        // A second context on the same device (the first still open) starts from the file and
        // builds both a pipeline the file holds and a new one.
        let second = open(a, &at);
        assert!(second.pipeline_cache_loaded(), "{}", path.display());
        assert_eq!(second.pipeline_cache_path(), Some(path.clone()));
        second.pipeline(KernelKey::SOFTMAX_ROW_F32).unwrap();
        second.pipeline(KernelKey::MATMUL_TILED_F32).unwrap();
        // Dropping saves what was built since the last save. (The file is removed first to
        // see that: a driver may well hand out the same bytes again; lavapipe's cache data is
        // a bare header.)
        std::fs::remove_file(&path).unwrap();
        drop(second);
        assert!(std::fs::metadata(&path).unwrap().len() > 0);
        // The first context built nothing since its save: its drop writes nothing.
        std::fs::remove_file(&path).unwrap();
        drop(first);
        assert!(!path.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn compiling_a_graph_saves_the_cache_before_anything_drops() {
    for a in adapters() {
        let dir = temp_dir("compile", a);
        let backend = VulkanBackend::with_context(open(a, &PipelineCacheDir::At(dir.clone())));
        let g = rlx_test_support::exp_graph("exp", &[16], DType::F32);
        let g = rlx_opt::optimize(&g, backend.capabilities(), &PassOptions::none(), None).unwrap();
        let _exe = backend.compile(&g, &Default::default()).unwrap();
        let path = backend.context().pipeline_cache_path().unwrap();
        assert!(std::fs::metadata(&path).unwrap().len() > 0, "{}", path.display());
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_garbage_file_is_ignored_then_replaced() {
    for a in adapters() {
        let dir = temp_dir("garbage", a);
        let at = PipelineCacheDir::At(dir.clone());
        let path = open(a, &at).pipeline_cache_path().unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        let garbage = b"\x00\x01\x02 not a pipeline cache, just bytes \xff\xfe".repeat(10);
        std::fs::write(&path, &garbage).unwrap();

        let ctx = open(a, &at);
        assert!(!ctx.pipeline_cache_loaded());
        ctx.pipeline(KernelKey::SOFTMAX_ROW_F32).unwrap();
        drop(ctx);
        let replaced = std::fs::read(&path).unwrap();
        assert!(!replaced.is_empty() && replaced != garbage);
        assert!(open(a, &at).pipeline_cache_loaded(), "the replacement is a valid cache");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A valid file cut short (a crash or a full disk mid-write by another tool): ignored with a
/// warning, and replaced by one that loads.
#[test]
fn a_truncated_file_is_ignored_then_replaced() {
    for a in adapters() {
        let dir = temp_dir("truncated", a);
        let at = PipelineCacheDir::At(dir.clone());
        let first = open(a, &at);
        first.pipeline(KernelKey::SOFTMAX_ROW_F32).unwrap();
        let path = first.pipeline_cache_path().unwrap();
        drop(first);
        let full = std::fs::read(&path).unwrap();
        std::fs::write(&path, &full[..full.len() / 2]).unwrap();

        let ctx = open(a, &at);
        assert!(!ctx.pipeline_cache_loaded());
        ctx.pipeline(KernelKey::SOFTMAX_ROW_F32).unwrap();
        drop(ctx);
        assert!(std::fs::read(&path).unwrap().len() > full.len() / 2);
        assert!(open(a, &at).pipeline_cache_loaded(), "the replacement is a valid cache");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn off_means_no_cache_file() {
    for a in adapters() {
        let ctx = open(a, &PipelineCacheDir::Off);
        assert_eq!(ctx.pipeline_cache_path(), None);
        assert!(!ctx.pipeline_cache_loaded());
        // Pipelines still build, without a cache.
        ctx.pipeline(KernelKey::SOFTMAX_ROW_F32).unwrap();
        ctx.save_pipeline_cache();
    }
}

/// Every kernel built cold (empty cache) and warm (from the saved file). Prints both times
/// (`--nocapture`); asserts only that the warm context loaded the file and built everything.
#[test]
fn every_kernel_builds_cold_then_warm() {
    for a in adapters() {
        let dir = temp_dir("cold-warm", a);
        let at = PipelineCacheDir::At(dir.clone());
        let mut times = Vec::new();
        for round in ["cold", "warm"] {
            let ctx = open(a, &at);
            assert_eq!(ctx.pipeline_cache_loaded(), round == "warm");
            let keys = runnable_keys(&ctx);
            let start = Instant::now();
            let mut hits = 0;
            for &key in &keys {
                hits += usize::from(
                    ctx.pipeline(key).unwrap_or_else(|e| panic!("{round} {key:?}: {e}")).from_cache(),
                );
            }
            times.push((round, keys.len(), start.elapsed(), format!("{hits} reported from the cache")));
            let name = ctx.info().name.clone();
            drop(ctx);
            if round == "warm" {
                let file =
                    std::fs::metadata(dir.read_dir().unwrap().next().unwrap().unwrap().path()).unwrap();
                let _ = std::io::Write::write_all(
                    &mut std::io::stderr(),
                    format!("pipeline cache on {name}: {times:?}, file {} bytes\n", file.len()).as_bytes(),
                );
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
