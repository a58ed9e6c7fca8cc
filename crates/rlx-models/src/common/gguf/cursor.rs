//! Little-endian reads from a byte slice that never go past its end: each read checks the bytes
//! left first and says how many it needed.

use super::error::GgufError;

/// A read that ran out of bytes: where it started and how many it needed.
#[derive(Debug, Clone, Copy)]
pub(super) struct Short {
    at: usize,
    need: u64,
    len: usize,
}

impl Short {
    /// The finding, naming what was being read.
    pub(super) fn of(self, what: impl Into<String>) -> GgufError {
        GgufError::Truncated { what: what.into(), at: self.at, need: self.need, len: self.len }
    }
}

/// Adds what was being read to a short read; `what` runs only on failure.
pub(super) trait OrTruncated<T> {
    fn or_truncated(self, what: impl FnOnce() -> String) -> Result<T, GgufError>;
}

impl<T> OrTruncated<T> for Result<T, Short> {
    fn or_truncated(self, what: impl FnOnce() -> String) -> Result<T, GgufError> {
        self.map_err(|s| s.of(what()))
    }
}

/// A position in a byte slice. `pos <= bytes.len()` always.
pub(super) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        Cursor { bytes, pos: 0 }
    }

    pub(super) fn pos(&self) -> usize {
        self.pos
    }

    pub(super) fn left(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }

    /// The next `n` bytes.
    pub(super) fn take(&mut self, n: u64) -> Result<&'a [u8], Short> {
        let short = Short { at: self.pos, need: n, len: self.bytes.len() };
        let n = usize::try_from(n).map_err(|_| short)?;
        let end = self.pos.checked_add(n).ok_or(short)?;
        let slice = self.bytes.get(self.pos..end).ok_or(short)?;
        self.pos = end;
        Ok(slice)
    }

    /// The next `N` bytes as an array.
    pub(super) fn array<const N: usize>(&mut self) -> Result<[u8; N], Short> {
        // N as u64 cannot truncate: usize is at most 64 bits on every target rlx builds for.
        let b = self.take(N as u64)?;
        Ok(le_array(b))
    }

    pub(super) fn u32(&mut self) -> Result<u32, Short> {
        self.array().map(u32::from_le_bytes)
    }

    pub(super) fn u64(&mut self) -> Result<u64, Short> {
        self.array().map(u64::from_le_bytes)
    }

    /// A GGUF string (u64 byte length, then UTF-8 bytes); `what` names it in errors.
    pub(super) fn string(&mut self, what: impl Fn() -> String) -> Result<String, GgufError> {
        let n = self.u64().or_truncated(|| format!("the length of {}", what()))?;
        let bytes = self.take(n).or_truncated(&what)?;
        String::from_utf8(bytes.to_vec())
            .map_err(|e| GgufError::NotUtf8 { what: what(), reason: e.to_string() })
    }

    /// `count` entries of at least `min_bytes` each, checked against the bytes left, as a
    /// `usize` that is safe to reserve for.
    pub(super) fn count(
        &self,
        count: u64,
        min_bytes: usize,
        what: impl FnOnce() -> String,
    ) -> Result<usize, GgufError> {
        let max = self.left() / min_bytes.max(1);
        match usize::try_from(count) {
            Ok(n) if n <= max => Ok(n),
            _ => Err(GgufError::TooMany { what: what(), count, left: self.left(), max }),
        }
    }
}

/// The first `N` bytes of `b` (zeros past its end, which callers never reach: they pass
/// exactly `N` bytes).
pub(super) fn le_array<const N: usize>(b: &[u8]) -> [u8; N] {
    std::array::from_fn(|i| b.get(i).copied().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_stop_at_the_end() {
        let mut c = Cursor::new(&[1, 0, 0, 0, 2, 0]);
        assert_eq!(c.u32().unwrap(), 1);
        let e = c.u32().unwrap_err().of("x");
        assert_eq!(e, GgufError::Truncated { what: "x".into(), at: 4, need: 4, len: 6 });
        assert_eq!(c.pos(), 4, "a failed read moves nothing");
        assert!(c.take(u64::MAX).is_err());
        assert_eq!(c.take(2).unwrap(), &[2, 0]);
        assert_eq!(c.left(), 0);
    }

    #[test]
    fn counts_are_bounded_by_the_bytes_left() {
        let c = Cursor::new(&[0; 100]);
        assert_eq!(c.count(12, 8, || "n".into()).unwrap(), 12);
        let e = c.count(1 << 60, 8, || "n".into()).unwrap_err();
        assert_eq!(e, GgufError::TooMany { what: "n".into(), count: 1 << 60, left: 100, max: 12 });
    }

    #[test]
    fn strings_check_length_and_utf8() {
        let mut bytes = 3u64.to_le_bytes().to_vec();
        bytes.extend_from_slice(b"abc");
        assert_eq!(Cursor::new(&bytes).string(|| "s".into()).unwrap(), "abc");
        bytes[8] = 0xff;
        assert!(matches!(Cursor::new(&bytes).string(|| "s".into()), Err(GgufError::NotUtf8 { .. })));
        let huge = u64::MAX.to_le_bytes();
        let e = Cursor::new(&huge).string(|| "s".into()).unwrap_err();
        assert!(matches!(e, GgufError::Truncated { need: u64::MAX, .. }), "{e}");
    }
}
