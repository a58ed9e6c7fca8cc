//! Kernel family "ssm": the recurrences of `rlx_ir::ssm`.
//!
//! - [`SsmKernel::ScanChunk`], [`SsmKernel::ScanCarry`], [`SsmKernel::ScanOut`]: the three
//!   launches of a chunked selective scan (`ssm_scan_chunk.wgsl` holds the design), all taking
//!   [`ScanParams`].
//! - [`SsmKernel::DeltaRule`]: the gated delta rule (`ssm_delta_rule.wgsl`), one workgroup per
//!   (batch, head, block of [`DELTA_COLS`] state columns), taking [`DeltaRuleParams`].

use super::{name, params_of, Access, Spec};
use crate::grid;
use crate::GpuError;
use bytemuck::{Pod, Zeroable};

unit_keys! {
    /// A kernel of the ssm family.
    pub enum SsmKernel {
        /// Selective scan phase 1: each chunk from a zero state (end states, Σ δ per chunk).
        ScanChunk,
        /// Selective scan phase 2: the carries across chunks and the last state.
        ScanCarry,
        /// Selective scan phase 3: each chunk from its carry, writing y.
        ScanOut,
        /// The gated delta rule.
        DeltaRule,
    }
}

impl SsmKernel {
    /// Every key of this family, in a fixed order.
    pub fn all() -> Vec<SsmKernel> {
        SsmKernel::ALL.to_vec()
    }
}

/// Invocations per workgroup of the selective-scan kernels (WG in their WGSL).
pub const SCAN_GROUP: u32 = 64;
/// State columns one delta-rule workgroup owns (VB in its WGSL).
pub const DELTA_COLS: u32 = 32;
/// The largest key dim K the delta-rule kernel holds in shared memory (KMAX in its WGSL).
pub const DELTA_MAX_K: u32 = 128;

/// Params of the selective-scan kernels, byte-identical to `ScanParams` in their WGSL.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct ScanParams {
    pub batch: u32,
    /// Channels D.
    pub d: u32,
    /// Sequence length L.
    pub l: u32,
    /// State size N.
    pub n: u32,
    /// Groups G of B and C (divides D).
    pub groups: u32,
    /// Steps per chunk.
    pub chunk: u32,
    /// ⌈L / chunk⌉.
    pub chunks: u32,
    /// 1: δ = softplus(delta).
    pub softplus: u32,
    /// Invocations the launch needs (set per launch by [`ScanParams::launch`]).
    pub threads: u32,
    pub pad: [u32; 3],
}

impl ScanParams {
    /// Params for u [batch, d, l], A [d, n], B/C with `groups` groups, chunks of `chunk` steps.
    /// Errors when an index the kernels compute would pass u32.
    pub fn new(
        kernel: &'static str,
        [batch, d, l]: [usize; 3],
        n: usize,
        groups: usize,
        chunk: usize,
        softplus: bool,
    ) -> Result<ScanParams, GpuError> {
        if groups == 0 || d % groups != 0 || chunk == 0 {
            return Err(GpuError::Shape {
                kernel,
                shapes: grid::shapes_text(&[&[batch, d, l], &[d, n]]),
                reason: format!("{groups} groups must divide D = {d}, and a chunk must be ≥ 1 step"),
            });
        }
        let u = |what: &'static str, v: u64| grid::fits_u32(kernel, what, v);
        let chunks = l.div_ceil(chunk).max(1) as u64;
        let bd = (batch as u64).saturating_mul(d as u64);
        u("u elements", bd.saturating_mul(l as u64))?;
        u("chunk states", bd.saturating_mul(chunks).saturating_mul(n.max(1) as u64))?;
        u("B elements", (batch as u64).saturating_mul((groups * n) as u64).saturating_mul(l as u64))?;
        Ok(ScanParams {
            batch: u("batch", batch as u64)?,
            d: u("channels", d as u64)?,
            l: u("length", l as u64)?,
            n: u("state size", n as u64)?,
            groups: u("groups", groups as u64)?,
            chunk: u("chunk", chunk as u64)?,
            chunks: u("chunks", chunks)?,
            softplus: u32::from(softplus),
            threads: 0,
            pad: [0; 3],
        })
    }

