//! The calibration cache: one JSON file, `calibration.json` in rlx's cache folder
//! ([`rlx_backend::rlx_cache_dir`], `~/.cache/rlx/` on Linux), mapping a device identity to its [`Calibration`].
//!
//! The cache is an optimisation only: a missing file is empty, and a file that cannot be read or
//! parsed (or has another format version) is treated as empty with a warning, so the devices are
//! measured again and the file rewritten. Writes go to a temporary file renamed into place, so a
//! reader never sees half a file even with several processes calibrating at once.

use crate::rank::Calibration;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Format version of the file; another version is ignored (and replaced on the next write).
const VERSION: u32 = 1;

/// What a calibration is valid for: the backend, the adapter, and its driver. A new driver or
/// another adapter is measured afresh.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceKey {
    /// "cpu", "wgpu", "vulkan".
    pub backend: String,
    /// CPU model or adapter name.
    pub adapter: String,
    /// Driver and its version (for the CPU: the thread count the backend uses).
    pub driver: String,
}

impl DeviceKey {
    /// The key of the cache entry: `backend | adapter | driver`.
    pub fn key(&self) -> String {
        format!("{} | {} | {}", self.backend, self.adapter, self.driver)
    }
}

/// One cached measurement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CacheEntry {
    /// The device measured.
    pub device: DeviceKey,
    /// What was measured.
    pub calibration: Calibration,
    /// When it was measured, seconds since the Unix epoch.
    pub measured_unix: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct CacheFile {
    version: u32,
    entries: BTreeMap<String, CacheEntry>,
}

/// Where the cache lives: `calibration.json` in rlx's cache folder
/// ([`rlx_backend::rlx_cache_dir`]: `$XDG_CACHE_HOME/rlx` when that variable is an absolute
/// path, else the platform's cache folder, `~/.cache/rlx` on Linux); `None` when none is known.
/// This crate's own unit tests use a per-process temporary directory instead, so a test that
/// calibrates never writes the user's cache.
pub fn calibration_path() -> Option<PathBuf> {
    if cfg!(test) {
        let dir = std::env::temp_dir().join(format!("rlx-runtime-unit-tests-{}", std::process::id()));
        return path_in(rlx_backend::rlx_cache_dir_from(Some(dir.as_os_str()), None));
    }
    path_in(rlx_backend::rlx_cache_dir())
}

fn path_in(rlx_cache: Option<PathBuf>) -> Option<PathBuf> {
    Some(rlx_cache?.join("calibration.json"))
}

/// The entries of the cache at `path`, plus a warning when the file exists but cannot be used
/// (the caller prints it; the entries are then empty).
pub(crate) fn load(path: &Path) -> (BTreeMap<String, CacheEntry>, Option<String>) {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (BTreeMap::new(), None),
        Err(e) => {
            return (BTreeMap::new(), Some(format!("cannot read calibration cache {}: {e}", path.display())))
        }
    };
    match serde_json::from_str::<CacheFile>(&text) {
        Ok(f) if f.version == VERSION => (f.entries, None),
        Ok(f) => (
            BTreeMap::new(),
            Some(format!(
                "calibration cache {} has format version {} (this rlx writes {VERSION}); ignoring it",
                path.display(),
                f.version
            )),
        ),
        Err(e) => (
            BTreeMap::new(),
            Some(format!("calibration cache {} is corrupt ({e}); ignoring it", path.display())),
        ),
    }
}

/// The cached calibration of `device` at `path`, if any; a warning about an unusable file goes
/// to stderr.
pub(crate) fn lookup(path: &Path, device: &DeviceKey) -> Option<Calibration> {
    let (entries, warning) = load(path);
    if let Some(w) = warning {
        warn(&format!("{w}; the devices will be measured again"));
    }
    entries.get(&device.key()).map(|e| e.calibration)
}

