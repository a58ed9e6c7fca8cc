//! `rlx bench soak`, short: a BERT layer (8 tokens) run 30 times on each GPU device with memory and
//! live-object readings, then from 2 threads three ways; the binary exits non-zero when memory
//! or objects grow or any result differs. A GPU device that cannot be opened fails under
//! `RLX_REQUIRE_GPU=1` and is skipped loudly otherwise.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rlx::runtime::Device;
use std::process::Command;

#[test]
fn bench_soak_bert_layer_is_flat_and_thread_safe() {
    let devices: Vec<Device> = rlx_test_support::sessions(&rlx_test_support::GPU_DEVICES, "rlx bench soak")
        .into_iter()
        .map(|(d, _)| d)
        .collect();
    if devices.is_empty() {
        return;
    }
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rlx"));
    cmd.args([
        "bench",
        "soak",
        "--soak",
        "bert-layer",
        "--runs",
        "40",
        "--threads",
        "2",
        "--thread-runs",
        "2",
    ]);
    for d in &devices {
        cmd.args(["--device", d.name()]);
    }
    let out = cmd.env_remove("RLX_DEVICE").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    for d in &devices {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(d.name()) && l.contains("bert-layer") && l.contains("/"))
            .unwrap_or_else(|| panic!("no soak row for {d}:\n{stdout}"));
        // Readings exist (device bytes and objects are counted, not n/a) and the row passed.
        assert!(!row.contains("n/a") && row.trim_end().ends_with("ok"), "{row}");
        let modes =
            stdout.lines().filter(|l| l.starts_with(d.name()) && l.trim_end().ends_with("ok")).count();
        assert_eq!(modes, 4, "soak row plus three thread rows for {d}:\n{stdout}");
    }
}
