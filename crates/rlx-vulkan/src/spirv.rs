//! The SPIR-V that build.rs compiled from every rlx-gpu kernel variant, embedded in the binary.

use rlx_gpu::KernelKey;
use std::path::Path;

include!(concat!(env!("OUT_DIR"), "/kernels.rs"));

/// SPIR-V's magic number, the first word of every module.
const MAGIC: u32 = 0x0723_0203;

/// The embedded module of the variant named `name`.
fn bytes(name: &str) -> Option<&'static [u8]> {
    let i = SPIRV.binary_search_by(|(n, _)| n.cmp(&name)).ok()?;
    SPIRV.get(i).map(|(_, b)| *b)
}

/// The SPIR-V module of `key`'s variant, as bytes (little-endian words).
pub fn spirv(key: KernelKey) -> Option<&'static [u8]> {
    bytes(&rlx_gpu::variant(key).name)
}

/// Kernel development: with `RLX_KERNEL_DIR=DIR`, a variant whose `DIR/<name>.wgsl` exists is
/// compiled from that file (the full text a driver compiles, as [`rlx_gpu::KernelVariant::wgsl`]
/// gives it) instead of the embedded module, so kernel variants can be timed on a GPU host with
/// one build; with `RLX_KERNEL_DUMP=DIR`, the text of every variant a context builds is written
/// there first (the starting point of such a file). `None` when neither applies; a file that
/// does not compile is an error naming it.
pub(crate) fn development_words(name: &str, key: KernelKey) -> Option<Result<Vec<u32>, String>> {
    if let Some(dir) = std::env::var_os("RLX_KERNEL_DUMP") {
        if let Ok(text) = rlx_gpu::variant(key).wgsl(rlx_gpu::ParamsBinding::Immediate) {
            // Best effort: a dump that cannot be written changes nothing about the run.
            let _ = std::fs::create_dir_all(&dir);
            let _ = std::fs::write(Path::new(&dir).join(format!("{name}.wgsl")), text);
        }
    }
    words_from_dir(Path::new(&std::env::var_os("RLX_KERNEL_DIR")?), name)
}

/// The module compiled from `dir/<name>.wgsl`: `None` when there is no such file.
fn words_from_dir(dir: &Path, name: &str) -> Option<Result<Vec<u32>, String>> {
    let path = dir.join(format!("{name}.wgsl"));
    let text = std::fs::read_to_string(&path).ok()?;
    let shown = path.display().to_string();
    Some(
        rlx_gpu::spirv::parse(&text, &shown)
            .and_then(|(module, info)| rlx_gpu::spirv::write(&module, &info, &shown)),
    )
}

/// The module of the variant named `name` as words, checked for the SPIR-V magic number.
pub(crate) fn words(name: &str) -> Option<Vec<u32>> {
    let b = bytes(name)?;
    if b.len() % 4 != 0 {
        return None;
    }
    let words: Vec<u32> = b.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    (words.first() == Some(&MAGIC)).then_some(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_is_embedded_once() {
        let variants = rlx_gpu::variants();
        assert_eq!(SPIRV.len(), variants.len());
        for v in &variants {
            let w = words(&v.name).unwrap_or_else(|| panic!("{} missing or malformed", v.name));
            // Header: magic, version 1.3 (0x00010300), generator, bound, schema.
            assert_eq!(w[1], 0x0001_0300, "{}", v.name);
            assert!(w.len() > 100, "{}: only {} words", v.name, w.len());
            assert_eq!(spirv(v.key).map(<[u8]>::len), Some(w.len() * 4));
        }
        assert!(words("no_such_kernel").is_none());
    }

    /// RLX_KERNEL_DIR's files: a variant's own text compiles to a module, a file that does not
    /// compile is an error naming it, and a kernel without a file keeps the embedded module.
    #[test]
    fn development_files_replace_embedded_modules() {
        let dir = std::env::temp_dir().join(format!("rlx-kernel-dir-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let key = KernelKey::binary_f32(rlx_ir::BinaryOp::Add);
        let name = rlx_gpu::variant(key).name.to_string();
        assert!(words_from_dir(&dir, &name).is_none());
        let text = rlx_gpu::variant(key).wgsl(rlx_gpu::ParamsBinding::Immediate).unwrap();
        std::fs::write(dir.join(format!("{name}.wgsl")), &text).unwrap();
        let words = words_from_dir(&dir, &name).unwrap().unwrap();
        assert_eq!(words.first(), Some(&MAGIC));
        std::fs::write(dir.join(format!("{name}.wgsl")), text.replace("fn main(", "fn main(oops")).unwrap();
        let err = words_from_dir(&dir, &name).unwrap().unwrap_err();
        assert!(err.contains(&format!("{name}.wgsl")), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn variants_differ() {
        let add = spirv(KernelKey::binary_f32(rlx_ir::BinaryOp::Add)).unwrap();
        let sub = spirv(KernelKey::binary_f32(rlx_ir::BinaryOp::Sub)).unwrap();
        assert_ne!(add, sub);
    }
}