/// Adds or replaces the entry of `device` in the cache at `path`, keeping the other entries.
pub(crate) fn store(path: &Path, device: &DeviceKey, calibration: Calibration) -> Result<(), String> {
    // Re-read right before writing so that entries another process added meanwhile survive.
    let (mut entries, _) = load(path);
    let measured_unix =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    entries.insert(device.key(), CacheEntry { device: device.clone(), calibration, measured_unix });
    let file = CacheFile { version: VERSION, entries };
    let text = serde_json::to_string_pretty(&file).map_err(|e| e.to_string())?;
    let fail = |what: &str, e: std::io::Error| format!("cannot {what} {}: {e}", path.display());
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| fail("create the directory of", e))?;
    }
    let tmp = path.with_extension(format!("json.{}.tmp", std::process::id()));
    std::fs::write(&tmp, text).map_err(|e| fail("write", e))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail("replace", e)
    })
}

/// One warning line on stderr.
pub(crate) fn warn(message: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "rlx: warning: {message}");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_path(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rlx-cache-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir.join("rlx").join("calibration.json")
    }

    fn key(adapter: &str) -> DeviceKey {
        DeviceKey { backend: "wgpu".into(), adapter: adapter.into(), driver: "mesa 25".into() }
    }

    const C: Calibration = Calibration { gflops: 12.5, gbps: 3.25, dispatch_us: 7.0, launch_us: 90.0 };

    #[test]
    fn unit_tests_never_touch_the_user_cache() {
        let p = calibration_path().unwrap();
        assert!(p.starts_with(std::env::temp_dir()), "{}", p.display());
    }

    #[test]
    fn path_is_in_the_rlx_cache_folder() {
        let p = path_in(Some(PathBuf::from("/x/cache/rlx"))).unwrap();
        assert_eq!(p, PathBuf::from("/x/cache/rlx/calibration.json"));
        assert_eq!(path_in(None), None);
    }

    #[test]
    fn store_then_lookup_round_trips_and_keeps_other_entries() {
        let path = temp_path("roundtrip");
        assert_eq!(lookup(&path, &key("a")), None);
        store(&path, &key("a"), C).unwrap();
        let other = Calibration { gflops: 1.0, ..C };
        store(&path, &key("b"), other).unwrap();
        assert_eq!(lookup(&path, &key("a")), Some(C));
        assert_eq!(lookup(&path, &key("b")), Some(other));
        // Another driver is another device.
        let new_driver = DeviceKey { driver: "mesa 26".into(), ..key("a") };
        assert_eq!(lookup(&path, &new_driver), None);
        // Replacing an entry.
        store(&path, &key("a"), other).unwrap();
        assert_eq!(lookup(&path, &key("a")), Some(other));
        let (entries, warning) = load(&path);
        assert_eq!((entries.len(), warning), (2, None));
        let _ = std::fs::remove_dir_all(path.parent().unwrap().parent().unwrap());
    }

    #[test]
    fn corrupt_or_foreign_files_are_empty_with_a_warning_and_get_replaced() {
        let path = temp_path("corrupt");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        for bad in ["{ not json", "", "[1, 2]", r#"{"version": 99, "entries": {}}"#, "\u{0}\u{1}garbage"] {
            std::fs::write(&path, bad).unwrap();
            let (entries, warning) = load(&path);
            assert!(entries.is_empty(), "{bad:?}");
            let w = warning.unwrap_or_default();
            assert!(w.contains("calibration.json"), "{bad:?}: {w}");
            assert_eq!(lookup(&path, &key("a")), None);
        }
        store(&path, &key("a"), C).unwrap();
        assert_eq!(lookup(&path, &key("a")), Some(C));
        // A directory where the file should be: unreadable, never a crash.
        let dir_path = temp_path("isdir");
        std::fs::create_dir_all(&dir_path).unwrap();
        let (entries, warning) = load(&dir_path);
        assert!(entries.is_empty() && warning.is_some());
        assert!(store(&dir_path, &key("a"), C).is_err());
        let _ = std::fs::remove_dir_all(path.parent().unwrap().parent().unwrap());
        let _ = std::fs::remove_dir_all(dir_path.parent().unwrap().parent().unwrap());
    }
}