    /// Bytes of the chunk end states [B, D, chunks, N] and of Σ δ [B, D, chunks].
    pub fn scratch_bytes(&self) -> (u64, u64) {
        let bdc = u64::from(self.batch) * u64::from(self.d) * u64::from(self.chunks);
        (4 * bdc * u64::from(self.n), 4 * bdc)
    }

    /// These params for one launch of `kernel` and its grid: B · D · chunks invocations for
    /// the chunk and out kernels, B · D · N for the carry.
    pub fn launch(&self, kernel: SsmKernel) -> Result<(ScanParams, [u32; 3]), GpuError> {
        let bd = u64::from(self.batch) * u64::from(self.d);
        let (name, threads) = match kernel {
            SsmKernel::ScanCarry => ("ssm_scan_carry", bd * u64::from(self.n)),
            SsmKernel::ScanOut => ("ssm_scan_out", bd * u64::from(self.chunks)),
            _ => ("ssm_scan_chunk", bd * u64::from(self.chunks)),
        };
        let threads32 = grid::fits_u32(name, "invocations", threads)?;
        let grid = grid::linear(name, threads.div_ceil(u64::from(SCAN_GROUP)), SCAN_GROUP)?;
        Ok((ScanParams { threads: threads32, ..*self }, grid))
    }
}

/// Params of the delta-rule kernel, byte-identical to `DeltaRuleParams` in its WGSL.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct DeltaRuleParams {
    pub batch: u32,
    pub l: u32,
    pub h: u32,
    pub k: u32,
    pub v: u32,
    /// 0: write o [B, L, H, V]; 1: write the last state [B, H, K, V].
    pub mode: u32,
    pub scale: f32,
    pub col_blocks: u32,
}

impl DeltaRuleParams {
    /// Params and grid for q [batch, l, h, k], v [.., v]: x over ⌈V / 32⌉ column blocks,
    /// y over B · H. Errors name K past [`DELTA_MAX_K`] and counts past the grid or u32.
    pub fn new(
        [batch, l, h, k]: [usize; 4],
        v: usize,
        scale: f32,
        last_state: bool,
    ) -> Result<(DeltaRuleParams, [u32; 3]), GpuError> {
        const KERNEL: &str = "ssm_delta_rule";
        let u = |what: &'static str, x: u64| grid::fits_u32(KERNEL, what, x);
        if k as u64 > u64::from(DELTA_MAX_K) {
            return Err(GpuError::TooLarge {
                kernel: KERNEL,
                what: "key dim K (the state columns live in shared memory)",
                value: k as u64,
                limit: u64::from(DELTA_MAX_K),
            });
        }
        let steps = (batch as u64).saturating_mul(l as u64).saturating_mul(h as u64);
        u("q elements", steps.saturating_mul(k as u64))?;
        u("v elements", steps.saturating_mul(v as u64))?;
        let bh = (batch as u64).saturating_mul(h as u64);
        u("state elements", bh.saturating_mul((k * v) as u64))?;
        let max = u64::from(grid::MAX_GROUPS_PER_DIM);
        let blocks = (v as u64).div_ceil(u64::from(DELTA_COLS));
        for (what, value) in [("batch · heads", bh), ("column blocks", blocks)] {
            if value > max {
                return Err(GpuError::TooLarge { kernel: KERNEL, what, value, limit: max });
            }
        }
        let p = DeltaRuleParams {
            batch: u("batch", batch as u64)?,
            l: u("length", l as u64)?,
            h: u("heads", h as u64)?,
            k: u("K", k as u64)?,
            v: u("V", v as u64)?,
            mode: u32::from(last_state),
            scale,
            col_blocks: u("column blocks", blocks)?,
        };
        // Both ≤ 65 535 (checked above).
        Ok((p, [blocks as u32, bh as u32, 1]))
    }
}

/// Scan phases 1 and 3, and the delta rule, have six or seven bindings; the carry four.
const CHUNK_BINDINGS: &[Access] =
    &[Access::Read, Access::Read, Access::Read, Access::Read, Access::ReadWrite, Access::ReadWrite];
