//! User-defined kernels ([`rlx_ir::CustomOp`]): validated with naga, compiled to SPIR-V once,
//! and entered in a process-wide table so that a [`KernelKey::Custom`](crate::KernelKey::Custom) names them like any
//! built-in variant.
//!
//! Why a process-wide table (the rest of rlx keeps state per device): a `KernelKey` is `Copy`
//! and a `KernelVariant` holds `'static` text, so that drivers cache pipelines by key and label
//! them without owning strings. A custom kernel's text is therefore leaked once into `'static`
//! memory when it is first entered; entering the same (name, source, operand count) again
//! returns the existing key, so the memory is bounded by the distinct kernels a process uses,
//! as the built-in table is bounded by its variants. Pipelines stay per device, in the drivers.

use crate::catalog::Access;
use crate::{spirv, KernelVariant, ParamsBinding, ENTRY_POINT};
use rlx_ir::CustomOp;
use std::sync::Mutex;

/// A custom kernel's index in the table (a [`crate::KernelKey::Custom`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CustomKernel(pub u32);

struct Entry {
    op_name: String,
    source: String,
    inputs: usize,
    variant: KernelVariant,
    spirv: Vec<u32>,
}

static TABLE: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

fn table() -> std::sync::MutexGuard<'static, Vec<Entry>> {
    TABLE.lock().unwrap_or_else(|p| p.into_inner())
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// The key of `op`'s kernel applied to `inputs` operands, entering it in the table first
/// (validated and compiled) if it is new. Errors name the op and say what is wrong: no WGSL
/// kernel, a naga parse or validation error (with line and column), no `main`, a workgroup size
/// other than the declared one, or bindings other than `inputs` read-only storage buffers
/// followed by one read-write output.
pub fn intern(op: &CustomOp, inputs: usize) -> Result<CustomKernel, String> {
    let name = op.name();
    let w = op.wgsl().ok_or_else(|| {
        format!("custom op {name} has no WGSL kernel, so GPUs cannot run it; give it one with .wgsl(..)")
    })?;
    intern_source(
        &format!("custom_{name}"),
        &format!("custom op {name}"),
        &w.source,
        w.workgroup_size,
        inputs,
        w.params_size,
    )
}

/// The key of the kernel `source` (WGSL with a `{{PARAMS}}` placeholder for its params of
/// `params_size` bytes, `main` of `workgroup_size`, `inputs` read-only storage bindings and
/// the output after them), entering it in the table (validated and compiled to SPIR-V) if it
/// is new. Its variant is named `{stem}_{index}`; errors start with `what`. Custom ops and
/// rlx-gpu's generated kernels (the fused elementwise programs) both come through here.
pub(crate) fn intern_source(
    stem: &str,
    what: &str,
    source: &str,
    workgroup_size: [u32; 3],
    inputs: usize,
    params_size: u32,
) -> Result<CustomKernel, String> {
    let mut t = table();
    if let Some(i) = t.iter().position(|e| e.op_name == stem && e.source == source && e.inputs == inputs) {
        return Ok(CustomKernel(i as u32));
    }
    let index = t.len();
    let mut bindings = vec![Access::Read; inputs];
    bindings.push(Access::ReadWrite);
    let variant = KernelVariant {
        key: crate::KernelKey::Custom(CustomKernel(index as u32)),
        name: format!("{stem}_{index}").into(),
        file: leak(what.to_string()),
        source: leak(source.to_string()),
        defines: Vec::new(),
        workgroup_size,
        bindings: Box::leak(bindings.into_boxed_slice()),
        params_size,
        params: None,
    };
    let spirv = compile(&variant, inputs)?;
    t.push(Entry { op_name: stem.to_string(), source: source.to_string(), inputs, variant, spirv });
    Ok(CustomKernel(index as u32))
}

/// Checks `op`'s kernel for `inputs` operands as [`intern`] does, without a device: for a unit
/// test or a build script of the crate that defines the op.
pub fn check(op: &CustomOp, inputs: usize) -> Result<(), String> {
    intern(op, inputs).map(|_| ())
}

/// The variant of an entered kernel. An index the table does not hold (never made by
/// [`intern`]) gives a variant without source, which every driver refuses to build.
pub(crate) fn variant(k: CustomKernel) -> KernelVariant {
    match table().get(k.0 as usize) {
        Some(e) => e.variant.clone(),
        None => KernelVariant {
            key: crate::KernelKey::Custom(k),
            name: "custom_unknown".into(),
            file: "custom op (not in the table)",
            source: "",
            defines: Vec::new(),
            workgroup_size: [1, 1, 1],
            bindings: &[],
            params_size: 16,
            params: None,
        },
    }
}

