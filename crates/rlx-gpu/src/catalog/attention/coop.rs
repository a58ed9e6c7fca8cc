//! The cooperative-matrix attention variants (`attention_coop.wgsl`): flash attention with
//! Q·Kᵀ and P·V on tensor cores, one variant per head-dim block ([`CoopHead`]).
//!
//! The geometry reaches the WGSL as the `DH` and `BKV` defines; the numbers below must agree
//! with the kernel's constants (BQ 64, 128 invocations), which a unit test checks.

use super::AttentionParams;
use crate::catalog::matmul::{coop_available, MIN_WIDE_WORKGROUPS};
use crate::catalog::{name, params_of, Spec, ATTENTION_BINDINGS};
use crate::GpuLimits;
use rlx_backend::{KernelOptions, MatmulKernel, Precision};
use std::borrow::Cow;

const COOP_SRC: &str = kernel_src!(
    "attention/attention_coop.wgsl",
    "include/attention_common.wgsl",
    "include/attention_kv_f32.wgsl",
    "include/attention_coop_frags.wgsl"
);
const COOP_KVH_SRC: &str = kernel_src!(
    "attention/attention_coop.wgsl",
    "include/attention_common.wgsl",
    "include/attention_kv_f16.wgsl",
    "include/attention_coop_frags.wgsl"
);

/// Query rows per workgroup of the coop attention kernel (BQ).
pub const COOP_ATTN_ROWS: usize = 64;
/// Invocations per workgroup: 4 subgroups of 32.
const COOP_ATTN_THREADS: u32 = 128;

unit_keys! {
    /// How the coop attention kernel loads q, k and v (the `LW` and `QKV` defines): one f32 at
    /// a time, or four (`vec4<f32>` bindings), which needs every row start divisible by 4.
    pub enum CoopLoads {
        Scalar,
        Vec4,
    }
}

impl CoopLoads {
    /// The widest loads `params` allow: [`CoopLoads::Vec4`] when the head dims and every q, k
    /// and v stride are multiples of 4 (bindings start on 16-byte boundaries), so that each
    /// row of q, k and v starts on a vec4.
    pub fn for_params(params: &AttentionParams) -> Self {
        let p = params;
        let strides = [p.q_strides, p.k_strides, p.v_strides];
        let dims = [p.d, p.dv];
        if strides.iter().flatten().chain(&dims).all(|s| s % 4 == 0) {
            CoopLoads::Vec4
        } else {
            CoopLoads::Scalar
        }
    }

    /// Values per load (`LW`) and the binding element type (`QKV`).
    const fn defines(self) -> (&'static str, &'static str) {
        match self {
            CoopLoads::Scalar => ("1", "f32"),
            CoopLoads::Vec4 => ("4", "vec4<f32>"),
        }
    }
}

unit_keys! {
    /// The head-dim block of the coop attention kernel (the `DH` define): q·k and the output
    /// columns both fit in it.
    pub enum CoopHead {
        D64,
        D128,
    }
}

impl CoopHead {
    pub const fn dim(self) -> u32 {
        match self {
            CoopHead::D64 => 64,
            CoopHead::D128 => 128,
        }
    }

    /// Keys per tile (the `BKV` define). 64-key tiles at head dim 64 (45.5 KiB of workgroup
    /// memory, so fewer workgroups per SM) ran slower on the H200 than 32-key ones: 0.206
    /// against 0.159 ms for b32·h12·s128·d64 and 1.88 against 1.50 ms for b4·h16·s1024·d64.
    pub const fn keys(self) -> u32 {
        32
    }

    /// Workgroup memory in bytes: `kv_sh[2·BKV][DH+8]` halves (the Q block at the start, then
    /// the K and V tiles), `s_sh[64][BKV+4]` floats, `p_sh[64][BKV+8]` halves, `red_sh[128]`
    /// floats, `kvis_sh[BKV]` words and the flags (4 words: the kernel keeps every workgroup
    /// variable in 16-byte units).
    pub const fn shared_bytes(self) -> u32 {
        let (pitch, bkv) = (self.dim() + 8, self.keys());
        2 * bkv * pitch * 2 + 64 * (bkv + 4) * 4 + 64 * (bkv + 8) * 2 + 128 * 4 + bkv * 4 + 16
    }

    /// The smallest block that holds head dims `d` (q·k) and `dv` (values), if one does.
    pub fn for_dims(d: usize, dv: usize) -> Option<Self> {
        Self::ALL.into_iter().find(|h| d.max(dv) <= h.dim() as usize)
    }

