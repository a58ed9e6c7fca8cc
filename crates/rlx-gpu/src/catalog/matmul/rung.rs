//! The matmul rungs: which kernel a matmul runs, what each needs, and the choice.
//!
//! Every rung takes the same [`MatmulParams`] and the same epilogue defines; a rung only
//! changes the output tile one workgroup owns, so the grid (x over N, y over M) is the rung's.

use super::MatmulParams;
use crate::schedule::GpuLimits;
use rlx_backend::{KernelOptions, MatmulKernel, Precision};

/// A matmul kernel of the ladder. [`MatmulRung::Tiled64`] is the always-available fallback.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatmulRung {
    /// `matmul_tiled.wgsl`: 64×64 tile, 16×16 threads of 4×4 outputs, BK 16.
    Tiled64,
    /// `matmul_reg.wgsl`: 128×128 tile, 16×16 threads of 8×8 outputs, BK 8, two shared stages.
    Reg128,
    /// `matmul_coop.wgsl`: cooperative matrices (tensor cores), f16 operands and f32
    /// accumulation; a 64×64 tile of 2×2 subgroups, each 32×32 (2×2 fragments), BK 32.
    Coop64,
    /// `matmul_coop.wgsl` with a 128×128 tile of 4×2 subgroups, each 32×64 (2×4 fragments).
    Coop128,
}

/// The fewest 128×128 workgroups for which the wide f32 rung pays. Measured on the H200
/// (2026-11-26): 4096³ (1024 groups) 5.80 → 4.54 ms and BERT-base b32 (192–768 groups per
/// matmul) 53.7 → 32.7 ms with it, but 1024³ (64 groups) 0.113 → 0.178 ms and BERT-base b1 (6–24
/// groups) 7.8 → 11.7 ms: too few groups for 132 SMs. Between 64 and 192 it was not measured.
/// The cooperative-matrix rungs use the same rule between their two tiles.
pub const MIN_WIDE_WORKGROUPS: u64 = 128;

impl MatmulRung {
    pub const ALL: [MatmulRung; 4] =
        [MatmulRung::Tiled64, MatmulRung::Reg128, MatmulRung::Coop64, MatmulRung::Coop128];

    /// Side of the square output tile of one workgroup (BM = BN in the WGSL).
    pub const fn tile(self) -> u32 {
        match self {
            MatmulRung::Tiled64 | MatmulRung::Coop64 => 64,
            MatmulRung::Reg128 | MatmulRung::Coop128 => 128,
        }
    }

    /// Whether the rung runs on cooperative matrices (f16 operands).
    pub const fn is_coop(self) -> bool {
        matches!(self, MatmulRung::Coop64 | MatmulRung::Coop128)
    }

    /// Invocations of one workgroup.
    pub const fn threads(self) -> u32 {
        match self {
            MatmulRung::Tiled64 | MatmulRung::Reg128 | MatmulRung::Coop128 => 256,
            MatmulRung::Coop64 => 128,
        }
    }

    /// Halves in one stage of one cooperative-matrix tile: the larger of its k-contiguous
    /// layout `[tile][40]` and its other layout `[32][tile + 8]` (see matmul_coop.wgsl).
    pub const fn coop_stage(self) -> u32 {
        let t = self.tile();
        let rows = t * 40;
        let cols = 32 * (t + 8);
        if rows > cols {
            rows
        } else {
            cols
        }
    }

    /// Workgroup memory the kernel declares, in bytes.
    pub const fn shared_bytes(self) -> u32 {
        match self {
            // a_tile [16][65] + b_tile [16][64] floats.
            MatmulRung::Tiled64 => (16 * 65 + 16 * 64) * 4,
            // Two stages of a_tile and b_tile, each [8][33] vec4.
            MatmulRung::Reg128 => 2 * 2 * 8 * 33 * 16,
            // Two stages of two f16 tiles, and one 16×16 f32 block per subgroup.
            MatmulRung::Coop64 | MatmulRung::Coop128 => {
                2 * 2 * self.coop_stage() * 2 + (self.threads() / 32) * 256 * 4
            }
        }
    }

    /// Whether a device with `limits` can run this rung under `precision`; the error names
    /// what is missing.
    pub fn available(self, limits: &GpuLimits, precision: Precision) -> Result<(), String> {
        if self.is_coop() {
            coop_available(&format!("matmul rung {self:?}"), limits, precision)?;
        }
        let need = self.shared_bytes();
        if need > limits.shared_memory_bytes {
            return Err(format!(
                "matmul rung {self:?} needs {need} bytes of workgroup memory, the device has {}",
                limits.shared_memory_bytes
            ));
        }
        Ok(())
    }

