//! Run times from GPU timestamps and host clocks, the same arithmetic for both drivers:
//! `RLX_PROFILE=1` asks for a time per kernel launch, a timestamp counter's ticks become
//! durations, and each run's wall time is split into the parts of a [`RunProfile`].

use rlx_backend::RunProfile;
use std::time::Duration;

/// `RLX_PROFILE=1`: time every kernel launch (a timestamp after each; see
/// `Executable::kernel_times`).
pub fn profiling() -> bool {
    std::env::var("RLX_PROFILE").is_ok_and(|v| v == "1")
}

/// Timestamps of one recorded run on a counter of `period` nanoseconds per tick: one before
/// the first launch, then one after the last launch, or one after each launch when `names` (the
/// launches' kernel names) is given.
#[derive(Clone, Debug, PartialEq)]
pub struct Timestamps {
    pub period: f64,
    pub names: Option<Vec<&'static str>>,
}

impl Timestamps {
    /// Timestamp queries to record.
    pub fn queries(&self) -> u32 {
        match &self.names {
            Some(names) => names.len() as u32 + 1,
            None => 2,
        }
    }

    /// The query to write after launch `n` (counting from 1), when every launch is timed.
    pub fn after_launch(&self, n: usize) -> Option<u32> {
        self.names.as_ref().map(|_| n as u32)
    }

    /// The query to write after the last launch, when launches are not timed one by one.
    pub fn after_all(&self) -> Option<u32> {
        self.names.is_none().then_some(1)
    }

    fn span(&self, a: u64, b: u64) -> Duration {
        Duration::from_nanos((b.saturating_sub(a) as f64 * self.period) as u64)
    }

    /// The time from the first tick to the last.
    pub fn total(&self, ticks: &[u64]) -> Duration {
        self.span(ticks.first().copied().unwrap_or(0), ticks.last().copied().unwrap_or(0))
    }

    /// Each launch's kernel name and the time from the previous launch's end to its own (empty
    /// unless per-launch timestamps were asked for).
    pub fn kernel_times(&self, ticks: &[u64]) -> Vec<(&'static str, Duration)> {
        let Some(names) = &self.names else { return Vec::new() };
        names.iter().zip(ticks.windows(2)).map(|(&n, w)| (n, self.span(w[0], w[1]))).collect()
    }
}

/// The profile of a run whose input and output copies share one submission with the kernels:
/// `upload` and `readback` are the host's own parts, `submitted` the time from submit to the
/// end of the wait; compute is the GPU's time for the kernels where timestamps exist (else the
/// whole wait), and the rest of the wait (the copies) is split evenly between upload and
/// readback.
pub fn split_profile(
    upload: Duration,
    submitted: Duration,
    gpu: Option<Duration>,
    readback: Duration,
) -> RunProfile {
    let compute = gpu.unwrap_or(submitted);
    let copies = submitted.saturating_sub(compute);
    RunProfile { upload: upload + copies / 2, compute, readback: readback + copies / 2 }
}

/// The profile of a finished run of `total` time: upload (host writes), compute (the GPU's
/// time by timestamps, else submit-to-wait on the host), readback (the rest: copies, map,
/// conversion).
pub fn rest_profile(total: Duration, upload: Duration, waited: Duration, gpu_ns: Option<f64>) -> RunProfile {
    let compute = gpu_ns.map_or(waited, |ns| Duration::from_nanos(ns as u64));
    let readback = total.saturating_sub(upload).saturating_sub(compute);
    RunProfile { upload, compute, readback }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_become_times_per_launch_and_in_total() {
        let t = Timestamps { period: 2.0, names: Some(vec!["a", "b"]) };
        assert_eq!((t.queries(), t.after_launch(2), t.after_all()), (3, Some(2), None));
        let ticks = [10, 15, 30];
        assert_eq!(t.total(&ticks), Duration::from_nanos(40));
        assert_eq!(
            t.kernel_times(&ticks),
            [("a", Duration::from_nanos(10)), ("b", Duration::from_nanos(30))]
        );
        let t = Timestamps { period: 1.0, names: None };
        assert_eq!((t.queries(), t.kernel_times(&[1, 2])), (2, vec![]));
        assert_eq!((t.after_launch(2), t.after_all()), (None, Some(1)));
        assert_eq!(t.total(&[5, 3]), Duration::ZERO);
    }

    #[test]
    fn profiles_split_the_wall_time() {
        let ms = Duration::from_millis;
        let p = split_profile(ms(1), ms(10), Some(ms(6)), ms(2));
        assert_eq!((p.upload, p.compute, p.readback), (ms(3), ms(6), ms(4)));
        assert_eq!(split_profile(ms(1), ms(10), None, ms(2)).compute, ms(10));
        let p = rest_profile(ms(20), ms(2), ms(15), Some(5e6));
        assert_eq!((p.upload, p.compute, p.readback), (ms(2), ms(5), ms(13)));
        assert_eq!(rest_profile(ms(20), ms(2), ms(15), None).compute, ms(15));
    }
}
