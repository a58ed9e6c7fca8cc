//! The calibration micro-benchmark: matmul rate, bandwidth, and per-step and per-run costs of
//! one opened device, measured through the ordinary `Session` / `Executable` path (so what is
//! measured is what a user's graph gets).
//!
//! Sizes start small and double until one run takes long enough to time, so a slow software
//! adapter stays within about two seconds and a fast GPU still gets a size it can be timed on.
//! Each measurement repeats for [`BUDGET`] and takes the median.

use crate::error::Error;
use crate::executable::Executable;
use crate::host::HostData;
use crate::rank::Calibration;
use crate::session::{CompileOptions, Session};
use rlx_ir::{DType, Graph, IrError};
use rlx_opt::PassOptions;
use std::time::{Duration, Instant};

/// How long each timed measurement repeats its run.
const BUDGET: Duration = Duration::from_millis(150);
/// A run must take at least this long before its size is accepted (timer and noise resolution).
const MIN_RUN: Duration = Duration::from_millis(3);
const MATMUL_SIZES: [usize; 5] = [128, 256, 512, 1024, 2048];
const ADD_SIZES: [usize; 6] = [1 << 18, 1 << 19, 1 << 20, 1 << 21, 1 << 22, 1 << 23];
/// Steps of the long chain of the dispatch measurement (the short one has one).
const CHAIN: usize = 65;

/// Measures the device of `session`. `progress` is called with the fraction done (0 to 1) after
/// each phase. Takes about a second on a CPU and two on lavapipe.
pub fn calibrate(session: &Session, progress: &mut dyn FnMut(f64)) -> Result<Calibration, Error> {
    progress(0.0);
    let gflops = matmul_rate(session)?;
    progress(0.4);
    let gbps = bandwidth(session)?;
    progress(0.7);
    let (launch_us, dispatch_us) = step_costs(session)?;
    progress(1.0);
    Ok(Calibration { gflops, gbps, dispatch_us, launch_us })
}

/// Compiled with no optional passes: the chain must stay a chain (no fusion), and nothing here
/// benefits from optimisation.
fn compile(session: &Session, g: &Graph) -> Result<Executable, Error> {
    session.compile_with(g, &CompileOptions { passes: PassOptions::none(), ..Default::default() })
}

/// Deterministic, finite, non-trivial data.
fn data(n: usize) -> Vec<f32> {
    (0..n).map(|i| ((i % 13) as f32 - 6.0) * 0.125).collect()
}

/// Seconds of one run: the device compute time where the backend reports it, else wall time.
fn one_run(exe: &mut Executable, inputs: &[(&str, &dyn HostData)], compute: bool) -> Result<f64, Error> {
    let start = Instant::now();
    exe.run(inputs)?;
    let wall = start.elapsed();
    let t = match exe.profile() {
        Some(p) if compute && !p.compute.is_zero() => p.compute,
        _ => wall,
    };
    Ok(t.as_secs_f64())
}

