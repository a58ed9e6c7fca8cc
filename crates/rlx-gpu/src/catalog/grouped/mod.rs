//! Kernel family "grouped": the experts of a mixture-of-experts layer (`GroupedMatMul`, and
//! `QuantGroupedMatMul` on block-quantized stacks), each slot's expert read from the ids on the
//! device.
//!
//! - [`GroupedKernel::Vec`]: `matmul_grouped_vec.wgsl`, one workgroup per (slot, block of
//!   [`GROUPED_COLS`] output rows): the decode path.
//! - [`GroupedKernel::Tiled`]: `matmul_grouped_tiled.wgsl`, expert-major: one workgroup per
//!   (expert, block of [`GROUPED_TILE`] output rows) gathers the slots that chose its expert
//!   and computes them as 64 × 64 tiles, so each weight tile is read once per 64 slots: the
//!   prefill path, from [`GROUPED_TILED_MIN_SLOTS`] slots on.
//!
//! Both read f32 weights or f16 weights as stored (`f16_w`).
//!
//! - [`GroupedKernel::QuantVec`], [`GroupedKernel::QuantTiled`]: the same two on a packed U8
//!   stack of one [`QuantType`] (`matmul_grouped_quant_vec.wgsl`,
//!   `matmul_grouped_quant_tiled.wgsl`), one variant per format: the kernel file,
//!   `quant_common.wgsl`, `quant_k_scales.wgsl`, `quant_minifloat.wgsl` and the format's decoder
//!   are concatenated at build time, as the quant family's are. Only the chosen experts' rows
//!   are read, decoded in registers.
//!
//! All take [`GroupedParams`]; bindings x, w, ids (read), out (read_write).

use super::matmul::{B_F16, B_F32};
use super::quant::{index, Sources};
use super::{defines, name, params_of, Access, Defines, Spec};
use crate::grid;
use crate::GpuError;
use bytemuck::{Pod, Zeroable};
use rlx_ir::QuantType;

/// A kernel of the grouped family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GroupedKernel {
    /// The matrix-vector kernel; `f16_w`: the weights are f16 as stored.
    Vec { f16_w: bool },
    /// The expert-major tiled kernel.
    Tiled { f16_w: bool },
    /// The matrix-vector kernel on a stack of packed blocks.
    QuantVec(QuantType),
    /// The expert-major tiled kernel on a stack of packed blocks.
    QuantTiled(QuantType),
}

impl GroupedKernel {
    /// Every key of this family, in a fixed order.
    pub fn all() -> Vec<GroupedKernel> {
        let float = [false, true]
            .into_iter()
            .flat_map(|f16_w| [GroupedKernel::Vec { f16_w }, GroupedKernel::Tiled { f16_w }]);
        let quant = QuantType::ALL
            .into_iter()
            .flat_map(|q| [GroupedKernel::QuantVec(q), GroupedKernel::QuantTiled(q)]);
        float.chain(quant).collect()
    }

    /// The kernel for `slots` (tokens × choices): matrix-vector for few, expert-major tiles for
    /// many.
    pub fn choose(slots: usize, f16_w: bool) -> GroupedKernel {
        if slots >= GROUPED_TILED_MIN_SLOTS {
            GroupedKernel::Tiled { f16_w }
        } else {
            GroupedKernel::Vec { f16_w }
        }
    }

    /// [`GroupedKernel::choose`] for a stack of `quant` blocks.
    pub fn choose_quant(slots: usize, quant: QuantType) -> GroupedKernel {
        if slots >= GROUPED_TILED_MIN_SLOTS {
            GroupedKernel::QuantTiled(quant)
        } else {
            GroupedKernel::QuantVec(quant)
        }
    }
}

/// Slots (tokens × choices) from which the expert-major kernel runs.
pub const GROUPED_TILED_MIN_SLOTS: usize = 32;
/// Output rows (and slots) of one expert-major tile.
pub const GROUPED_TILE: u32 = 64;

/// Output rows one matrix-vector workgroup computes (COLS in the kernel).
pub const GROUPED_COLS: u32 = 4;

/// Params of the grouped kernels, byte-identical to `GroupedParams` in their WGSL.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct GroupedParams {
    /// Tokens T.
    pub t: u32,
    /// Rows of x per token: 1 (shared by the token's choices) or `top`.
    pub s: u32,
    /// Choices per token k.
    pub top: u32,
    /// Output rows per expert N.
    pub n: u32,
    /// Contraction length K.
    pub k: u32,
    /// Experts E.
    pub e: u32,
    /// Bytes per weight row of a packed stack; 0 for float weights.
    pub row_bytes: u32,
    /// The last u32 word holding bytes of a packed stack (`quant_common.wgsl`'s bound on its
    /// reads); 0 for float weights.
    pub last_word: u32,
}