    /// The rung for `batches` M×N outputs over a K of `k` on a device with `limits`, as
    /// `options` allow.
    ///
    /// - A forced kernel ([`KernelOptions::matmul`]) is taken if available, else the error
    ///   says why; [`MatmulKernel::Coop`] takes the tile by the rule below.
    /// - Otherwise the wide tile (Reg128, or Coop128) is taken where both M and N are at least
    ///   its tile, the launch has at least [`MIN_WIDE_WORKGROUPS`] of its workgroups (fewer
    ///   leave most of a large GPU idle) and the device has the memory. The cooperative-matrix
    ///   rungs are preferred wherever the device and the precision allow them.
    /// - In f32, Reg128 is also taken for a single product (`batches` = 1) with fewer output
    ///   tiles but a K long enough that split-K brings its launch to
    ///   [`SIMT_SPLIT_WORKGROUPS`](super::splitk::SIMT_SPLIT_WORKGROUPS) workgroups (a training
    ///   step's weight gradients: outputs of 384×1536, K = every token of the batch).
    pub fn choose(
        m: u32,
        n: u32,
        k: u32,
        batches: u32,
        limits: &GpuLimits,
        options: &KernelOptions,
    ) -> Result<Self, String> {
        let precision = options.precision;
        let fits =
            |big: MatmulRung| m >= big.tile() && n >= big.tile() && big.available(limits, precision).is_ok();
        let wide = |big: MatmulRung| {
            let t = u64::from(big.tile());
            let groups = u64::from(m).div_ceil(t) * u64::from(n).div_ceil(t) * u64::from(batches.max(1));
            fits(big) && groups >= MIN_WIDE_WORKGROUPS
        };
        let pick = |big: MatmulRung, small: MatmulRung| if wide(big) { big } else { small };
        let split_wide = || {
            let big = MatmulRung::Reg128;
            batches == 1 && fits(big) && super::splitk::split_fills(m, n, k, big)
        };
        let rung = match options.matmul {
            Some(MatmulKernel::Tiled64) => MatmulRung::Tiled64,
            Some(MatmulKernel::Reg128) => MatmulRung::Reg128,
            Some(MatmulKernel::Coop) => pick(MatmulRung::Coop128, MatmulRung::Coop64),
            None if MatmulRung::Coop64.available(limits, precision).is_ok() => {
                pick(MatmulRung::Coop128, MatmulRung::Coop64)
            }
            None if split_wide() => MatmulRung::Reg128,
            None => pick(MatmulRung::Reg128, MatmulRung::Tiled64),
        };
        rung.available(limits, precision)?;
        Ok(rung)
    }

    /// The workgroup counts of one launch of `p` (`batches` in z) on this rung. An empty
    /// output launches nothing (x = 0), as the params constructor says.
    pub fn grid(self, p: &MatmulParams, batches: u32) -> [u32; 3] {
        if p.m == 0 || p.n == 0 {
            return [0, 1, 1];
        }
        [p.n.div_ceil(self.tile()), p.m.div_ceil(self.tile()), batches]
    }
}

