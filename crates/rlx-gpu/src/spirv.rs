//! WGSL to SPIR-V with naga (parse → validate → write), the one recipe for every kernel:
//! rlx-vulkan's build script runs it over the variants table, and [`crate::custom`] over a
//! user's kernel when a graph holding it is compiled.

use naga::back::spv;
use naga::valid::{Capabilities, ValidationFlags, Validator};

/// What the kernels may use. Rungs that need more (subgroups, cooperative matrices) add their
/// capability here and are only picked at run time on devices that offer it.
fn capabilities() -> Capabilities {
    Capabilities::IMMEDIATES | Capabilities::SHADER_FLOAT16 | Capabilities::COOPERATIVE_MATRIX
}

fn spv_options() -> spv::Options<'static> {
    let mut flags = spv::WriterFlags::empty();
    if cfg!(debug_assertions) {
        // Names in the module, for RenderDoc and validation-layer messages.
        flags |= spv::WriterFlags::DEBUG;
    }
    spv::Options {
        // SPIR-V 1.3 is core in Vulkan 1.1, the minimum rlx asks for; subgroups need it.
        lang_version: (1, 3),
        flags,
        // Every kernel writes its shared memory before reading it: zeroing would be wasted.
        zero_initialize_workgroup_memory: spv::ZeroInitializeWorkgroupMemoryMode::None,
        // Loops are bounded by params; the injected counters only cost time.
        force_loop_bounding: false,
        ..spv::Options::default()
    }
}

/// The parsed and validated module of `src` (the full text a driver compiles), or a message
/// with `path:line:column`, naga's message and the source excerpt.
pub fn parse(src: &str, path: &str) -> Result<(naga::Module, naga::valid::ModuleInfo), String> {
    let module = naga::front::wgsl::parse_str(src).map_err(|e| {
        let at = e.location(src).map(|l| format!(":{}:{}", l.line_number, l.line_position));
        format!(
            "{path}{}: {}\n{}",
            at.unwrap_or_default(),
            e.message(),
            e.emit_to_string_with_path(src, path)
        )
    })?;
    let info = Validator::new(ValidationFlags::all(), capabilities()).validate(&module).map_err(|e| {
        let at = e.location(src).map(|l| format!(":{}:{}", l.line_number, l.line_position));
        format!(
            "{path}{}: {}\n{}",
            at.unwrap_or_default(),
            error_chain(e.as_inner()),
            e.emit_to_string_with_path(src, path)
        )
    })?;
    Ok((module, info))
}

/// SPIR-V words of a module [`parse`] accepted, entry point [`crate::ENTRY_POINT`].
pub fn write(module: &naga::Module, info: &naga::valid::ModuleInfo, path: &str) -> Result<Vec<u32>, String> {
    let pipeline = spv::PipelineOptions {
        shader_stage: naga::ShaderStage::Compute,
        entry_point: crate::ENTRY_POINT.into(),
    };
    let options = spv_options();
    // naga's SPIR-V writer can panic on inputs its validator accepts (see DESIGN.md on
    // coopStore); turn that into an error naming the kernel.
    std::panic::catch_unwind(|| spv::write_vec(module, info, &options, Some(&pipeline)))
        .map_err(|p| {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
            format!("{path}: naga's SPIR-V writer panicked: {}", msg.unwrap_or_default())
        })?
        .map_err(|e| format!("{path}: SPIR-V output failed: {e}"))
}

/// "outer: cause: root cause", from an error and its sources.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}