    /// The block for head dims `d` and `dv` when a device with `limits` can run the coop
    /// attention under `precision` and the launch (`grid`, the f32 kernel's, for `sq` query
    /// rows) is big enough; the error says why not.
    ///
    /// Below [`MIN_WIDE_WORKGROUPS`] workgroups most of a large GPU idles, and the f32 kernel's
    /// 16-row blocks give it four times as many: on the H200, BERT-base at batch 1 (24 coop
    /// workgroups per attention) ran 2.40 ms with the coop kernel against 2.12 ms without.
    pub fn choose(
        d: usize,
        dv: usize,
        sq: u32,
        grid: [u32; 3],
        limits: &GpuLimits,
        precision: Precision,
    ) -> Result<Self, String> {
        coop_available("attention on cooperative matrices", limits, precision)?;
        let groups = u64::from(sq.div_ceil(COOP_ATTN_ROWS as u32)) * u64::from(grid[1]);
        if groups < MIN_WIDE_WORKGROUPS {
            return Err(format!(
                "attention on cooperative matrices would launch {groups} workgroups, fewer than \
                 the {MIN_WIDE_WORKGROUPS} that keep a large GPU busy"
            ));
        }
        let head = Self::for_dims(d, dv).ok_or_else(|| {
            format!("attention on cooperative matrices holds head dims up to 128, these are {d} and {dv}")
        })?;
        head.fits(limits)
    }

    /// The attention kernel `options` ask for: `Some(block)` for this kernel, `None` for the
    /// f32 one ([`crate::catalog::attention::AttentionKernel::Rows`]).
    ///
    /// A forced matmul kernel ([`KernelOptions::matmul`]) decides attention too, since its two
    /// products are matmuls: [`MatmulKernel::Coop`] takes this kernel wherever the head dims fit
    /// (whatever the launch size; a device or precision without it is the error), the f32
    /// rungs take the f32 kernel. Unforced, [`Self::choose`] decides.
    pub fn select(
        d: usize,
        dv: usize,
        sq: u32,
        grid: [u32; 3],
        limits: &GpuLimits,
        options: &KernelOptions,
    ) -> Result<Option<Self>, String> {
        match options.matmul {
            Some(MatmulKernel::Coop) => {
                coop_available("attention on cooperative matrices", limits, options.precision)?;
                match Self::for_dims(d, dv) {
                    Some(head) => head.fits(limits).map(Some),
                    None => Ok(None),
                }
            }
            Some(MatmulKernel::Tiled64 | MatmulKernel::Reg128) => Ok(None),
            None => Ok(Self::choose(d, dv, sq, grid, limits, options.precision).ok()),
        }
    }

    /// This block, if a device with `limits` has its workgroup memory.
    fn fits(self, limits: &GpuLimits) -> Result<Self, String> {
        let need = self.shared_bytes();
        if need > limits.shared_memory_bytes {
            return Err(format!(
                "attention on cooperative matrices needs {need} bytes of workgroup memory, the \
                 device has {}",
                limits.shared_memory_bytes
            ));
        }
        Ok(self)
    }

    /// Workgroup counts for `sq` query rows and the (batch, head) pairs of `grid` (the f32
    /// kernel's, from [`AttentionParams::new`]): one workgroup per 64 rows, all columns in it.
    pub fn grid(sq: u32, grid: [u32; 3]) -> [u32; 3] {
        [sq.div_ceil(COOP_ATTN_ROWS as u32), grid[1], 1]
    }
}

