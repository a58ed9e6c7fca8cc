//! The f32 matmul rungs: which kernel a matmul runs, what each needs, and the choice.
//!
//! Every rung takes the same [`MatmulParams`] and the same epilogue defines; a rung only
//! changes the output tile one workgroup owns, so the grid (x over N, y over M) is the rung's.

use super::MatmulParams;
use crate::schedule::GpuLimits;

/// An f32 matmul kernel of the ladder. Candidate 0 ([`MatmulRung::Tiled64`]) is the
/// always-available fallback.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatmulRung {
    /// `matmul_tiled.wgsl`: 64×64 tile, 16×16 threads of 4×4 outputs, BK 16.
    Tiled64,
    /// `matmul_reg.wgsl`: 128×128 tile, 16×16 threads of 8×8 outputs, BK 8, two shared stages.
    Reg128,
}

/// The fewest 128×128 workgroups for which the wide rung pays. Measured on the H200
/// (2026-11-26): 4096³ (1024 groups) 5.80 → 4.54 ms and BERT-base b32 (192–768 groups per
/// matmul) 53.7 → 32.7 ms with it, but 1024³ (64 groups) 0.113 → 0.178 ms and BERT-base b1 (6–24
/// groups) 7.8 → 11.7 ms: too few groups for 132 SMs. Between 64 and 192 it was not measured.
pub const MIN_WIDE_WORKGROUPS: u64 = 128;

impl MatmulRung {
    pub const ALL: [MatmulRung; 2] = [MatmulRung::Tiled64, MatmulRung::Reg128];

    /// Side of the square output tile of one workgroup (BM = BN in the WGSL).
    pub const fn tile(self) -> u32 {
        match self {
            MatmulRung::Tiled64 => 64,
            MatmulRung::Reg128 => 128,
        }
    }

    /// Workgroup memory the kernel declares, in bytes.
    pub const fn shared_bytes(self) -> u32 {
        match self {
            // a_tile [16][65] + b_tile [16][64] floats.
            MatmulRung::Tiled64 => (16 * 65 + 16 * 64) * 4,
            // Two stages of a_tile and b_tile, each [8][33] vec4.
            MatmulRung::Reg128 => 2 * 2 * 8 * 33 * 16,
        }
    }

    /// Whether a device with `limits` can run this rung; the error names what is missing.
    pub fn available(self, limits: &GpuLimits) -> Result<(), String> {
        let need = self.shared_bytes();
        if need > limits.shared_memory_bytes {
            return Err(format!(
                "matmul rung {self:?} needs {need} bytes of workgroup memory, the device has {}",
                limits.shared_memory_bytes
            ));
        }
        Ok(())
    }

    /// The rung for `batches` M×N outputs on a device with `limits`: [`MatmulRung::Reg128`]
    /// where both M and N are at least its tile, the launch has at least
    /// [`MIN_WIDE_WORKGROUPS`] of its workgroups (fewer leave most of a large GPU idle) and the
    /// device has the memory; else [`MatmulRung::Tiled64`].
    pub fn choose(m: u32, n: u32, batches: u32, limits: &GpuLimits) -> Self {
        let big = MatmulRung::Reg128;
        let t = u64::from(big.tile());
        let groups = u64::from(m).div_ceil(t) * u64::from(n).div_ceil(t) * u64::from(batches.max(1));
        let wide = m >= big.tile() && n >= big.tile() && groups >= MIN_WIDE_WORKGROUPS;
        if wide && big.available(limits).is_ok() {
            big
        } else {
            MatmulRung::Tiled64
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(shared: u32) -> GpuLimits {
        GpuLimits { shared_memory_bytes: shared, ..GpuLimits::lavapipe() }
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
            assert_eq!(MatmulRung::choose(m, n, batches, &l), rung, "{m}x{n}, {batches} batches");
        }
        // A device with too little workgroup memory keeps the 64 tile.
        assert_eq!(MatmulRung::choose(4096, 4096, 1, &limits(16 * 1024)), MatmulRung::Tiled64);
        let e = MatmulRung::Reg128.available(&limits(16 * 1024)).unwrap_err();
        assert!(e.contains("16896") && e.contains("16384"), "{e}");
        assert!(MatmulRung::Tiled64.available(&limits(16 * 1024)).is_ok());
    }

    #[test]
    fn each_rung_has_its_own_grid() {
        let (p, _, grid) = MatmulParams::from_shapes(&[2, 129, 131], &[131, 257], false, false).unwrap();
        assert_eq!(grid, [5, 3, 2]);
        assert_eq!(MatmulRung::Tiled64.grid(&p, grid[2]), grid);
        assert_eq!(MatmulRung::Reg128.grid(&p, grid[2]), [3, 2, 2]);
        let (p, _, _) = MatmulParams::from_shapes(&[256, 512], &[512, 384], false, false).unwrap();
        assert_eq!(MatmulRung::Reg128.grid(&p, 1), [3, 2, 1]);
        let (p, _, grid) = MatmulParams::from_shapes(&[0, 5], &[5, 3], false, false).unwrap();
        assert_eq!(MatmulRung::Reg128.grid(&p, 1), grid);
    }

    #[test]
    fn tiles_and_shared_memory_match_the_wgsl() {
        let tiled = include_str!("../../kernels/matmul_tiled.wgsl");
        let reg = include_str!("../../kernels/matmul_reg.wgsl");
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
        // Both fit lavapipe's 32 KiB.
        assert_eq!(MatmulRung::Tiled64.shared_bytes(), 8256);
        assert_eq!(MatmulRung::Reg128.shared_bytes(), 16_896);
    }
}
