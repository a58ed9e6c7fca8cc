//! Every variant's WGSL parses and validates with naga, in both params bindings, and agrees
//! with the variants table on workgroup size, bindings and params size; every variant carries
//! the prelude exactly once and no kernel redefines what it holds.

use crate::catalog::PRELUDE;
use crate::{variants, Access, KernelVariant, ParamsBinding, ENTRY_POINT};
use naga::valid::{Capabilities, ValidationFlags, Validator};

fn compile(v: &KernelVariant, params: ParamsBinding) -> naga::Module {
    let src = v.wgsl(params).unwrap_or_else(|e| panic!("{}: {e}", v.name));
    assert!(!src.contains("{{"), "{}: unfilled placeholder", v.name);
    let module = naga::front::wgsl::parse_str(&src)
        .unwrap_or_else(|e| panic!("{} ({}):\n{}", v.name, v.file, e.emit_to_string_with_path(&src, v.file)));
    // The tensor-core rungs need f16 and cooperative matrices; drivers give them only to
    // devices that have both.
    let caps = Capabilities::SHADER_FLOAT16 | Capabilities::COOPERATIVE_MATRIX;
    let caps = match params {
        ParamsBinding::Immediate => caps | Capabilities::IMMEDIATES,
        ParamsBinding::Uniform { .. } => caps,
    };
    Validator::new(ValidationFlags::all(), caps)
        .validate(&module)
        .unwrap_or_else(|e| panic!("{} ({}):\n{}", v.name, v.file, e.emit_to_string_with_path(&src, v.file)));
    module
}

#[test]
fn every_variant_validates_with_immediates_and_with_a_uniform() {
    for v in variants() {
        compile(&v, ParamsBinding::Immediate);
        compile(&v, ParamsBinding::Uniform { binding: v.uniform_params_binding() });
    }
}

#[test]
fn table_agrees_with_the_wgsl() {
    for v in variants() {
        let module = compile(&v, ParamsBinding::Immediate);
        let ep = module.entry_points.iter().find(|e| e.name == ENTRY_POINT);
        let ep = ep.unwrap_or_else(|| panic!("{}: no entry point {ENTRY_POINT}", v.name));
        assert_eq!(ep.stage, naga::ShaderStage::Compute, "{}", v.name);
        assert_eq!(ep.workgroup_size, v.workgroup_size, "{}: workgroup size", v.name);

        let mut storage: Vec<(u32, Access)> = Vec::new();
        let mut params_size = None;
        for (_, var) in module.global_variables.iter() {
            match var.space {
                naga::AddressSpace::Storage { access } => {
                    let binding = var.binding.as_ref().unwrap();
                    assert_eq!(binding.group, 0, "{}", v.name);
                    let rw = access.contains(naga::StorageAccess::STORE);
                    storage.push((binding.binding, if rw { Access::ReadWrite } else { Access::Read }));
                }
                naga::AddressSpace::Immediate => {
                    params_size = Some(module.types[var.ty].inner.size(module.to_ctx()));
                }
                _ => {}
            }
        }
        storage.sort_by_key(|(b, _)| *b);
        let expected: Vec<(u32, Access)> =
            v.bindings.iter().enumerate().map(|(i, a)| (i as u32, *a)).collect();
        assert_eq!(storage, expected, "{}: storage bindings", v.name);
        assert_eq!(params_size, Some(v.params_size), "{}: params size", v.name);
    }
}

#[test]
fn a_wgsl_error_is_reported_with_its_line() {
    let bad = "fn f() -> u32 {\n  let x = 1u;\n  return x +;\n}\n";
    let err = naga::front::wgsl::parse_str(bad)
        .err()
        .map(|e| (e.location(bad).map(|l| l.line_number), e.emit_to_string_with_path(bad, "bad.wgsl")));
    let (line, text) = err.expect("a syntax error must not parse");
    assert_eq!(line, Some(3));
    assert!(text.contains("bad.wgsl:3"), "{text}");
}

