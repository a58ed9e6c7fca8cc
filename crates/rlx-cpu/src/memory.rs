//! How much memory the host has: the CPU backend's `max_tensor_bytes`.

use rlx_ir::MAX_TENSOR_BYTES;

/// The largest tensor the CPU backend accepts, in bytes: the machine's physical memory
/// (`MemTotal` of `/proc/meminfo`) on Linux, capped at [`MAX_TENSOR_BYTES`] (`isize::MAX`, the
/// most one allocation can hold). Elsewhere, or when `/proc/meminfo` cannot be read or parsed,
/// [`MAX_TENSOR_BYTES`]. Container memory limits (cgroups) are not consulted, so a tensor that
/// passes may still fail to allocate inside a small container.
pub fn host_memory_bytes() -> u64 {
    let total = if cfg!(target_os = "linux") {
        std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| mem_total(&s))
    } else {
        None
    };
    total.map_or(MAX_TENSOR_BYTES, |b| b.min(MAX_TENSOR_BYTES))
}

/// Bytes in the `MemTotal:  16318480 kB` line of a `/proc/meminfo` text, if there is one.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find_map(|l| l.strip_prefix("MemTotal:"))?;
    let mut words = line.split_whitespace();
    let value: u64 = words.next()?.parse().ok()?;
    let unit = match words.next() {
        Some("kB") => 1024,
        None => 1,
        Some(_) => return None,
    };
    value.checked_mul(unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_mem_total_in_kib() {
        let text = "MemFree:  100 kB\nMemTotal:       16318480 kB\nSwapTotal: 0 kB\n";
        assert_eq!(mem_total(text), Some(16_318_480 * 1024));
        assert_eq!(mem_total("MemTotal: 4096\n"), Some(4096));
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        assert_eq!(mem_total("MemFree: 1 kB\n"), None);
        assert_eq!(mem_total("MemTotal: lots kB\n"), None);
        assert_eq!(mem_total("MemTotal: 5 MB\n"), None);
        assert_eq!(mem_total("MemTotal: 18446744073709551615 kB\n"), None, "overflow");
    }

    #[test]
    fn host_limit_is_positive_and_capped() {
        let b = host_memory_bytes();
        assert!(b > 0 && b <= MAX_TENSOR_BYTES, "{b}");
        if cfg!(target_os = "linux") && std::path::Path::new("/proc/meminfo").exists() {
            assert!(b < MAX_TENSOR_BYTES, "read from /proc/meminfo: {b}");
        }
    }
}
