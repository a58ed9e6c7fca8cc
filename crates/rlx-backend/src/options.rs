//! What a compile asks of a backend beyond the graph: the numeric precision and, for tests and
//! benchmarks, a forced matmul kernel. rlx-runtime's `CompileOptions` carries these; backends
//! receive them as [`KernelOptions`].

use std::fmt;
use std::str::FromStr;

/// For an enum spelled on the command line: `ALL` (every variant, in order), `name()` (the CLI
/// spelling), `Display` as that name and `FromStr` from it in any letter case, failing with
/// "unknown <what> "<input>": expected <list>".
macro_rules! spellings {
    ($Enum:ident, $what:literal, $expected:literal: $($variant:ident => $name:literal),+ $(,)?) => {
        impl $Enum {
            pub const ALL: [$Enum; [$($name),+].len()] = [$($Enum::$variant),+];

            /// The CLI spelling.
            pub fn name(self) -> &'static str {
                match self {
                    $($Enum::$variant => $name,)+
                }
            }
        }

        impl fmt::Display for $Enum {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl FromStr for $Enum {
            type Err = String;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $Enum::ALL
                    .into_iter()
                    .find(|v| v.name().eq_ignore_ascii_case(s))
                    .ok_or_else(|| format!(concat!("unknown ", $what, " {:?}: expected ", $expected), s))
            }
        }
    };
}

/// How much a backend may round inside its kernels. The CPU reference always computes in f32
/// (with f64 accumulation where it matters) whatever this says: it is what the others are
/// measured against.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Precision {
    /// f32 math everywhere: each op within 1e-5 relative of the CPU.
    #[default]
    F32,
    /// f32 storage, but matmul operands are rounded to f16 inside the kernels so that tensor
    /// cores (cooperative matrices) can run them; accumulation stays f32. For f32 models that
    /// want tensor-core speed. A device without tensor cores runs its f32 kernels, which are
    /// more precise than this mode promises. Matmul within 2e-3 relative.
    Mixed,
    /// f16 storage of weights (models load them as f16; graphs built with f16 params keep
    /// them), f16 tensor-core operands, f32 accumulation and f32 statistics in norms and
    /// softmax. Model outputs within cosine 0.9999 of f32.
    F16,
}

impl Precision {
    /// Whether matmul operands may be rounded to f16 (so tensor-core kernels are allowed).
    pub fn f16_operands(self) -> bool {
        !matches!(self, Precision::F32)
    }
}

spellings!(Precision, "precision", "f32, mixed or f16": F32 => "f32", Mixed => "mixed", F16 => "f16");

/// A GPU matmul kernel of the ladder, for forcing one (tests, benchmarks). Without a forced
/// kernel a backend picks per device and shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatmulKernel {
    /// The portable 64×64 shared-memory tile (f32). Every GPU has it.
    Tiled64,
    /// The 128×128 register tile (f32), for devices with 17 KiB of workgroup memory.
    Reg128,
    /// Cooperative matrices (tensor cores): f16 operands, f32 accumulation. Needs a device
    /// with f16 16×16×16 cooperative matrices and a precision that allows f16 operands.
    Coop,
}

spellings!(MatmulKernel, "matmul kernel", "tiled64, reg128 or coop":
    Tiled64 => "tiled64", Reg128 => "reg128", Coop => "coop");

/// What [`crate::Backend::compile`] is asked for besides the graph.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct KernelOptions {
    pub precision: Precision,
    /// Every matmul runs this kernel; a compile fails with `Unsupported` (naming what is
    /// missing) where the device or the precision does not allow it. `None`: the backend
    /// chooses. Backends without a matmul ladder (the CPU) ignore it. Attention's two products
    /// follow it: `Coop` runs attention on tensor cores wherever its head dims fit, the f32
    /// kernels keep attention in f32.
    pub matmul: Option<MatmulKernel>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        for p in Precision::ALL {
            assert_eq!(p.name().parse::<Precision>(), Ok(p));
        }
        for k in MatmulKernel::ALL {
            assert_eq!(k.to_string().to_uppercase().parse::<MatmulKernel>(), Ok(k));
        }
        assert!("f64".parse::<Precision>().unwrap_err().contains("f32, mixed or f16"));
        assert!("fast".parse::<MatmulKernel>().unwrap_err().contains("coop"));
        assert_eq!(KernelOptions::default().precision, Precision::F32);
        assert!(!Precision::F32.f16_operands() && Precision::Mixed.f16_operands());
    }
}
