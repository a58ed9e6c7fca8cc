//! `Device::Auto`'s choice when `RLX_DEVICE` names nothing: the available device with the
//! lowest estimated time for the graph (see `rank.rs`), from calibrations cached on disk and
//! measured lazily. `Session` resolves `Auto` (and reads `RLX_DEVICE`); this file ranks.
//!
//! Candidates are the CPU and every GPU backend that opens on a real GPU. A software adapter
//! (lavapipe) is never a candidate: it runs on the very cores the CPU backend uses, always
//! slower, and measuring it would cost seconds. With the CPU as the only candidate nothing is
//! measured at all. Otherwise each candidate without a cache entry is calibrated once (one
//! progress line on stderr) and the result cached; a device whose calibration fails is dropped
//! with a warning, never an error.

use crate::cache::{self, DeviceKey};
use crate::calibrate;
use crate::device::Device;
use crate::error::Error;
use crate::rank::{self, Calibration, GraphStats};
use crate::registry::{self, Opened};
use crate::session::Session;
use rlx_backend::Backend;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::sync::Mutex;

/// Calibrations measured or read in this process, by [`DeviceKey::key`]: without a writable
/// cache file, each device is still measured only once per process.
static MEMO: Mutex<BTreeMap<String, Calibration>> = Mutex::new(BTreeMap::new());

fn memo_get(key: &DeviceKey) -> Option<Calibration> {
    MEMO.lock().ok()?.get(&key.key()).copied()
}

fn memo_put(key: &DeviceKey, c: Calibration) {
    if let Ok(mut m) = MEMO.lock() {
        m.insert(key.key(), c);
    }
}

/// The calibration of `key` known without measuring: this process's, else the cache file's.
pub(crate) fn cached(key: &DeviceKey) -> Option<Calibration> {
    memo_get(key).or_else(|| {
        let c = cache::lookup(&cache::calibration_path()?, key)?;
        memo_put(key, c);
        Some(c)
    })
}

/// The GPU backends `Auto` may use, opened; why not for the others.
fn gpu_candidates() -> (Vec<Opened>, Vec<String>) {
    let mut opened = Vec::new();
    let mut reasons = Vec::new();
    for d in Device::PREFERENCE.into_iter().filter(|d| *d != Device::Cpu) {
        // The native Vulkan probe tells a software adapter before opening a device on it.
        if d == Device::Vulkan {
            match registry::vulkan_is_real_gpu() {
                Ok(true) => {}
                Ok(false) => {
                    reasons.push(format!("{d}: a software adapter, which auto does not select"));
                    continue;
                }
                Err(e) => {
                    reasons.push(format!("{d}: {e}"));
                    continue;
                }
            }
        }
        match Opened::open(d) {
            Ok(o) if o.is_software() => {
                reasons.push(format!("{d}: a software adapter, which auto does not select"))
            }
            Ok(o) => opened.push(o),
            Err(e) => reasons.push(format!("{d}: {e}")),
        }
    }
    (opened, reasons)
}

/// The fastest candidate for a graph with `stats` (`Session::resolve` calls this for `Auto`
/// when `RLX_DEVICE` names nothing).
pub(crate) fn fastest(stats: &GraphStats) -> Result<(Device, Box<dyn Backend>), Error> {
    let (gpus, reasons) = gpu_candidates();
    if gpus.is_empty() {
        return registry::open(Device::Cpu).map(|b| (Device::Cpu, b)).map_err(|e| {
            // A build without the `cpu` feature and no real GPU here: say why for each device.
            let mut why = reasons;
            why.push(format!("{}: {e}", Device::Cpu));
            Error::DeviceUnavailable { device: Device::Auto, reason: why.join("; ") }
        });
    }
    let mut candidates = gpus;
    // Absent only from a build without the `cpu` feature.
    if let Ok(cpu) = Opened::open(Device::Cpu) {
        candidates.push(cpu);
    }
    let mut estimates = Vec::new();
    let mut backends = Vec::new();
    for o in candidates {
        let device = o.device();
        let (backend, calibration) = calibrated(o, "Device::Auto");
        if let Some(c) = calibration {
            estimates.push((device, c));
        }
        backends.push((device, backend));
    }
    // With no calibration at all the CPU is the safe choice; without the `cpu` feature, the
    // first GPU in the order of preference.
    let choice = rank::rank(&estimates, stats).first().map_or(Device::Cpu, |r| r.0);
    // Every backend opened was kept so the winner is not opened twice; `backends` holds at
    // least the GPUs.
    let at = backends.iter().position(|(d, _)| *d == choice).unwrap_or(0);
    Ok(backends.swap_remove(at))
}

