//! One pipeline cache file: the bytes a driver's pipeline cache hands out, sealed in a small
//! envelope and replaced atomically. Both GPU drivers store their caches through it.
//!
//! Why an envelope: drivers check the header of the cache data they are given (Vulkan: vendor,
//! device and cache UUID; wgpu adds its own header), but what follows the header is theirs to
//! trust, and a driver fed damaged contents may misbehave rather than refuse them. The envelope
//! (magic, format version, length, checksum) turns a file that was cut short, damaged or
//! written by something else into "no cache", so a driver only ever sees bytes it produced.
//! It also lets a driver say whether a file was loaded, which wgpu does not report.
//!
//! Layout, little-endian: `b"rlxpcach"`, format version (u32), zero (u32), payload length
//! (u64), payload checksum (u64), payload.
//!
//! The cache is an optimisation only: callers ignore every [`CacheFileError`], so a bad or
//! unwritable file never fails a compile; a bad file is replaced by the next save.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

const MAGIC: [u8; 8] = *b"rlxpcach";
/// Format version of the envelope; a file of another version is ignored, then replaced.
const VERSION: u32 = 1;
const HEADER_BYTES: usize = 32;

/// Why a cache file could not be used or written.
#[derive(Debug, thiserror::Error)]
pub enum CacheFileError {
    #[error("cannot read pipeline cache {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("pipeline cache {path} is not usable ({reason}); it will be replaced")]
    Invalid { path: PathBuf, reason: &'static str },
    #[error("cannot write pipeline cache {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
}

/// A driver's cache file, and whether pipelines were built since it was last written.
#[derive(Debug)]
pub struct CacheFile {
    path: PathBuf,
    changed: AtomicBool,
    /// Held through a whole save, so that of two threads saving at once the later snapshot of
    /// the driver's cache is the one renamed into place last.
    saving: Mutex<()>,
}

impl CacheFile {
    /// The file `name` in `dir` (neither needs to exist yet).
    pub fn new(dir: &Path, name: &str) -> Self {
        CacheFile { path: dir.join(name), changed: AtomicBool::new(false), saving: Mutex::new(()) }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The payload of the file: `Ok(None)` when there is no file, an error when it cannot be
    /// read or fails the envelope's checks.
    pub fn load(&self) -> Result<Option<Vec<u8>>, CacheFileError> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(CacheFileError::Read { path: self.path.clone(), source }),
        };
        open(&bytes)
            .map(|payload| Some(payload.to_vec()))
            .map_err(|reason| CacheFileError::Invalid { path: self.path.clone(), reason })
    }

    /// [`Self::load`] for a driver opening its cache: a file that cannot be used gives `None`, a
    /// warning line on stderr (`rlx: warning: …`) and a rewrite at the next save.
    pub fn load_or_warn(&self) -> Option<Vec<u8>> {
        self.load_reporting(|message| {
            let _ = writeln!(std::io::stderr(), "rlx: warning: {message}");
        })
    }

    /// [`Self::load_or_warn`] with the warning handed to `report`.
    pub fn load_reporting(&self, report: impl FnOnce(&str)) -> Option<Vec<u8>> {
        match self.load() {
            Ok(data) => data,
            Err(e) => {
                report(&format!("{e}; pipelines are built without it"));
                self.changed.store(true, Ordering::Release);
                None
            }
        }
    }

    /// Warns (as [`Self::load_or_warn`]) that the file holds another device's or driver's cache,
    /// and has it rewritten at the next save.
    pub fn foreign(&self) {
        let _ = writeln!(
            std::io::stderr(),
            "rlx: warning: pipeline cache {} was written for another device or driver; it will be \
             replaced",
            self.path.display()
        );
        self.changed.store(true, Ordering::Release);
    }

    /// Records that a pipeline was built through the cache. Call it after the pipeline exists,
    /// so that a save which sees the mark also sees the pipeline.
    pub fn mark_changed(&self) {
        self.changed.store(true, Ordering::Release);
    }

    /// Writes `data()` when pipelines were built since the last save (or since the start);
    /// `Ok(true)` when the file was written. `data` returning `None` (the driver had nothing to
    /// give) writes nothing. A failed write is not retried until new pipelines are built.
    pub fn save_if_changed(&self, data: impl FnOnce() -> Option<Vec<u8>>) -> Result<bool, CacheFileError> {
        let _saving = self.saving.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if !self.changed.swap(false, Ordering::AcqRel) {
            return Ok(false);
        }
        let Some(payload) = data() else { return Ok(false) };
        self.write(&seal(&payload)).map(|()| true)
    }

    /// Replaces the file with `bytes`: a temporary file in the same folder renamed over it, so
    /// a reader (another process) sees the old file or the new one, never half of one.
    fn write(&self, bytes: &[u8]) -> Result<(), CacheFileError> {
        // Distinct per process and per save, for processes and contexts saving at once.
        static SAVES: AtomicU64 = AtomicU64::new(0);
        let fail = |source| CacheFileError::Write { path: self.path.clone(), source };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(fail)?;
        let name = self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let n = SAVES.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{name}.{}.{n}.tmp", std::process::id()));
        let written = std::fs::File::create(&tmp).and_then(|mut f| f.write_all(bytes));
        let replaced = written.and_then(|()| std::fs::rename(&tmp, &self.path));
        if replaced.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        replaced.map_err(fail)
    }
}

