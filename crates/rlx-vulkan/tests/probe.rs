//! Probing the machine's Vulkan devices.

// Tests and their helpers may unwrap, expect and panic: a failure is the test's verdict.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

#[test]
fn probe_describes_every_device() {
    let adapters = match rlx_vulkan::probe() {
        Ok(a) => a,
        Err(e) => return support::no_device(&e.to_string()),
    };
    if adapters.is_empty() {
        return support::no_device("the loader lists no device");
    }
    for a in &adapters {
        eprintln!("{}\n{a:#?}", a.summary());
        assert!(!a.name.is_empty(), "device {} has no name", a.index);
        assert!(a.api_version[0] >= 1);
        assert!(!a.memory_heaps.is_empty(), "{}: no memory heap", a.name);
        if a.is_usable() {
            // Minimums every Vulkan implementation guarantees.
            let l = &a.limits;
            assert!(l.max_push_constants_size >= 128, "{l:?}");
            assert!(l.max_compute_shared_memory_size >= 16384, "{l:?}");
            assert!(l.max_compute_work_group_invocations >= 128, "{l:?}");
            assert!(l.max_compute_work_group_count.iter().all(|&c| c >= 65535), "{l:?}");
            assert!(l.max_storage_buffer_range >= 1 << 27, "{l:?}");
            assert!(l.max_memory_allocation_size >= 1 << 30, "{l:?}");
        }
    }
    let picked = rlx_vulkan::pick(&adapters).unwrap();
    eprintln!("picked: {}", picked.summary());
    assert!(picked.is_usable());
}

#[test]
fn a_context_reports_the_picked_device() {
    let Some(ctx) = support::contexts().into_iter().next() else { return };
    let adapters = rlx_vulkan::probe().unwrap();
    assert!(adapters.iter().any(|a| a == ctx.info()), "context device not among the probed ones");
    assert!(!ctx.info().name.is_empty());
}