/// Whether `what` (a kernel on f16 16×16×16 cooperative matrices laid out for subgroups of 32)
/// can run on a device with `limits` under `precision`; the error names what is missing.
pub(crate) fn coop_available(what: &str, limits: &GpuLimits, precision: Precision) -> Result<(), String> {
    if !limits.cooperative_matrix {
        return Err(format!(
            "{what} needs f16 16x16x16 cooperative matrices with f32 accumulation \
             (VK_KHR_cooperative_matrix, shaderFloat16); the device has none"
        ));
    }
    if limits.subgroup_size != 32 {
        return Err(format!(
            "{what} is laid out for subgroups of 32 invocations, the device's are {}",
            limits.subgroup_size
        ));
    }
    if !precision.f16_operands() {
        return Err(format!(
            "{what} rounds operands to f16, which precision {precision} does not allow; compile \
             with Precision::Mixed or Precision::F16"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(shared: u32) -> GpuLimits {
        GpuLimits { shared_memory_bytes: shared, ..GpuLimits::lavapipe() }
    }

    fn opts(precision: Precision, matmul: Option<MatmulKernel>) -> KernelOptions {
        KernelOptions { precision, matmul }
    }

    fn auto(m: u32, n: u32, batches: u32, l: &GpuLimits) -> MatmulRung {
        MatmulRung::choose(m, n, 64, batches, l, &KernelOptions::default()).unwrap()
    }

    #[test]
    fn big_outputs_take_the_register_tile() {
        let l = limits(32 * 1024);
        for (m, n, batches, rung) in [
            (4096, 4096, 1, MatmulRung::Reg128),
            (4096, 768, 1, MatmulRung::Reg128),
            (128, 128, 128, MatmulRung::Reg128),
            (129, 257, 22, MatmulRung::Reg128),
            (129, 257, 21, MatmulRung::Tiled64),
            (1024, 1024, 1, MatmulRung::Tiled64),
            (128, 768, 1, MatmulRung::Tiled64),
            (127, 4096, 64, MatmulRung::Tiled64),
            (4096, 64, 64, MatmulRung::Tiled64),
            (1, 1, 1, MatmulRung::Tiled64),
        ] {
            assert_eq!(auto(m, n, batches, &l), rung, "{m}x{n}, {batches} batches");
        }
        // A device with too little workgroup memory keeps the 64 tile.
        assert_eq!(auto(4096, 4096, 1, &limits(16 * 1024)), MatmulRung::Tiled64);
        let e = MatmulRung::Reg128.available(&limits(16 * 1024), Precision::F32).unwrap_err();
        assert!(e.contains("16896") && e.contains("16384"), "{e}");
        assert!(MatmulRung::Tiled64.available(&limits(16 * 1024), Precision::F32).is_ok());
        // f32 precision never takes tensor cores, even where the device has them.
        assert_eq!(auto(4096, 4096, 1, &GpuLimits::hopper()), MatmulRung::Reg128);
    }

    #[test]
    fn mixed_precision_takes_tensor_cores_where_the_device_has_them() {
        let h = GpuLimits::hopper();
        let mixed = opts(Precision::Mixed, None);
        for (m, n, batches, rung) in [
            (4096, 4096, 1, MatmulRung::Coop128),
            (4096, 768, 1, MatmulRung::Coop128),
            (1024, 1024, 1, MatmulRung::Coop64),
            (128, 768, 1, MatmulRung::Coop64),
            (1, 1, 1, MatmulRung::Coop64),
        ] {
            assert_eq!(MatmulRung::choose(m, n, 64, batches, &h, &mixed), Ok(rung), "{m}x{n}");
        }
        // lavapipe has no cooperative matrices: mixed precision keeps the f32 rungs there.
        let l = limits(32 * 1024);
        assert_eq!(MatmulRung::choose(4096, 4096, 64, 1, &l, &mixed), Ok(MatmulRung::Reg128));
        assert_eq!(MatmulRung::choose(8, 8, 64, 1, &l, &opts(Precision::F16, None)), Ok(MatmulRung::Tiled64));
    }

    #[test]
    fn long_k_products_take_the_register_tile_where_split_k_fills_the_card() {
        use MatmulRung::{Coop128, Coop64, Reg128, Tiled64};
        let l = limits(32 * 1024);
        let f32_rung = |m, n, k, batches, l: &GpuLimits| {
            MatmulRung::choose(m, n, k, batches, l, &KernelOptions::default()).unwrap()
        };
        for (m, n, k, batches, rung) in [
            // A MiniLM fine-tune's weight gradients (K = 128 × 122 tokens): 384×1536 is 36
            // tiles of 128, in 16 slices 576 workgroups.
            (384, 1536, 15_616, 1, Reg128),
            (1536, 384, 15_616, 1, Reg128),
            // 384×384 is 9 tiles of 128, 144 workgroups at 16 slices: the 64 tile (576).
            (384, 384, 15_616, 1, Tiled64),
            // K too short to reach 512 workgroups (2 slices of 384 at most), or a batch (never
            // split), or M below the wide tile: as before.
            (384, 1536, 768, 1, Tiled64),
            (384, 1536, 15_616, 2, Tiled64),
            (64, 4096, 15_616, 1, Tiled64),
            // Enough tiles without a split.
            (1536, 1536, 15_616, 1, Reg128),
        ] {
            assert_eq!(f32_rung(m, n, k, batches, &l), rung, "{m}x{n}x{k}, {batches} batches");
        }
        // A device without the memory for the wide tile keeps the 64 tile.
        assert_eq!(f32_rung(384, 1536, 15_616, 1, &limits(16 * 1024)), Tiled64);
        // The tensor-core rungs keep their rule: 36 tiles of 128 are too few for Coop128.
        let h = GpuLimits::hopper();
        let mixed = opts(Precision::Mixed, None);
        assert_eq!(MatmulRung::choose(384, 1536, 15_616, 1, &h, &mixed), Ok(Coop64));
        assert_eq!(MatmulRung::choose(4096, 1536, 15_616, 1, &h, &mixed), Ok(Coop128));
        // A forced 64 tile stays forced.
        let tiled = opts(Precision::F32, Some(MatmulKernel::Tiled64));
        assert_eq!(MatmulRung::choose(384, 1536, 15_616, 1, &l, &tiled), Ok(Tiled64));
    }

    #[test]
    fn a_forced_rung_is_taken_or_refused_with_the_reason() {
        let h = GpuLimits::hopper();
        let l = limits(32 * 1024);
        let force = |k| opts(Precision::Mixed, Some(k));
        assert_eq!(MatmulRung::choose(8, 8, 64, 1, &l, &force(MatmulKernel::Reg128)), Ok(MatmulRung::Reg128));
        assert_eq!(
            MatmulRung::choose(4096, 4096, 64, 1, &h, &force(MatmulKernel::Tiled64)),
            Ok(MatmulRung::Tiled64)
        );
        assert_eq!(
            MatmulRung::choose(4096, 4096, 64, 1, &h, &force(MatmulKernel::Coop)),
            Ok(MatmulRung::Coop128)
        );
        assert_eq!(MatmulRung::choose(5, 7, 64, 1, &h, &force(MatmulKernel::Coop)), Ok(MatmulRung::Coop64));
        let e = MatmulRung::choose(8, 8, 64, 1, &l, &force(MatmulKernel::Coop)).unwrap_err();
        assert!(e.contains("cooperative matrices"), "{e}");
        let e =
            MatmulRung::choose(8, 8, 64, 1, &h, &opts(Precision::F32, Some(MatmulKernel::Coop))).unwrap_err();
        assert!(e.contains("Precision::Mixed"), "{e}");
        let warp64 = GpuLimits { subgroup_size: 64, ..h.clone() };
        let e = MatmulRung::choose(8, 8, 64, 1, &warp64, &force(MatmulKernel::Coop)).unwrap_err();
        assert!(e.contains("64"), "{e}");
        let e =
            MatmulRung::choose(8, 8, 64, 1, &limits(16 * 1024), &force(MatmulKernel::Reg128)).unwrap_err();
        assert!(e.contains("workgroup memory"), "{e}");
    }

    #[test]
    fn each_rung_has_its_own_grid() {
        let (p, _, grid) = MatmulParams::from_shapes(&[2, 129, 131], &[131, 257], false, false).unwrap();
        assert_eq!(grid, [5, 3, 2]);
        assert_eq!(MatmulRung::Tiled64.grid(&p, grid[2]), grid);
        assert_eq!(MatmulRung::Coop64.grid(&p, grid[2]), grid);
        assert_eq!(MatmulRung::Reg128.grid(&p, grid[2]), [3, 2, 2]);
        assert_eq!(MatmulRung::Coop128.grid(&p, grid[2]), [3, 2, 2]);
        let (p, _, _) = MatmulParams::from_shapes(&[256, 512], &[512, 384], false, false).unwrap();
        assert_eq!(MatmulRung::Reg128.grid(&p, 1), [3, 2, 1]);
        let (p, _, grid) = MatmulParams::from_shapes(&[0, 5], &[5, 3], false, false).unwrap();
        assert_eq!(MatmulRung::Reg128.grid(&p, 1), grid);
    }

    #[test]
    fn tiles_and_shared_memory_match_the_wgsl() {
        let tiled = kernel_src!("matmul/matmul_tiled.wgsl");
        let reg = kernel_src!("matmul/matmul_reg.wgsl");
        for (rung, src, shared) in [
            (MatmulRung::Tiled64, tiled, ["array<f32, 1040>", "array<f32, 1024>"]),
            (MatmulRung::Reg128, reg, ["array<vec4<f32>, 528>", "array<vec4<f32>, 528>"]),
        ] {
            let tile = rung.tile();
            assert!(src.contains(&format!("const BM: u32 = {tile}u;")), "{rung:?}");
            assert!(src.contains(&format!("const BN: u32 = {tile}u;")), "{rung:?}");
            for decl in shared {
                assert!(src.contains(decl), "{rung:?} {decl}");
            }
        }
        // Both f32 rungs fit lavapipe's 32 KiB; the wide coop tile fills the H200's 48 KiB.
        assert_eq!(MatmulRung::Tiled64.shared_bytes(), 8256);
        assert_eq!(MatmulRung::Reg128.shared_bytes(), 16_896);
        assert_eq!(MatmulRung::Coop64.shared_bytes(), 24 << 10);
        assert_eq!(MatmulRung::Coop128.shared_bytes(), 48 << 10);
        assert_eq!((MatmulRung::Coop64.coop_stage(), MatmulRung::Coop128.coop_stage()), (2560, 5120));
    }
}
