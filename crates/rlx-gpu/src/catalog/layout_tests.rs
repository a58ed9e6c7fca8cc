//! The params structs checked member by member: the WGSL that [`super::params_wgsl`] generates
//! from each `#[repr(C)]` struct must have, in naga's reflection of every variant that declares
//! it, the members (names, WGSL types) the generator wrote at the byte offsets of the Rust
//! fields (`offset_of!`), and the Rust struct's size; and no kernel may declare a params struct
//! of its own.

use super::params_wgsl::Member;
use crate::{variants, ParamsBinding};
use std::collections::BTreeSet;

/// naga's type `ty` as WGSL text, for the types params members have.
fn wgsl_type(module: &naga::Module, ty: naga::Handle<naga::Type>) -> String {
    let t = &module.types[ty];
    match &t.inner {
        naga::TypeInner::Scalar(s) => scalar(*s),
        naga::TypeInner::Vector { size, scalar: s } => format!("vec{}<{}>", *size as u32, scalar(*s)),
        naga::TypeInner::Array { base, size: naga::ArraySize::Constant(n), .. } => {
            format!("array<{}, {n}>", wgsl_type(module, *base))
        }
        other => format!("{other:?}"),
    }
}

fn scalar(s: naga::Scalar) -> String {
    let kind = match s.kind {
        naga::ScalarKind::Sint => "i",
        naga::ScalarKind::Uint => "u",
        naga::ScalarKind::Float => "f",
        other => return format!("{other:?}"),
    };
    format!("{kind}{}", s.width * 8)
}

#[test]
fn params_structs_match_the_wgsl_member_by_member() {
    let mut seen = BTreeSet::new();
    for v in variants() {
        let params = v.params.unwrap_or_else(|| panic!("{}: a built-in variant has a params struct", v.name));
        let text = v.wgsl(ParamsBinding::Immediate).unwrap();
        assert_eq!(text.matches(&format!("struct {} {{", params.name)).count(), 1, "{}", v.name);
        if !seen.insert(params.name) {
            continue;
        }
        let module = naga::front::wgsl::parse_str(&text).unwrap_or_else(|e| panic!("{}: {e}", v.name));
        let mut structs =
            module.types.iter().filter(|(_, t)| t.name.as_deref().is_some_and(|n| n.ends_with("Params")));
        let (_, t) = structs.next().unwrap_or_else(|| panic!("{}: no params struct", v.name));
        assert!(structs.next().is_none(), "{}: a kernel declares a params struct of its own", v.file);
        let naga::TypeInner::Struct { members, span } = &t.inner else { panic!("{}: not a struct", v.name) };
        assert_eq!(t.name.as_deref(), Some(params.name));
        assert_eq!(*span, params.size, "{}: size", params.name);
        let got: Vec<Member> = members
            .iter()
            .map(|m| Member {
                name: m.name.clone().unwrap_or_default(),
                ty: wgsl_type(&module, m.ty),
                offset: m.offset,
            })
            .collect();
        assert_eq!(got, params.members(), "{}", params.name);
    }
    assert_eq!(seen.len(), 27, "every params struct is some variant's: {seen:?}");
}