pub(super) fn spec(head: CoopHead, loads: CoopLoads, kv: super::KvStore) -> Spec {
    let dim = head.dim().to_string();
    let (lw, qkv) = loads.defines();
    let defines = vec![
        ("DH", Cow::Owned(dim.clone())),
        ("BKV", Cow::Owned(head.keys().to_string())),
        ("LW", Cow::Borrowed(lw)),
        ("QKV", Cow::Borrowed(qkv)),
    ];
    let width = match loads {
        CoopLoads::Scalar => "",
        CoopLoads::Vec4 => "_v4",
    };
    Spec {
        name: name(&["attention_coop", &format!("d{dim}{width}"), kv.suffix(), "f32"]),
        file: "kernels/attention/attention_coop.wgsl",
        source: match kv {
            super::KvStore::F32 => COOP_SRC,
            super::KvStore::F16 => COOP_KVH_SRC,
        },
        defines,
        workgroup_size: [COOP_ATTN_THREADS, 1, 1],
        bindings: ATTENTION_BINDINGS,
        params: params_of::<AttentionParams>(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_agrees_with_the_kernel() {
        let src = kernel_src!("attention/attention_coop.wgsl");
        assert!(src.contains("const BQ: u32 = 64u;") && src.contains("const BKV: u32 = {{BKV}}u;"));
        for head in CoopHead::ALL {
            let s = spec(head, CoopLoads::Scalar, super::super::KvStore::F32);
            assert_eq!(s.define("DH"), Some(&*head.dim().to_string()), "{head:?}");
            assert_eq!(s.define("BKV"), Some(&*head.keys().to_string()), "{head:?}");
        }
        assert!(src.contains("@workgroup_size(128, 1, 1)"));
        assert_eq!(COOP_ATTN_ROWS, 64);
        // Both blocks fit the H200's 48 KiB; the wide one does not fit Vulkan's minimum 16 KiB.
        assert_eq!(CoopHead::D128.shared_bytes(), 32_400);
        assert_eq!(CoopHead::D64.shared_bytes(), 24_208);
        // The Q block is staged where the K and V tiles go: BQ = 2·BKV rows.
        for head in CoopHead::ALL {
            assert_eq!(2 * head.keys() as usize, COOP_ATTN_ROWS, "{head:?}");
        }
        assert_eq!(
            spec(CoopHead::D128, CoopLoads::Scalar, super::super::KvStore::F32).name,
            "attention_coop_d128_f32"
        );
        assert_eq!(
            spec(CoopHead::D64, CoopLoads::Vec4, super::super::KvStore::F32).name,
            "attention_coop_d64_v4_f32"
        );
        assert_eq!(
            spec(CoopHead::D64, CoopLoads::Vec4, super::super::KvStore::F32).define("QKV"),
            Some("vec4<f32>")
        );
        let half = spec(CoopHead::D64, CoopLoads::Vec4, super::super::KvStore::F16);
        assert_eq!(half.name, "attention_coop_d64_v4_kvf16_f32");
        assert!(half.source.contains("fn k_load") && half.source.contains("fn halves"));
    }

    #[test]
    fn the_block_holds_both_head_dims() {
        assert_eq!(CoopHead::for_dims(64, 64), Some(CoopHead::D64));
        assert_eq!(CoopHead::for_dims(32, 80), Some(CoopHead::D128));
        assert_eq!(CoopHead::for_dims(128, 1), Some(CoopHead::D128));
        assert_eq!(CoopHead::for_dims(129, 64), None);
    }

    #[test]
    fn choose_names_what_is_missing() {
        let h200 = GpuLimits::hopper();
        // BERT-base at batch 32: 2 query blocks × 384 (batch, head) pairs.
        let bert = (128, [8, 384, 1]);
        let choose = |d, dv, (sq, grid), l: &GpuLimits, p| CoopHead::choose(d, dv, sq, grid, l, p);
        assert_eq!(choose(64, 64, bert, &h200, Precision::Mixed), Ok(CoopHead::D64));
        assert_eq!(choose(128, 128, bert, &h200, Precision::F16), Ok(CoopHead::D128));
        let f32_err = choose(64, 64, bert, &h200, Precision::F32).unwrap_err();
        assert!(f32_err.contains("precision f32"), "{f32_err}");
        let wide = choose(256, 256, bert, &h200, Precision::Mixed).unwrap_err();
        assert!(wide.contains("256"), "{wide}");
        let plain = GpuLimits { cooperative_matrix: false, ..h200.clone() };
        let err = choose(64, 64, bert, &plain, Precision::Mixed).unwrap_err();
        assert!(err.contains("cooperative matri"), "{err}");
        // Batch 1: 2 × 12 workgroups.
        let err = choose(64, 64, (128, [8, 12, 1]), &h200, Precision::Mixed).unwrap_err();
        assert!(err.contains("24 workgroups"), "{err}");
        let small = GpuLimits { shared_memory_bytes: 24 * 1024, ..h200 };
        let err = choose(128, 128, bert, &small, Precision::Mixed).unwrap_err();
        assert!(err.contains("32400"), "{err}");
    }

    #[test]
    fn a_forced_matmul_kernel_decides_attention_too() {
        let h200 = GpuLimits::hopper();
        let opts = |precision, matmul| KernelOptions { precision, matmul };
        let batch1 = (128, [8, 12, 1]);
        let select =
            |d, dv, (sq, grid), l: &GpuLimits, o: KernelOptions| CoopHead::select(d, dv, sq, grid, l, &o);
        let coop = opts(Precision::Mixed, Some(MatmulKernel::Coop));
        // Forced: even a small launch; head dims past 128 take the f32 kernel.
        assert_eq!(select(64, 64, batch1, &h200, coop), Ok(Some(CoopHead::D64)));
        assert_eq!(select(256, 256, batch1, &h200, coop), Ok(None));
        // Unforced, the small launch takes the f32 kernel; forced f32 rungs always do.
        assert_eq!(select(64, 64, batch1, &h200, opts(Precision::Mixed, None)), Ok(None));
        let bert = (128, [8, 384, 1]);
        assert_eq!(select(64, 64, bert, &h200, opts(Precision::Mixed, None)), Ok(Some(CoopHead::D64)));
        let reg = opts(Precision::Mixed, Some(MatmulKernel::Reg128));
        assert_eq!(select(64, 64, bert, &h200, reg), Ok(None));
        // A device or precision without it is an error only when forced.
        let lavapipe = GpuLimits::lavapipe();
        assert!(select(64, 64, bert, &lavapipe, coop).unwrap_err().contains("cooperative matri"));
        assert_eq!(select(64, 64, bert, &lavapipe, opts(Precision::Mixed, None)), Ok(None));
        let f32_coop = opts(Precision::F32, Some(MatmulKernel::Coop));
        assert!(select(64, 64, bert, &h200, f32_coop).unwrap_err().contains("precision f32"));
    }
}