/// Names of the functions a WGSL text declares at module scope (`fn name(` at a line start).
fn declared_fns(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|l| l.strip_prefix("fn "))
        .filter_map(|l| l.split('(').next())
        .map(str::trim)
        .collect()
}

#[test]
fn every_variant_has_the_prelude_once() {
    let prelude_fns = declared_fns(PRELUDE);
    assert!(prelude_fns.contains(&"is_nan") && prelude_fns.contains(&"gelu_erf"), "{prelude_fns:?}");
    for v in variants() {
        let src = v.wgsl(ParamsBinding::Immediate).unwrap();
        assert_eq!(src.matches(PRELUDE).count(), 1, "{}", v.name);
        for f in &prelude_fns {
            let decl = format!("\nfn {f}(");
            assert_eq!(src.matches(&decl).count(), 1, "{}: fn {f} declared more than once", v.name);
        }
    }
}

#[test]
fn no_kernel_file_redefines_a_prelude_function() {
    let prelude_fns = declared_fns(PRELUDE);
    for v in variants() {
        for f in declared_fns(v.source) {
            assert!(!prelude_fns.contains(&f), "{} declares the prelude's fn {f}", v.file);
        }
    }
}

#[test]
fn the_prelude_has_no_placeholders_or_directives() {
    assert!(!PRELUDE.contains("{{"));
    for directive in ["enable ", "requires ", "diagnostic("] {
        assert!(!PRELUDE.lines().any(|l| l.starts_with(directive)), "{directive}");
    }
}

/// Every workgroup variable of a cooperative-matrix kernel is a multiple of 16 bytes. On the
/// H100 (driver 580) a 4-byte flag beside the tensor-core code of the coop attention kernel
/// (`attention_coop.wgsl`) made its products wrong, and the same flag as a 16-byte array was
/// exact (parity on the GPU, 2026-11-27). Nothing on lavapipe can see this, so the rule is
/// held here.
#[test]
fn cooperative_matrix_kernels_keep_workgroup_variables_in_16_byte_units() {
    let mut checked = 0;
    for v in variants().into_iter().filter(|v| v.key.needs_cooperative_matrix()) {
        let module = compile(&v, ParamsBinding::Immediate);
        for (_, var) in module.global_variables.iter() {
            if var.space == naga::AddressSpace::WorkGroup {
                let size = module.types[var.ty].inner.size(module.to_ctx());
                let name = var.name.as_deref().unwrap_or("?");
                assert_eq!(size % 16, 0, "{}: workgroup variable {name} is {size} bytes", v.name);
                checked += 1;
            }
        }
    }
    assert!(checked > 10, "only {checked} workgroup variables checked");
}

/// `CoopHead::shared_bytes` (what the host checks against the device's limit) is the sum of the
/// coop attention kernel's own workgroup variables (the prelude's, unused there, left out).
#[test]
fn coop_attention_shared_bytes_match_the_kernel() {
    use crate::catalog::attention::backward::bwd_coop_shared_bytes;
    use crate::catalog::attention::{AttentionKernel, CoopHead, CoopLoads, KvStore};
    let bytes = |k: AttentionKernel| {
        let module = compile(&crate::variant(crate::KernelKey::Attention(k)), ParamsBinding::Immediate);
        module
            .global_variables
            .iter()
            .filter(|(_, g)| g.space == naga::AddressSpace::WorkGroup)
            .filter(|(_, g)| !g.name.as_deref().is_some_and(|n| n.starts_with("prelude_")))
            .map(|(_, g)| module.types[g.ty].inner.size(module.to_ctx()))
            .sum::<u32>()
    };
    for head in CoopHead::ALL {
        for loads in CoopLoads::ALL {
            for kv in KvStore::ALL {
                let key = AttentionKernel::Coop(head, loads, kv);
                assert_eq!(bytes(key), head.shared_bytes(), "{head:?} {loads:?} {kv:?}");
            }
        }
        let bwd = AttentionKernel::BackwardCoop(head, rlx_ir::AttnGradPart::Q);
        assert_eq!(bytes(bwd), bwd_coop_shared_bytes(head), "{head:?}");
    }
}
