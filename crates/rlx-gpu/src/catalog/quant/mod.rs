//! Kernel family "quant": the kernels on block-quantized weights, which stay packed (U8, one
//! byte per element) in device memory and are decoded inside the kernels. One variant per
//! kernel and format of [`QuantType::ALL`]: the kernel file,
//! `quant_common.wgsl`, `quant_k_scales.wgsl`, `quant_minifloat.wgsl` and the type's decoder
//! (`quant_<type>.wgsl`, which defines `decode`) are concatenated at build time.
//!
//! - [`QuantKernel::MatVecOne`]: `matmul_quant_vec1.wgsl`, one row of x (a decode step): each
//!   invocation takes the same 8-weight pieces of four weight rows through the type's piece dot
//!   (`quant_dot_<type>.wgsl`, or `quant_dot_generic.wgsl` over the decoder).
//! - [`QuantKernel::MatVec`]: `matmul_quant_vec.wgsl`, a few rows (M ≤ [`QUANT_VEC_ROWS`] per
//!   row chunk), each decoded weight used for every row.
//! - [`QuantKernel::Tiled`]: `matmul_quant_tiled.wgsl`, 64×64 f32 tiles for prefill; every device.
//! - [`QuantKernel::Coop`]: `matmul_quant_coop.wgsl`, the same tile on cooperative matrices (f16
//!   operands, f32 accumulation); devices with [`crate::GpuLimits::cooperative_matrix`].
//! - [`QuantKernel::Gather`]: `quant_gather.wgsl`, decoded rows of a table (embeddings).
//!
//! All take [`QuantParams`]; bindings x (or the table), w (or the ids), out.

use super::matmul::coop_available;
use super::{name, params_of, Spec, IN2_OUT};
use crate::grid;
use crate::schedule::GpuLimits;
use crate::GpuError;
use bytemuck::{Pod, Zeroable};
use rlx_backend::{KernelOptions, MatmulKernel};
use rlx_ir::QuantType;

/// A kernel of the quant family, for one block format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QuantKernel {
    MatVecOne(QuantType),
    MatVec(QuantType),
    Tiled(QuantType),
    Coop(QuantType),
    Gather(QuantType),
}

impl QuantKernel {
    /// Every key of this family, in a fixed order.
    pub fn all() -> Vec<QuantKernel> {
        let kinds: [fn(QuantType) -> QuantKernel; 5] = [
            QuantKernel::MatVecOne,
            QuantKernel::MatVec,
            QuantKernel::Tiled,
            QuantKernel::Coop,
            QuantKernel::Gather,
        ];
        kinds.iter().flat_map(|k| QuantType::ALL.map(k)).collect()
    }
}

/// Which kernel a quantized matmul runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QuantPath {
    MatVecOne,
    MatVec,
    Tiled,
    Coop,
}

impl QuantPath {
    /// The path for `m` rows of x on a device with `limits`, as `options` allow: a forced
    /// `MatmulKernel::Coop` takes the cooperative-matrix kernel (or fails naming what is
    /// missing), any other forced kernel the f32 tile; otherwise one row takes the one-row
    /// kernel, a few rows the matrix-vector kernel and more the cooperative-matrix kernel where
    /// the device and the precision allow it, else the f32 tile.
    pub fn choose(m: usize, limits: &GpuLimits, options: &KernelOptions) -> Result<Self, String> {
        const WHAT: &str = "quantized matmul on cooperative matrices";
        let coop = || coop_available(WHAT, limits, options.precision);
        match options.matmul {
            Some(MatmulKernel::Coop) => coop().map(|()| QuantPath::Coop),
            Some(MatmulKernel::Tiled64 | MatmulKernel::Reg128) => Ok(QuantPath::Tiled),
            None if m == 1 => Ok(QuantPath::MatVecOne),
            None if m <= QUANT_VEC_ROWS as usize => Ok(QuantPath::MatVec),
            None if coop().is_ok() => Ok(QuantPath::Coop),
            None => Ok(QuantPath::Tiled),
        }
    }

    /// The kernel of this path for `quant`.
    pub fn kernel(self, quant: QuantType) -> QuantKernel {
        match self {
            QuantPath::MatVecOne => QuantKernel::MatVecOne(quant),
            QuantPath::MatVec => QuantKernel::MatVec(quant),
            QuantPath::Tiled => QuantKernel::Tiled(quant),
            QuantPath::Coop => QuantKernel::Coop(quant),
        }
    }
}