/// Median seconds over runs repeated for [`BUDGET`] (at least 3, at most 1000).
fn median_run(exe: &mut Executable, inputs: &[(&str, &dyn HostData)], compute: bool) -> Result<f64, Error> {
    let start = Instant::now();
    let mut times = Vec::new();
    while times.len() < 3 || (start.elapsed() < BUDGET && times.len() < 1000) {
        times.push(one_run(exe, inputs, compute)?);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// Compiles `build(size)` for growing sizes until one run takes [`MIN_RUN`], then times it.
/// Returns (size, median seconds).
fn sized(
    session: &Session,
    sizes: &[usize],
    build: impl Fn(usize) -> Result<(Graph, Vec<(String, Vec<f32>)>), IrError>,
) -> Result<(usize, f64), Error> {
    let mut chosen = None;
    for &n in sizes {
        let (g, params) = build(n)?;
        let mut exe = compile(session, &g)?;
        for (name, values) in &params {
            exe.set_param(name, values)?;
        }
        // The first run pays one-time costs (pipeline creation, first-touch allocation).
        exe.run(&[])?;
        let once = one_run(&mut exe, &[], true)?;
        chosen = Some((n, exe));
        if once >= MIN_RUN.as_secs_f64() {
            break;
        }
    }
    match chosen {
        Some((n, mut exe)) => Ok((n, median_run(&mut exe, &[], true)?)),
        None => Ok((0, f64::NAN)),
    }
}

/// GFLOP/s of an n×n by n×n f32 matmul.
fn matmul_rate(session: &Session) -> Result<f64, Error> {
    let (n, secs) = sized(session, &MATMUL_SIZES, |n| {
        let mut g = Graph::new("calibrate_matmul");
        let a = g.param("a", &[n, n], DType::F32)?;
        let b = g.param("b", &[n, n], DType::F32)?;
        let c = g.matmul(a, b)?;
        g.set_outputs(&[c])?;
        Ok((g, vec![("a".into(), data(n * n)), ("b".into(), data(n * n))]))
    })?;
    let n = n as f64;
    Ok(2.0 * n * n * n / secs / 1e9)
}

/// GB/s of an elementwise add of two f32 vectors (two reads and one write per element).
fn bandwidth(session: &Session) -> Result<f64, Error> {
    let (n, secs) = sized(session, &ADD_SIZES, |n| {
        let mut g = Graph::new("calibrate_add");
        let a = g.param("a", &[n], DType::F32)?;
        let b = g.param("b", &[n], DType::F32)?;
        let c = g.add(a, b)?;
        g.set_outputs(&[c])?;
        Ok((g, vec![("a".into(), data(n)), ("b".into(), data(n))]))
    })?;
    Ok(3.0 * 4.0 * n as f64 / secs / 1e9)
}

/// A chain of `steps` negations of a 64-element input.
fn chain(steps: usize) -> Result<Graph, IrError> {
    let mut g = Graph::new("calibrate_chain");
    let mut x = g.input("x", &[64], DType::F32)?;
    for _ in 0..steps {
        x = g.neg(x)?;
    }
    g.set_outputs(&[x])?;
    Ok(g)
}

/// (launch µs, dispatch µs): the end-to-end time of a one-step run, and the extra time per step
/// of a [`CHAIN`]-step run over it.
fn step_costs(session: &Session) -> Result<(f64, f64), Error> {
    let x = data(64);
    let inputs: [(&str, &dyn HostData); 1] = [("x", &x)];
    let time = |steps: usize| -> Result<f64, Error> {
        let mut exe = compile(session, &chain(steps)?)?;
        exe.run(&inputs)?;
        median_run(&mut exe, &inputs, false)
    };
    let one = time(1)?;
    let long = time(CHAIN)?;
    let per_step = ((long - one) / (CHAIN - 1) as f64).max(0.0);
    Ok((one * 1e6, per_step * 1e6))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Device;

    #[test]
    fn chain_has_the_asked_steps() {
        let s = crate::rank::GraphStats::of(&chain(CHAIN).unwrap());
        assert_eq!(s.steps, CHAIN);
    }

    #[test]
    fn cpu_calibration_is_plausible_and_quick() {
        let session = Session::new(Device::Cpu).unwrap();
        let mut seen = Vec::new();
        let start = Instant::now();
        let c = calibrate(&session, &mut |f| seen.push(f)).unwrap();
        let took = start.elapsed();
        assert_eq!(seen.first(), Some(&0.0));
        assert_eq!(seen.last(), Some(&1.0));
        assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
        // Loose physical bounds: any CPU of the last decade is inside them, garbage is not.
        assert!(c.gflops > 0.05 && c.gflops < 1e5, "{c:?}");
        assert!(c.gbps > 0.05 && c.gbps < 1e4, "{c:?}");
        assert!(c.launch_us > 0.0 && c.launch_us < 1e5, "{c:?}");
        assert!(c.dispatch_us >= 0.0 && c.dispatch_us < 1e4, "{c:?}");
        assert!(took < Duration::from_secs(30), "{took:?}");
    }
}