impl GroupedParams {
    /// Params for x [t, s, k], w [e, n, k], ids [t, top]. Errors when an index the kernels
    /// compute would pass u32.
    pub fn new(
        kernel: &'static str,
        x: [usize; 3],
        w: [usize; 3],
        top: usize,
    ) -> Result<GroupedParams, GpuError> {
        GroupedParams::checked(kernel, x, w, top, true)
    }

    /// [`GroupedParams::new`]; the weight's element count is bounded only when the kernels
    /// index it by element (`by_element`: float weights; packed stacks go by byte).
    fn checked(
        kernel: &'static str,
        x: [usize; 3],
        w: [usize; 3],
        top: usize,
        by_element: bool,
    ) -> Result<GroupedParams, GpuError> {
        let [t, s, k] = x;
        let [e, n, wk] = w;
        if wk != k || (s != 1 && s != top) {
            return Err(GpuError::Shape {
                kernel,
                shapes: grid::shapes_text(&[&x, &w, &[t, top]]),
                reason: "x [T, S, K] and w [E, N, K] must share K, and S must be 1 or k".into(),
            });
        }
        let u = |what: &'static str, v: u64| grid::fits_u32(kernel, what, v);
        let (t64, k64, n64) = (t as u64, k as u64, n as u64);
        if by_element {
            u("weight elements", (e as u64).saturating_mul(n64).saturating_mul(k64))?;
        }
        u("x elements", t64.saturating_mul(s as u64).saturating_mul(k64))?;
        u("output elements", t64.saturating_mul(top as u64).saturating_mul(n64))?;
        Ok(GroupedParams {
            t: u("tokens", t64)?,
            s: u("slots", s as u64)?,
            top: u("choices per token", top as u64)?,
            n: u("output rows", n64)?,
            k: u("K", k64)?,
            e: u("experts", e as u64)?,
            row_bytes: 0,
            last_word: 0,
        })
    }

    /// Params for x [t, s, k] against a packed stack w U8 [e, n, row_bytes] of `quant` blocks,
    /// ids [t, top]. Errors when k is not whole blocks of `row_bytes`, the stack is empty (the
    /// lowering fills the output instead) or an index the kernels compute would pass u32.
    pub fn quant(
        kernel: &'static str,
        quant: QuantType,
        x: [usize; 3],
        w: [usize; 3],
        top: usize,
    ) -> Result<GroupedParams, GpuError> {
        let [t, _, k] = x;
        let [e, n, row_bytes] = w;
        let shape_err = |reason: String| GpuError::Shape {
            kernel,
            shapes: grid::shapes_text(&[&x, &w, &[t, top]]),
            reason,
        };
        match quant.byte_len(k) {
            Ok(need) if need == row_bytes => {}
            Ok(need) => {
                return Err(shape_err(format!(
                    "K = {k} of {quant} takes {need} bytes a row, not {row_bytes}"
                )))
            }
            Err(err) => return Err(shape_err(err.to_string())),
        }
        let bytes = (e as u64).saturating_mul(n as u64).saturating_mul(row_bytes as u64);
        if bytes == 0 {
            return Err(shape_err("the quantized stack is empty; there is nothing to decode".into()));
        }
        // The stack is indexed by byte offset, x and out by element.
        grid::fits_u32(kernel, "weight bytes", bytes)?;
        let mut p = GroupedParams::checked(kernel, x, [e, n, k], top, false)?;
        p.row_bytes = row_bytes as u32;
        p.last_word = ((bytes - 1) / 4) as u32;
        Ok(p)
    }

    /// Workgroups of the expert-major kernel: x over the experts, y over ⌈N / 64⌉ row blocks.
    pub fn tiled_grid(&self) -> Result<[u32; 3], GpuError> {
        let max = grid::MAX_GROUPS_PER_DIM;
        for (what, v) in [("experts", self.e), ("output row blocks", self.n.div_ceil(GROUPED_TILE))] {
            if v > max {
                return Err(GpuError::TooLarge {
                    kernel: "matmul_grouped_tiled",
                    what,
                    value: u64::from(v),
                    limit: u64::from(max),
                });
            }
        }
        Ok([self.e, self.n.div_ceil(GROUPED_TILE), 1])
    }

