//! Variant generation by textual substitution.
//!
//! The scheme: a kernel source may contain placeholders `{{NAME}}` (NAME made of ASCII letters,
//! digits and `_`). [`preprocess`] replaces each with the value of the define of that name.
//! Every placeholder must have a define, values must be single lines (so that line numbers in
//! compile errors are those of the file on disk), and nothing else in the source changes.
//! Defines without a placeholder are allowed: a table may pass a define that only some
//! kernels use.
//!
//! Two kinds of define exist:
//! - variant defines, fixed in the variants table (`OP` = `OP_ADD`, tile sizes, …);
//! - the driver define `PARAMS`, the declaration of the params variable, which depends on how
//!   the driver passes params (see [`ParamsBinding`]). Only a custom op's kernel uses it
//!   (`{{PARAMS}} p: Params;`): a built-in kernel declares neither its params struct nor `p`;
//!   both are generated from the Rust struct and put after the kernel and the prelude
//!   ([`crate::catalog::params_wgsl`], [`crate::KernelVariant::wgsl`]), so no placeholder
//!   expands to several lines and the kernel keeps its line numbers.

use crate::GpuError;

/// How a driver hands a kernel its params struct.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParamsBinding {
    /// Push constants (wgpu: immediates): `var<immediate>`. What the Vulkan driver uses;
    /// Vulkan guarantees 128 bytes of them, and every params struct fits.
    Immediate,
    /// A uniform buffer at `@group(0) @binding(binding)`, for devices without immediates.
    Uniform { binding: u32 },
}

impl ParamsBinding {
    /// The WGSL text that goes before `p: XParams;`.
    pub fn declaration(self) -> String {
        match self {
            ParamsBinding::Immediate => "var<immediate>".to_string(),
            ParamsBinding::Uniform { binding } => format!("@group(0) @binding({binding}) var<uniform>"),
        }
    }
}

/// Replaces every `{{NAME}}` in `source` with its define's value (see the module doc).
pub fn preprocess(source: &str, defines: &[(&str, &str)]) -> Result<String, GpuError> {
    for (name, value) in defines {
        if value.contains('\n') || value.contains('\r') {
            return Err(GpuError::MultiLineDefine { name: name.to_string(), value: value.to_string() });
        }
    }
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while let Some(start) = rest.find("{{") {
        let (before, after_open) = rest.split_at(start);
        out.push_str(before);
        let line = line_of(source, source.len() - rest.len() + start);
        let after_open = &after_open[2..];
        let end = after_open.find("}}").ok_or(GpuError::UnterminatedPlaceholder { line })?;
        let name = &after_open[..end];
        let valid_name = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid_name {
            return Err(GpuError::UnterminatedPlaceholder { line });
        }
        let value = defines
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
            .ok_or_else(|| GpuError::MissingDefine { name: name.to_string(), line })?;
        out.push_str(value);
        rest = &after_open[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// 1-based line number of byte offset `at`.
fn line_of(source: &str, at: usize) -> usize {
    source.get(..at).map_or(1, |s| s.matches('\n').count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutes_every_placeholder() {
        let s = preprocess("const OP: u32 = {{OP}};\n{{P}} p: X; {{OP}}", &[("OP", "OP_ADD"), ("P", "v")]);
        assert_eq!(s.unwrap(), "const OP: u32 = OP_ADD;\nv p: X; OP_ADD");
    }

    #[test]
    fn text_without_placeholders_is_unchanged() {
        let src = "fn f() -> u32 { return 1u; } // { } {x}";
        assert_eq!(preprocess(src, &[("UNUSED", "1")]).unwrap(), src);
    }

    #[test]
    fn missing_define_names_it_and_its_line() {
        let e = preprocess("a\nb\nc {{TILE}}", &[("OP", "x")]).unwrap_err();
        assert_eq!(e, GpuError::MissingDefine { name: "TILE".into(), line: 3 });
    }

    #[test]
    fn unterminated_or_malformed_placeholder_is_an_error() {
        assert_eq!(preprocess("x\n{{OP", &[]).unwrap_err(), GpuError::UnterminatedPlaceholder { line: 2 });
        assert_eq!(
            preprocess("{{a b}}", &[("a b", "1")]).unwrap_err(),
            GpuError::UnterminatedPlaceholder { line: 1 }
        );
    }

    #[test]
    fn multi_line_value_is_rejected() {
        let e = preprocess("{{A}}", &[("A", "1\n2")]).unwrap_err();
        assert!(matches!(e, GpuError::MultiLineDefine { .. }));
    }

    #[test]
    fn params_declarations() {
        assert_eq!(ParamsBinding::Immediate.declaration(), "var<immediate>");
        assert_eq!(ParamsBinding::Uniform { binding: 3 }.declaration(), "@group(0) @binding(3) var<uniform>");
    }
}