/// The calibration of an opened device: known already, else measured now (one progress line on
/// stderr, saying `why`) and cached. `None`, with a warning, when measuring fails.
fn calibrated(o: Opened, why: &str) -> (Box<dyn Backend>, Option<Calibration>) {
    let key = o.key();
    if let Some(c) = cached(&key) {
        return (o.into_backend(), Some(c));
    }
    let device = o.device();
    let _ = writeln!(
        std::io::stderr(),
        "rlx: calibrating {device} ({}) for {why}; this happens once per device and driver",
        key.adapter
    );
    let session = Session::with_backend(device, o.into_backend());
    let result = measure_and_store(&session, &key, &mut |_| {});
    let backend = session.into_backend();
    match result {
        Ok(c) => (backend, Some(c)),
        Err(e) => {
            cache::warn(&format!("calibrating {device} failed ({e}); auto will not consider it"));
            (backend, None)
        }
    }
}

fn measure_and_store(
    session: &Session,
    key: &DeviceKey,
    progress: &mut dyn FnMut(f64),
) -> Result<Calibration, Error> {
    let c = calibrate::calibrate(session, progress)?;
    memo_put(key, c);
    match cache::calibration_path() {
        Some(path) => {
            if let Err(e) = cache::store(&path, key, c) {
                cache::warn(&format!("{e}; the calibration is kept for this process only"));
            }
        }
        None => cache::warn(
            "no cache directory (set XDG_CACHE_HOME or HOME); the calibration is kept for this process only",
        ),
    }
    Ok(c)
}

/// Measures `device` now (whether or not it was calibrated before), caches the result and
/// returns it with the device's identity. `progress` gets the fraction done. `Auto` measures the
/// device it resolves to (as `Session` resolves it). This is `rlx devices --calibrate`.
pub fn calibrate_device(
    device: Device,
    progress: &mut dyn FnMut(f64),
) -> Result<(DeviceKey, Calibration), Error> {
    let device = match device {
        Device::Auto => Session::new(Device::Auto)?.device(),
        d => d,
    };
    let opened = Opened::open(device)?;
    let key = opened.key();
    let session = Session::with_backend(opened.device(), opened.into_backend());
    let c = measure_and_store(&session, &key, progress)?;
    Ok((key, c))
}

/// `Auto`'s ranking of the calibrated devices for `stats`, fastest first, with estimated seconds
/// per run; devices never calibrated and software adapters (which `Auto` never selects) are left
/// out. Nothing is measured here.
pub fn cached_ranking(stats: &GraphStats) -> Vec<(Device, f64)> {
    let estimates: Vec<(Device, Calibration)> = crate::registry::devices()
        .into_iter()
        .filter(|s| !s.software)
        .filter_map(|s| Some((s.device, s.calibration?)))
        .collect();
    rank::rank(&estimates, stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memo_answers_before_the_file() {
        let key = DeviceKey { backend: "test".into(), adapter: "memo-only".into(), driver: "x".into() };
        assert_eq!(memo_get(&key), None);
        let c = Calibration { gflops: 3.0, gbps: 2.0, dispatch_us: 1.0, launch_us: 9.0 };
        memo_put(&key, c);
        assert_eq!(cached(&key), Some(c));
    }

    #[test]
    fn auto_without_a_real_gpu_is_the_cpu_and_measures_nothing() {
        let (gpus, reasons) = gpu_candidates();
        let (d, b) = fastest(&GraphStats::representative()).unwrap();
        if gpus.is_empty() {
            assert_eq!((d, b.name()), (Device::Cpu, "cpu"));
            // Every GPU backend is accounted for.
            assert_eq!(reasons.len(), 2, "{reasons:?}");
        } else {
            assert!(reasons.len() < 2);
        }
    }
}