/// The SPIR-V of an entered kernel (params as push constants), for the Vulkan driver.
pub fn spirv_words(k: CustomKernel) -> Option<Vec<u32>> {
    table().get(k.0 as usize).map(|e| e.spirv.clone())
}

fn compile(v: &KernelVariant, inputs: usize) -> Result<Vec<u32>, String> {
    let text = v.wgsl(ParamsBinding::Immediate).map_err(|e| format!("{}: {e}", v.file))?;
    let (module, info) = spirv::parse(&text, v.file)?;
    let entry = module
        .entry_points
        .iter()
        .find(|e| e.name == ENTRY_POINT && e.stage == naga::ShaderStage::Compute)
        .ok_or_else(|| format!("{}: no compute entry point `{ENTRY_POINT}`", v.file))?;
    if entry.workgroup_size != v.workgroup_size {
        return Err(format!(
            "{}: `main` has @workgroup_size{:?} but the op declares {:?}",
            v.file, entry.workgroup_size, v.workgroup_size
        ));
    }
    let mut found: Vec<(u32, Access)> = Vec::new();
    for (_, g) in module.global_variables.iter() {
        let (Some(b), naga::AddressSpace::Storage { access }) = (&g.binding, g.space) else { continue };
        let a = if access.contains(naga::StorageAccess::STORE) { Access::ReadWrite } else { Access::Read };
        found.push((b.binding + 1000 * b.group, a));
    }
    found.sort_by_key(|(b, _)| *b);
    let want: Vec<(u32, Access)> = v.bindings.iter().enumerate().map(|(i, a)| (i as u32, *a)).collect();
    if found != want {
        return Err(format!(
            "{}: storage bindings {found:?} (binding + 1000·group, access) but {inputs} operand(s) need \
             @group(0) @binding(0..{inputs}) var<storage, read> and @binding({inputs}) \
             var<storage, read_write> for the output",
            v.file
        ));
    }
    spirv::write(&module, &info, v.file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rlx_ir::{CustomOp, Tensor, TensorType};
    use std::sync::Arc;

    const SCALE: &str = "struct Params { n: u32, factor: f32, _a: u32, _b: u32 }
{{PARAMS}} p: Params;
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < p.n) { y[gid.x] = x[gid.x] * p.factor; }
}
";

    fn op(name: &str, source: &str, wg: [u32; 3]) -> Arc<CustomOp> {
        CustomOp::builder(name)
            .shape(|i: &[&TensorType]| Ok(i[0].clone()))
            .cpu(|i: &[&Tensor], _: &TensorType| Ok(i[0].clone()))
            .wgsl(source, wg, 16, |_: &[&TensorType], _: &TensorType| Ok((vec![], [1, 1, 1])))
            .build()
            .unwrap()
    }

    #[test]
    fn a_valid_kernel_is_entered_once_and_compiles_to_spirv() {
        let a = intern(&op("scale_test", SCALE, [64, 1, 1]), 1).unwrap();
        let b = intern(&op("scale_test", SCALE, [64, 1, 1]), 1).unwrap();
        assert_eq!(a, b);
        let words = spirv_words(a).unwrap();
        assert_eq!(words[0], 0x0723_0203);
        let v = variant(a);
        assert!(v.name.starts_with("custom_scale_test_") && v.bindings == [Access::Read, Access::ReadWrite]);
    }

    #[test]
    fn bad_kernels_are_refused_with_the_op_and_the_reason() {
        let e = intern(&op("typo", &SCALE.replace("* p.factor", "* q.factor"), [64, 1, 1]), 1).unwrap_err();
        assert!(e.contains("custom op typo") && e.contains("q"), "{e}");
        let e = intern(&op("wg", SCALE, [32, 1, 1]), 1).unwrap_err();
        assert!(e.contains("workgroup_size") && e.contains("[32, 1, 1]"), "{e}");
        let e = intern(&op("arity", SCALE, [64, 1, 1]), 2).unwrap_err();
        assert!(e.contains("2 operand(s)"), "{e}");
        let e = CustomOp::builder("cpu_only")
            .shape(|i: &[&TensorType]| Ok(i[0].clone()))
            .cpu(|i: &[&Tensor], _: &TensorType| Ok(i[0].clone()))
            .build()
            .map(|o| intern(&o, 1).unwrap_err())
            .unwrap();
        assert!(e.contains("no WGSL kernel"), "{e}");
    }
}
