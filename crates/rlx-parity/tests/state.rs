//! Device-resident state on every device: a state written in place keeps its value from run to
//! run, `reset_states` and `set_state` overwrite it, and executables compiled as a group share
//! params and states by name. A GPU device that cannot be opened skips loudly, unless
//! RLX_REQUIRE_GPU=1 makes it fail.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rlx_ir::{DType, Graph, Tensor};
use rlx_runtime::{CompileOptions, Device, Error};
use rlx_test_support::devices::{open, GPU_DEVICES};

fn devices() -> Vec<Device> {
    std::iter::once(Device::Cpu).chain(GPU_DEVICES).collect()
}

/// state s [1, 6, 2] ← rows [1, 2, 2] at offset, along axis 1; output: the updated state.
fn appender() -> Graph {
    let mut g = Graph::new("appender");
    let s = g.state("s", &[1, 6, 2], DType::F32).unwrap();
    let rows = g.input("rows", &[1, 2, 2], DType::F32).unwrap();
    let offset = g.input("offset", &[1], DType::I32).unwrap();
    let w = g.write_rows(s, rows, offset, 1).unwrap();
    g.set_outputs(&[w]).unwrap();
    g
}

/// What the state holds after writing `rows` (two rows of two) at `at` into `state`.
fn expect_write(state: &mut [f32], rows: &[f32], at: i32) {
    for t in 0..2 {
        let pos = at + t as i32;
        if (0..6).contains(&pos) {
            let p = pos as usize;
            state[2 * p..2 * p + 2].copy_from_slice(&rows[2 * t..2 * t + 2]);
        }
    }
}

#[test]
fn a_state_persists_across_runs_until_reset_or_set() {
    for device in devices() {
        let Some(session) = open(device, "state across runs") else { continue };
        let mut exe = session.compile(&appender()).unwrap();
        assert_eq!(exe.states().len(), 1);
        let mut want = vec![0f32; 12];
        let step = |exe: &mut rlx_runtime::Executable, want: &mut Vec<f32>, at: i32, base: f32| {
            let rows: Vec<f32> = (0..4).map(|i| base + i as f32).collect();
            let out = exe.run(&[("rows", &rows), ("offset", &[at])]).unwrap();
            expect_write(want, &rows, at);
            assert_eq!(out[0].to_f32_vec(), *want, "{device}: after writing at {at}");
        };
        step(&mut exe, &mut want, 0, 10.0);
        step(&mut exe, &mut want, 2, 20.0);
        // Half past the end, then half before the start: the other half is dropped.
        step(&mut exe, &mut want, 5, 30.0);
        step(&mut exe, &mut want, -1, 40.0);
        exe.reset_states().unwrap();
        want = vec![0.0; 12];
        step(&mut exe, &mut want, 3, 50.0);
        let ones = Tensor::from_f32([1, 6, 2], vec![1.0; 12]).unwrap();
        exe.set_state("s", &ones).unwrap();
        want = vec![1.0; 12];
        step(&mut exe, &mut want, 4, 60.0);
        let err = exe.set_state("nope", &ones).unwrap_err();
        assert!(err.to_string().contains("state 'nope'"), "{err}");
        eprintln!("{device}: state kept across 6 runs, reset and set");
    }
}

/// A writes `cache` [4, 1] at an offset and returns nothing but the write scaled by `w`; B reads
/// `cache` and scales it by `w`.
fn group() -> (Graph, Graph) {
    let mut a = Graph::new("writer");
    let s = a.state("cache", &[4, 1], DType::F32).unwrap();
    let w = a.param("w", &[1], DType::F32).unwrap();
    let rows = a.input("rows", &[1, 1], DType::F32).unwrap();
    let offset = a.input("offset", &[1], DType::I32).unwrap();
    let written = a.write_rows(s, rows, offset, 0).unwrap();
    let y = a.mul(written, w).unwrap();
    a.set_outputs(&[y]).unwrap();

    let mut b = Graph::new("reader");
    let s = b.state("cache", &[4, 1], DType::F32).unwrap();
    let w = b.param("w", &[1], DType::F32).unwrap();
    let y = b.mul(s, w).unwrap();
    b.set_outputs(&[y]).unwrap();
    (a, b)
}

#[test]
fn a_compile_group_shares_params_and_states() {
    for device in devices() {
        let Some(session) = open(device, "compile group") else { continue };
        let (a, b) = group();
        let mut exes = session.compile_group(&[&a, &b], &CompileOptions::default()).unwrap();
        let mut reader = exes.pop().unwrap();
        let mut writer = exes.pop().unwrap();
        writer.set_param("w", &[2.0f32]).unwrap();
        // Set through the writer, so set for the reader too.
        assert!(reader.unset_params().is_empty(), "{device}");
        writer.run(&[("rows", &[3.0f32]), ("offset", &[0])]).unwrap();
        writer.run(&[("rows", &[5.0f32]), ("offset", &[2])]).unwrap();
        let seen = reader.run(&[]).unwrap()[0].to_f32_vec();
        assert_eq!(seen, [6.0, 0.0, 10.0, 0.0], "{device}: the reader sees the writer's state");
        reader.set_param("w", &[-1.0f32]).unwrap();
        let y = writer.run(&[("rows", &[7.0f32]), ("offset", &[1])]).unwrap()[0].to_f32_vec();
        assert_eq!(y, [-3.0, -7.0, -5.0, -0.0], "{device}: the writer sees the reader's param");
        reader.reset_states().unwrap();
        assert_eq!(reader.run(&[]).unwrap()[0].to_f32_vec(), [0.0; 4], "{device}");

        // One name, two types: refused at compile time.
        let mut c = Graph::new("other");
        let s = c.state("cache", &[5, 1], DType::F32).unwrap();
        c.set_outputs(&[s]).unwrap();
        let err = session.compile_group(&[&a, &c], &CompileOptions::default()).unwrap_err();
        assert!(matches!(err, Error::Backend(_)) && err.to_string().contains("cache"), "{device}: {err}");
        eprintln!("{device}: the group shares params and states");
    }
}