    /// The grid of `kernel`.
    pub fn grid(&self, kernel: GroupedKernel) -> Result<[u32; 3], GpuError> {
        match kernel {
            GroupedKernel::Vec { .. } | GroupedKernel::QuantVec(_) => self.vec_grid(),
            GroupedKernel::Tiled { .. } | GroupedKernel::QuantTiled(_) => self.tiled_grid(),
        }
    }

    /// Workgroups of the matrix-vector kernel: x over ⌈N / 4⌉ row blocks, y · z over the slots.
    pub fn vec_grid(&self) -> Result<[u32; 3], GpuError> {
        const KERNEL: &str = "matmul_grouped_vec";
        let max = grid::MAX_GROUPS_PER_DIM;
        let blocks = self.n.div_ceil(GROUPED_COLS);
        if blocks > max {
            return Err(GpuError::TooLarge {
                kernel: KERNEL,
                what: "output row blocks",
                value: u64::from(blocks),
                limit: u64::from(max),
            });
        }
        let slots = u64::from(self.t) * u64::from(self.top);
        let y = slots.min(u64::from(max));
        let z = slots.div_ceil(y.max(1));
        if z > u64::from(max) {
            return Err(GpuError::TooLarge {
                kernel: KERNEL,
                what: "token slots",
                value: slots,
                limit: u64::from(max) * u64::from(max),
            });
        }
        // y, z ≤ 65 535 here.
        Ok([blocks, y as u32, z as u32])
    }
}

/// The weight loads are the matrix-vector kernels' (`matmul::B_F32`, `matmul::B_F16`).
fn weight_defines(f16_w: bool) -> Defines {
    if f16_w {
        defines(&[("W_ELEM", "vec4<f16>"), ("B_LOAD", B_F16), ("ENABLE_F16", "enable f16;")])
    } else {
        defines(&[("W_ELEM", "vec4<f32>"), ("B_LOAD", B_F32), ("ENABLE_F16", "")])
    }
}

/// x, w, ids (read), out (read_write).
const BINDINGS: &[Access] = &[Access::Read, Access::Read, Access::Read, Access::ReadWrite];

const QUANT_VEC: Sources = per_type!("grouped/matmul_grouped_quant_vec.wgsl");
const QUANT_TILED: Sources = per_type!("grouped/matmul_grouped_quant_tiled.wgsl");

pub(crate) fn spec(k: GroupedKernel) -> Spec {
    let (kernel, file, source, f16_w) = match k {
        GroupedKernel::Vec { f16_w } => (
            "matmul_grouped_vec",
            "kernels/grouped/matmul_grouped_vec.wgsl",
            kernel_src!("grouped/matmul_grouped_vec.wgsl", "include/grouped_common.wgsl"),
            f16_w,
        ),
        GroupedKernel::Tiled { f16_w } => (
            "matmul_grouped_tiled",
            "kernels/grouped/matmul_grouped_tiled.wgsl",
            kernel_src!("grouped/matmul_grouped_tiled.wgsl", "include/grouped_common.wgsl"),
            f16_w,
        ),
        GroupedKernel::QuantVec(q) => return quant_spec(q, "vec", QUANT_VEC[index(q)]),
        GroupedKernel::QuantTiled(q) => return quant_spec(q, "tiled", QUANT_TILED[index(q)]),
    };
    let name = name(&[kernel, if f16_w { "f16w" } else { "" }, "f32"]);
    Spec::wg256((name, weight_defines(f16_w)), file, source, BINDINGS, params_of::<GroupedParams>())
}