/// Rows of x one matrix-vector workgroup takes (MMAX in the kernel); more rows run as chunks
/// along the grid's z.
pub const QUANT_VEC_ROWS: u32 = 8;
/// Weight rows (output columns) one matrix-vector workgroup takes (COLS in the kernel).
const VEC_COLS: u64 = 4;
/// Output tile side of the tiled and cooperative-matrix kernels.
pub const QUANT_TILE: u32 = 64;

/// Params of every quant kernel, byte-identical to `QuantParams` in `quant_common.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct QuantParams {
    /// Rows of x (matmuls) or ids (gather).
    pub m: u32,
    /// Weight rows: output columns (matmuls) or table rows V (gather).
    pub n: u32,
    /// Elements per weight row (a multiple of the block's elements, so of 32).
    pub k: u32,
    pub row_bytes: u32,
    /// The last u32 word holding bytes of the weight.
    pub last_word: u32,
    pub pad: [u32; 3],
}

impl QuantParams {
    /// Params for x [m, k] against a weight of `n` rows of `k` elements of `quant` (or `m` ids
    /// into a table of `n` rows). Errors when k is not whole blocks, the weight is empty (the
    /// lowering fills the output instead) or an index the kernels compute past u32.
    pub fn new(
        kernel: &'static str,
        quant: QuantType,
        m: usize,
        n: usize,
        k: usize,
    ) -> Result<Self, GpuError> {
        let shape_err = |reason: String| GpuError::Shape {
            kernel,
            shapes: grid::shapes_text(&[&[m, k], &[n, k]]),
            reason,
        };
        let row_bytes = quant.byte_len(k).map_err(|e| shape_err(e.to_string()))?;
        let bytes = (n as u64).saturating_mul(row_bytes as u64);
        if bytes == 0 {
            return Err(shape_err("the quantized weight is empty; there is nothing to decode".into()));
        }
        // x and out are indexed as vec4 and scalars: m·k and m·n elements; w by byte offset.
        grid::fits_u32(kernel, "weight bytes", bytes)?;
        grid::fits_u32(kernel, "x elements", (m as u64).saturating_mul(k as u64))?;
        grid::fits_u32(kernel, "output elements", (m as u64).saturating_mul(k.max(n) as u64))?;
        Ok(QuantParams {
            m: m as u32,
            n: n as u32,
            k: k as u32,
            row_bytes: row_bytes as u32,
            last_word: ((bytes - 1) / 4) as u32,
            pad: [0; 3],
        })
    }

    /// Workgroups of the matrix-vector kernels: ⌈N / 4⌉ over x and y, row chunks of 8 over z
    /// (one for the one-row kernel).
    pub fn vec_grid(&self) -> Result<[u32; 3], GpuError> {
        let [x, y, _] = grid::linear("matmul_quant_vec", u64::from(self.n).div_ceil(VEC_COLS), 256)?;
        let z = self.m.div_ceil(QUANT_VEC_ROWS);
        if z > grid::MAX_GROUPS_PER_DIM {
            return Err(GpuError::TooLarge {
                kernel: "matmul_quant_vec",
                what: "row chunks of x",
                value: u64::from(z),
                limit: u64::from(grid::MAX_GROUPS_PER_DIM),
            });
        }
        Ok([x, y, z])
    }

    /// Workgroups of the tiled and cooperative-matrix kernels: 64×64 tiles, x over N, y over M.
    pub fn tile_grid(&self, kernel: &'static str) -> Result<[u32; 3], GpuError> {
        let x = self.n.div_ceil(QUANT_TILE);
        let y = self.m.div_ceil(QUANT_TILE);
        for (what, v) in [("output column tiles", x), ("output row tiles", y)] {
            if v > grid::MAX_GROUPS_PER_DIM {
                return Err(GpuError::TooLarge {
                    kernel,
                    what,
                    value: u64::from(v),
                    limit: u64::from(grid::MAX_GROUPS_PER_DIM),
                });
            }
        }
        Ok([x, y, 1])
    }

