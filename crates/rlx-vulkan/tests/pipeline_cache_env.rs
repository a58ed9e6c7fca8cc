//! `RLX_PIPELINE_CACHE` through the default options. The only test of this binary, because it
//! sets the process environment (other tests would see it).

// Tests and their helpers may unwrap, expect and panic: a failure is the test's verdict.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use rlx_gpu::{KernelKey, PIPELINE_CACHE_ENV};
use rlx_vulkan::Context;

#[test]
fn the_variable_moves_or_turns_off_the_cache() {
    let adapter = match rlx_vulkan::probe().map(|l| l.into_iter().find(|a| a.is_usable())) {
        Ok(Some(a)) => a.index,
        Ok(None) => return support::no_device("no usable adapter"),
        Err(e) => return support::no_device(&e.to_string()),
    };
    let dir = std::env::temp_dir().join(format!("rlx-vulkan-pcache-env-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);

    std::env::set_var(PIPELINE_CACHE_ENV, &dir);
    let ctx = Context::with_adapter(adapter).unwrap();
    let path = ctx.pipeline_cache_path().expect("the cache is on");
    assert_eq!(path.parent(), Some(dir.as_path()));
    ctx.pipeline(KernelKey::SOFTMAX_ROW_F32).unwrap();
    drop(ctx);
    let saved = std::fs::read(&path).unwrap();
    assert!(!saved.is_empty());

    for off in ["0", "off"] {
        std::env::set_var(PIPELINE_CACHE_ENV, off);
        let ctx = Context::with_adapter(adapter).unwrap();
        assert_eq!(ctx.pipeline_cache_path(), None, "{off}");
        assert!(!ctx.pipeline_cache_loaded(), "{off}: nothing is read");
        ctx.pipeline(KernelKey::MATMUL_TILED_F32).unwrap();
        drop(ctx);
        // Nothing written: the folder holds the one file, unchanged.
        assert_eq!(std::fs::read(&path).unwrap(), saved, "{off}");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "{off}");
    }
    std::env::remove_var(PIPELINE_CACHE_ENV);
    let _ = std::fs::remove_dir_all(&dir);
}