/// `payload` in its envelope.
fn seal(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_BYTES + payload.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&checksum(payload).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// The payload of a sealed file, or why the file is not one.
fn open(bytes: &[u8]) -> Result<&[u8], &'static str> {
    let Some((header, payload)) = bytes.split_first_chunk::<HEADER_BYTES>() else {
        return Err("shorter than its header");
    };
    let u32_at = |i: usize| u32::from_le_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]);
    let u64_at = |i: usize| u64::from(u32_at(i)) | (u64::from(u32_at(i + 4)) << 32);
    if header[..8] != MAGIC {
        return Err("not an rlx pipeline cache");
    }
    if u32_at(8) != VERSION || u32_at(12) != 0 {
        return Err("another format version");
    }
    if u64_at(16) != payload.len() as u64 {
        return Err("its length does not match its header");
    }
    if u64_at(24) != checksum(payload) {
        return Err("its checksum does not match");
    }
    Ok(payload)
}

/// A 64-bit FNV-1a-style hash over 8-byte words (with a rotation, so that high bits feed back
/// into low ones). It detects accidental damage, not tampering, at several GB/s.
fn checksum(bytes: &[u8]) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    let mut mix = |word: [u8; 8]| h = (h ^ u64::from_le_bytes(word)).wrapping_mul(PRIME).rotate_left(23);
    for w in &mut words {
        let mut word = [0u8; 8];
        word.copy_from_slice(w);
        mix(word);
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        let mut word = [0u8; 8];
        word[..tail.len()].copy_from_slice(tail);
        mix(word);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rlx-gpu-cache-file-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn sealed_payloads_open_and_damaged_ones_do_not() {
        for payload in [&b""[..], b"x", b"0123456789abcdef!", &[7u8; 1000]] {
            let sealed = seal(payload);
            assert_eq!(open(&sealed), Ok(payload));
            // Cut short, extended, or one bit flipped anywhere: refused.
            assert!(open(&sealed[..sealed.len() - 1]).is_err());
            assert!(open(&[&sealed[..], b"?"].concat()).is_err());
            for i in 0..sealed.len() {
                let mut bad = sealed.clone();
                bad[i] ^= 0x10;
                assert!(open(&bad).is_err(), "flip at {i} of {}", sealed.len());
            }
        }
        assert_eq!(open(b"garbage"), Err("shorter than its header"));
        assert_eq!(open(&[0xab; 64]), Err("not an rlx pipeline cache"));
    }

    /// A corrupt or truncated file: `None`, one warning naming the file, and the next save
    /// rewrites it (even before any pipeline is built) with a file that loads.
    #[test]
    fn unusable_files_warn_and_are_rewritten() {
        let dir = temp_dir("warn");
        std::fs::create_dir_all(&dir).unwrap();
        let good = seal(b"driver bytes");
        for bad in [b"garbage".to_vec(), good[..good.len() - 3].to_vec(), good[..10].to_vec()] {
            let file = CacheFile::new(&dir, "dev.bin");
            std::fs::write(file.path(), &bad).unwrap();
            let mut warnings = Vec::new();
            assert_eq!(file.load_reporting(|m| warnings.push(m.to_string())), None);
            assert_eq!(warnings.len(), 1);
            assert!(warnings[0].contains("dev.bin") && warnings[0].contains("replaced"), "{warnings:?}");
            assert!(file.save_if_changed(|| Some(b"fresh".to_vec())).unwrap());
            assert_eq!(file.load().unwrap().as_deref(), Some(&b"fresh"[..]));
            assert_eq!(file.load_reporting(|m| panic!("{m}")).as_deref(), Some(&b"fresh"[..]));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn saves_only_after_changes_and_loads_what_was_saved() {
        let dir = temp_dir("roundtrip");
        let file = CacheFile::new(&dir.join("nested"), "dev.bin");
        assert!(file.load().unwrap().is_none());
        // Nothing built yet: nothing written, and the data is not even asked for.
        assert!(!file.save_if_changed(|| unreachable!()).unwrap());
        file.mark_changed();
        assert!(!file.save_if_changed(|| None).unwrap());
        assert!(!file.path().exists());
        file.mark_changed();
        assert!(file.save_if_changed(|| Some(b"driver bytes".to_vec())).unwrap());
        assert_eq!(file.load().unwrap().as_deref(), Some(&b"driver bytes"[..]));
        assert!(!file.save_if_changed(|| Some(b"again".to_vec())).unwrap());
        // No temporary files are left behind.
        let names: Vec<_> =
            std::fs::read_dir(dir.join("nested")).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["dev.bin"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_garbage_file_is_invalid_and_then_replaced() {
        let dir = temp_dir("garbage");
        std::fs::create_dir_all(&dir).unwrap();
        let file = CacheFile::new(&dir, "dev.bin");
        std::fs::write(file.path(), b"\x00\x01 not a cache at all, just some bytes").unwrap();
        let e = file.load().unwrap_err();
        assert!(matches!(e, CacheFileError::Invalid { .. }), "{e}");
        assert!(e.to_string().contains("dev.bin"), "{e}");
        file.mark_changed();
        assert!(file.save_if_changed(|| Some(vec![1, 2, 3])).unwrap());
        assert_eq!(file.load().unwrap(), Some(vec![1, 2, 3]));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_unwritable_place_is_an_error_not_a_panic() {
        let dir = temp_dir("blocked");
        std::fs::create_dir_all(&dir).unwrap();
        // A file where the cache folder should be.
        std::fs::write(dir.join("folder"), b"").unwrap();
        let file = CacheFile::new(&dir.join("folder"), "dev.bin");
        file.mark_changed();
        let e = file.save_if_changed(|| Some(vec![1])).unwrap_err();
        assert!(matches!(e, CacheFileError::Write { .. }), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