    /// Workgroups of the gather kernel: one invocation per 8 outputs.
    pub fn gather_grid(&self) -> Result<[u32; 3], GpuError> {
        let pieces = u64::from(self.m) * u64::from(self.k / 8);
        grid::linear("data_quant_gather", pieces.div_ceil(256), 256)
    }
}

/// One source per [`QuantType::ALL`] entry (built by `per_type!`, in `catalog/mod.rs`).
pub(super) type Sources = [&'static str; QuantType::ALL.len()];

const VEC: Sources = per_type!("quant/matmul_quant_vec.wgsl");
const VEC_ONE: Sources = per_type_dot!("quant/matmul_quant_vec1.wgsl");
const TILED: Sources = per_type!("quant/matmul_quant_tiled.wgsl");
const COOP: Sources = per_type!("quant/matmul_quant_coop.wgsl");
const GATHER: Sources =
    per_type!("quant/quant_gather.wgsl", concat!("\n", kernel_src!("include/flat_main.wgsl")));

/// Invocations of the cooperative-matrix kernel: 2×2 subgroups of 32.
pub const QUANT_COOP_THREADS: u32 = 128;

/// Position of `q` in [`QuantType::ALL`], which holds every format (the 0 is never taken).
pub(super) fn index(q: QuantType) -> usize {
    QuantType::ALL.iter().position(|&t| t == q).unwrap_or(0)
}

pub(crate) fn spec(k: QuantKernel) -> Spec {
    let (table, kernel, q, threads) = match k {
        QuantKernel::MatVecOne(q) => (&VEC_ONE, "matmul_quant_vec1", q, 256),
        QuantKernel::MatVec(q) => (&VEC, "matmul_quant_vec", q, 256),
        QuantKernel::Tiled(q) => (&TILED, "matmul_quant_tiled", q, 256),
        QuantKernel::Coop(q) => (&COOP, "matmul_quant_coop", q, QUANT_COOP_THREADS),
        QuantKernel::Gather(q) => (&GATHER, "quant_gather", q, 256),
    };
    let file = match k {
        QuantKernel::MatVecOne(_) => "kernels/quant/matmul_quant_vec1.wgsl",
        QuantKernel::MatVec(_) => "kernels/quant/matmul_quant_vec.wgsl",
        QuantKernel::Tiled(_) => "kernels/quant/matmul_quant_tiled.wgsl",
        QuantKernel::Coop(_) => "kernels/quant/matmul_quant_coop.wgsl",
        QuantKernel::Gather(_) => "kernels/quant/quant_gather.wgsl",
    };
    Spec {
        name: name(&[kernel, &q.name().to_ascii_lowercase(), "f32"]),
        file,
        source: table[index(q)],
        defines: Vec::new(),
        workgroup_size: [threads, 1, 1],
        bindings: IN2_OUT,
        params: params_of::<QuantParams>(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kernel_has_a_variant_per_format_in_order() {
        assert_eq!(QuantKernel::all().len(), 5 * QuantType::ALL.len());
        for (i, q) in QuantType::ALL.into_iter().enumerate() {
            assert_eq!(index(q), i);
            let stem = q.name().to_lowercase();
            assert_eq!(spec(QuantKernel::MatVec(q)).name, format!("matmul_quant_vec_{stem}_f32"));
            // The one-row kernel's piece dot is this format's own or the generic one, once.
            let one = spec(QuantKernel::MatVecOne(q)).source;
            let own = one.matches(&format!("\n// {}'s piece dot", q.name())).count();
            let generic =
                one.matches("\n// The piece dot of matmul_quant_vec1.wgsl for types without").count();
            assert_eq!(own + generic, 1, "{q}");
            // The decoder appended is this format's (its header names it) with its geometry.
            let all = [
                QuantKernel::MatVecOne(q),
                QuantKernel::MatVec(q),
                QuantKernel::Tiled(q),
                QuantKernel::Coop(q),
                QuantKernel::Gather(q),
            ];
            for k in all {
                let src = spec(k).source;
                assert!(src.contains(&format!("\n// {} decoder", q.name())), "{k:?}");
                assert!(src.contains(&format!("const BLOCK_ELEMS: u32 = {}u;", q.block_elems())), "{k:?}");
                assert!(src.contains(&format!("const BLOCK_BYTES: u32 = {}u;", q.block_bytes())), "{k:?}");
            }
        }
    }

    #[test]
    fn paths_follow_rows_device_and_forced_kernel() {
        use rlx_backend::Precision;
        let (lava, hopper) = (GpuLimits::lavapipe(), GpuLimits::hopper());
        let f32_opts = KernelOptions::default();
        let mixed = KernelOptions { precision: Precision::Mixed, matmul: None };
        assert_eq!(QuantPath::choose(1, &hopper, &mixed), Ok(QuantPath::MatVecOne));
        assert_eq!(QuantPath::choose(2, &hopper, &mixed), Ok(QuantPath::MatVec));
        assert_eq!(QuantPath::choose(8, &lava, &f32_opts), Ok(QuantPath::MatVec));
        assert_eq!(QuantPath::choose(9, &lava, &mixed), Ok(QuantPath::Tiled));
        assert_eq!(QuantPath::choose(9, &hopper, &f32_opts), Ok(QuantPath::Tiled));
        assert_eq!(QuantPath::choose(9, &hopper, &mixed), Ok(QuantPath::Coop));
        let tiled = KernelOptions { matmul: Some(MatmulKernel::Tiled64), ..mixed };
        assert_eq!(QuantPath::choose(1, &hopper, &tiled), Ok(QuantPath::Tiled));
        let coop = KernelOptions { matmul: Some(MatmulKernel::Coop), ..mixed };
        assert_eq!(QuantPath::choose(1, &hopper, &coop), Ok(QuantPath::Coop));
        let e = QuantPath::choose(1, &lava, &coop).unwrap_err();
        assert!(e.contains("cooperative matrices"), "{e}");
    }

    #[test]
    fn params_check_blocks_sizes_and_grids() {
        let p = QuantParams::new("k", QuantType::Q8_0, 3, 5, 64).unwrap();
        assert_eq!((p.row_bytes, p.last_word), (68, (5 * 68 - 1) / 4));
        assert_eq!(p.vec_grid().unwrap(), [2, 1, 1]);
        let p = QuantParams::new("k", QuantType::Q6K, 65, 129, 256).unwrap();
        assert_eq!(p.vec_grid().unwrap(), [33, 1, 9]);
        assert_eq!(p.tile_grid("k").unwrap(), [3, 2, 1]);
        assert_eq!(p.gather_grid().unwrap(), [((65 * 32) as u32).div_ceil(256), 1, 1]);
        assert!(matches!(QuantParams::new("k", QuantType::Q4K, 1, 4, 100), Err(GpuError::Shape { .. })));
        assert!(matches!(QuantParams::new("k", QuantType::Q4K, 1, 0, 256), Err(GpuError::Shape { .. })));
        let e = QuantParams::new("k", QuantType::Q8_0, 1, 1 << 27, 1024).unwrap_err();
        assert!(matches!(e, GpuError::TooLarge { what: "weight bytes", .. }), "{e}");
    }
}

#[cfg(test)]
mod grid_tests {
    use rlx_ir::quant_grids::{IQ1S_GRID, IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID};

    /// The `0x…u` words of a WGSL grid file, in order (comments skipped).
    fn words(src: &str) -> Vec<u32> {
        src.lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .flat_map(|l| l.split([',', ' ', '(', ')']))
            .filter_map(|t| t.strip_prefix("0x").and_then(|h| h.strip_suffix('u')))
            .map(|h| u32::from_str_radix(h, 16).unwrap_or_else(|e| panic!("{h}: {e}")))
            .collect()
    }

    #[test]
    fn wgsl_grids_hold_the_reference_words() {
        let kernels = concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/include/");
        let grids: [(&str, &[u32]); 6] = [
            ("iq2xxs", &IQ2XXS_GRID),
            ("iq2xs", &IQ2XS_GRID),
            ("iq2s", &IQ2S_GRID),
            ("iq3xxs", &IQ3XXS_GRID),
            ("iq3s", &IQ3S_GRID),
            ("iq1s", &IQ1S_GRID),
        ];
        for (name, want) in grids {
            let path = format!("{kernels}quant_grid_{name}.wgsl");
            let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            assert_eq!(words(&src), want, "{path}");
        }
    }
}