/// The variant of the quantized grouped kernel `shape` ("vec" or "tiled") for `q`.
fn quant_spec(q: QuantType, shape: &str, source: &'static str) -> Spec {
    let file = match shape {
        "vec" => "kernels/grouped/matmul_grouped_quant_vec.wgsl",
        _ => "kernels/grouped/matmul_grouped_quant_tiled.wgsl",
    };
    let name = name(&["matmul_grouped_quant", shape, &q.name().to_ascii_lowercase(), "f32"]);
    Spec::wg256((name, Vec::new()), file, source, BINDINGS, params_of::<GroupedParams>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_and_grids() {
        let p = GroupedParams::new("k", [7, 1, 33], [5, 9, 33], 2).unwrap();
        assert_eq!((p.t, p.s, p.top, p.n, p.k, p.e), (7, 1, 2, 9, 33, 5));
        assert_eq!(p.vec_grid().unwrap(), [3, 14, 1]);
        let p = GroupedParams::new("k", [40_000, 2, 8], [4, 1, 8], 2).unwrap();
        assert_eq!(p.vec_grid().unwrap(), [1, 65_535, 2]);
        let e = GroupedParams::new("k", [2, 3, 8], [4, 1, 8], 2).unwrap_err();
        assert!(matches!(e, GpuError::Shape { .. }), "{e}");
        let e = GroupedParams::new("k", [1, 1, 1 << 16], [1 << 10, 1 << 10, 1 << 16], 1).unwrap_err();
        assert!(matches!(e, GpuError::TooLarge { what: "weight elements", .. }), "{e}");
        assert_eq!(std::mem::size_of::<GroupedParams>(), 32);
    }

    #[test]
    fn variants_by_weight_dtype() {
        assert_eq!(spec(GroupedKernel::Vec { f16_w: true }).name, "matmul_grouped_vec_f16w_f32");
        assert!(spec(GroupedKernel::Vec { f16_w: false }).define("W_ELEM") == Some("vec4<f32>"));
        assert_eq!(spec(GroupedKernel::Tiled { f16_w: false }).name, "matmul_grouped_tiled_f32");
        assert_eq!(GroupedKernel::all().len(), 4 + 2 * QuantType::ALL.len());
        assert_eq!(GroupedKernel::choose(2, true), GroupedKernel::Vec { f16_w: true });
        assert_eq!(GroupedKernel::choose(66, false), GroupedKernel::Tiled { f16_w: false });
        let p = GroupedParams::new("k", [33, 1, 24], [5, 130, 24], 2).unwrap();
        assert_eq!(p.tiled_grid().unwrap(), [5, 3, 1]);
    }

    #[test]
    fn quantized_variants_append_their_decoder() {
        for q in QuantType::ALL {
            let stem = q.name().to_lowercase();
            let vec = spec(GroupedKernel::QuantVec(q));
            assert_eq!(vec.name, format!("matmul_grouped_quant_vec_{stem}_f32"));
            let tiled = spec(GroupedKernel::QuantTiled(q));
            assert_eq!(tiled.name, format!("matmul_grouped_quant_tiled_{stem}_f32"));
            for s in [vec, tiled] {
                assert!(s.source.contains(&format!("\n// {} decoder", q.name())), "{}", s.name);
                assert!(s.source.contains(&format!("const BLOCK_BYTES: u32 = {}u;", q.block_bytes())));
                assert!(s.source.contains("fn decode8("), "{}", s.name);
            }
        }
        assert_eq!(GroupedKernel::choose_quant(31, QuantType::Q4K), GroupedKernel::QuantVec(QuantType::Q4K));
        assert_eq!(
            GroupedKernel::choose_quant(32, QuantType::Q6K),
            GroupedKernel::QuantTiled(QuantType::Q6K)
        );
    }

    #[test]
    fn quant_params_bound_the_stack() {
        // 5 experts of 9 rows of K = 64 in Q8_0 (68 bytes a row).
        let p = GroupedParams::quant("k", QuantType::Q8_0, [3, 1, 64], [5, 9, 68], 2).unwrap();
        assert_eq!((p.t, p.top, p.n, p.k, p.e, p.row_bytes), (3, 2, 9, 64, 5, 68));
        assert_eq!(p.last_word, (5 * 9 * 68 - 1) / 4);
        let e = GroupedParams::quant("k", QuantType::Q8_0, [3, 1, 64], [5, 9, 64], 2).unwrap_err();
        assert!(matches!(e, GpuError::Shape { .. }) && e.to_string().contains("68 bytes"), "{e}");
        let e = GroupedParams::quant("k", QuantType::Q4K, [3, 1, 100], [5, 9, 68], 2).unwrap_err();
        assert!(matches!(e, GpuError::Shape { .. }), "{e}");
        let e = GroupedParams::quant("k", QuantType::Q8_0, [3, 1, 64], [0, 9, 68], 2).unwrap_err();
        assert!(matches!(e, GpuError::Shape { .. }), "{e}");
        let e = GroupedParams::quant("k", QuantType::Q8_0, [1, 1, 1 << 15], [1 << 10, 1 << 8, 34 << 10], 1)
            .unwrap_err();
        assert!(matches!(e, GpuError::TooLarge { what: "weight bytes", .. }), "{e}");
    }
}