const CARRY_BINDINGS: &[Access] = &[Access::Read, Access::Read, Access::ReadWrite, Access::ReadWrite];
const OUT_BINDINGS: &[Access] =
    &[Access::Read, Access::Read, Access::Read, Access::Read, Access::Read, Access::Read, Access::ReadWrite];
const DELTA_BINDINGS: &[Access] =
    &[Access::Read, Access::Read, Access::Read, Access::Read, Access::Read, Access::ReadWrite];

pub(crate) fn spec(k: SsmKernel) -> Spec {
    let scan = |kernel: &str, file, source, bindings| Spec {
        name: name(&[kernel, "f32"]),
        file,
        source,
        defines: Vec::new(),
        workgroup_size: [SCAN_GROUP, 1, 1],
        bindings,
        params: params_of::<ScanParams>(),
    };
    match k {
        SsmKernel::ScanChunk => scan(
            "ssm_scan_chunk",
            "kernels/ssm/ssm_scan_chunk.wgsl",
            flat_kernel!("ssm/ssm_scan_chunk.wgsl", "include/ssm_scan_common.wgsl"),
            CHUNK_BINDINGS,
        ),
        SsmKernel::ScanCarry => scan(
            "ssm_scan_carry",
            "kernels/ssm/ssm_scan_carry.wgsl",
            flat_kernel!("ssm/ssm_scan_carry.wgsl", "include/ssm_scan_common.wgsl"),
            CARRY_BINDINGS,
        ),
        SsmKernel::ScanOut => scan(
            "ssm_scan_out",
            "kernels/ssm/ssm_scan_out.wgsl",
            flat_kernel!("ssm/ssm_scan_out.wgsl", "include/ssm_scan_common.wgsl"),
            OUT_BINDINGS,
        ),
        SsmKernel::DeltaRule => Spec {
            name: name(&["ssm_delta_rule", "f32"]),
            file: "kernels/ssm/ssm_delta_rule.wgsl",
            source: kernel_src!("ssm/ssm_delta_rule.wgsl"),
            defines: Vec::new(),
            workgroup_size: [DELTA_COLS, 1, 1],
            bindings: DELTA_BINDINGS,
            params: params_of::<DeltaRuleParams>(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_params_and_grids() {
        let p = ScanParams::new("k", [2, 96, 150], 16, 3, 64, true).unwrap();
        assert_eq!((p.chunks, p.softplus, p.groups), (3, 1, 3));
        let (c, g) = p.launch(SsmKernel::ScanChunk).unwrap();
        assert_eq!((c.threads, g), (2 * 96 * 3, [9, 1, 1]));
        let (c, g) = p.launch(SsmKernel::ScanCarry).unwrap();
        assert_eq!((c.threads, g), (2 * 96 * 16, [48, 1, 1]));
        assert_eq!(p.scratch_bytes(), (4 * 2 * 96 * 3 * 16, 4 * 2 * 96 * 3));
        // L = 0 still has one (empty) chunk, so the last state is written (zeros).
        assert_eq!(ScanParams::new("k", [1, 4, 0], 2, 1, 64, false).unwrap().chunks, 1);
        let e = ScanParams::new("k", [1, 6, 8], 2, 4, 64, false).unwrap_err();
        assert!(matches!(e, GpuError::Shape { .. }), "{e}");
        let e = ScanParams::new("k", [1 << 12, 1 << 12, 1 << 12], 2, 1, 64, false).unwrap_err();
        assert!(matches!(e, GpuError::TooLarge { what: "u elements", .. }), "{e}");
        assert_eq!(std::mem::size_of::<ScanParams>(), 48);
    }

    #[test]
    fn delta_rule_params_and_limits() {
        let (p, g) = DeltaRuleParams::new([2, 5, 3, 16], 40, 0.25, false).unwrap();
        assert_eq!((p.mode, p.col_blocks, g), (0, 2, [2, 6, 1]));
        let e = DeltaRuleParams::new([1, 5, 1, 129], 8, 1.0, true).unwrap_err();
        assert!(matches!(e, GpuError::TooLarge { limit: 128, .. }), "{e}");
        assert_eq!(std::mem::size_of::<DeltaRuleParams>(), 32);
        assert_eq!(SsmKernel::all().len(), 4);
        assert_eq!(spec(SsmKernel::ScanOut).bindings.len(), 7);
    }
}
