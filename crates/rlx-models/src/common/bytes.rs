//! The bytes of a weight file: memory-mapped from disk on native, or owned (fetched by the
//! caller: the web, where there is no file system and no mmap).

use crate::error::{ModelError, Result};
use std::path::Path;

/// A weight file's bytes, mapped or owned.
pub(crate) enum FileBytes {
    #[cfg(not(target_arch = "wasm32"))]
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl FileBytes {
    /// The bytes of `path`: a read-only mapping on native. The web build has no mmap: it reads
    /// the file into memory (which fails there with an I/O error, since a browser has no file
    /// system; load from bytes instead).
    pub(crate) fn open(path: &Path) -> Result<FileBytes> {
        #[cfg(not(target_arch = "wasm32"))]
        {
            let file = std::fs::File::open(path).map_err(|e| ModelError::io(path, e))?;
            if file.metadata().map_err(|e| ModelError::io(path, e))?.len() == 0 {
                // An empty file cannot be mapped; the parsers say what is missing instead.
                return Ok(FileBytes::Owned(Vec::new()));
            }
            // SAFETY: the mapping is read-only; model files are not expected to change while
            // loaded (as with every mmap-based weight loader). Every access is bounds-checked
            // against the length mapped here, and every tensor is copied out before use.
            let mmap = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| ModelError::io(path, e))?;
            Ok(FileBytes::Mapped(mmap))
        }
        #[cfg(target_arch = "wasm32")]
        {
            std::fs::read(path).map(FileBytes::Owned).map_err(|e| ModelError::io(path, e))
        }
    }
}

impl std::ops::Deref for FileBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            #[cfg(not(target_arch = "wasm32"))]
            FileBytes::Mapped(m) => m,
            FileBytes::Owned(v) => v,
        }
    }
}
