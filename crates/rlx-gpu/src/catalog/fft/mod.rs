//! Kernel family "fft": Fourier transforms of complex rows (`Op::Fft`), `kernels/fft/fft_radix2.wgsl`.
//! One workgroup transforms [`FftParams::per_group`] whole rows in shared memory (radix-2,
//! twiddles computed exactly in the kernel). Bindings x (read), out (read_write).

use super::{name, params_of, Spec, IN_OUT};
use crate::grid;
use crate::GpuError;
use bytemuck::{Pod, Zeroable};
use rlx_ir::FFT_NATIVE_MAX;

const KERNEL: &str = "fft_radix2";

/// Complex values one workgroup holds in shared memory (NMAX in the kernel).
pub const FFT_GROUP_ELEMS: usize = FFT_NATIVE_MAX;

/// Params of `fft_radix2.wgsl`, byte-identical to `FftParams` there.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct FftParams {
    /// Row length N (a power of two ≤ [`FFT_GROUP_ELEMS`]).
    pub n: u32,
    /// log₂ N.
    pub log2n: u32,
    /// Rows in the tensor.
    pub rows: u32,
    /// Rows per workgroup: [`FFT_GROUP_ELEMS`] / N.
    pub per_group: u32,
    /// 1 for the inverse transform (+ sign, × 1/N).
    pub inverse: u32,
    pub pad: [u32; 3],
}

impl FftParams {
    /// Params and workgroup counts for `rows` rows of `n` complex values. Errors when n is not a
    /// power of two up to [`FFT_GROUP_ELEMS`] (the IR never lets that through) or the element
    /// count passes u32.
    pub fn new(rows: usize, n: usize, inverse: bool) -> Result<(FftParams, [u32; 3]), GpuError> {
        if !n.is_power_of_two() || n > FFT_GROUP_ELEMS {
            return Err(GpuError::Shape {
                kernel: KERNEL,
                shapes: grid::shapes_text(&[&[rows, n, 2]]),
                reason: format!("rows must have a power-of-two length up to {FFT_GROUP_ELEMS}"),
            });
        }
        grid::fits_u32(KERNEL, "complex elements", (rows as u64).saturating_mul(n as u64))?;
        let per_group = FFT_GROUP_ELEMS / n;
        let groups = rows.div_ceil(per_group) as u64;
        let p = FftParams {
            n: n as u32,
            log2n: n.trailing_zeros(),
            rows: rows as u32,
            per_group: per_group as u32,
            inverse: u32::from(inverse),
            pad: [0; 3],
        };
        Ok((p, grid::linear(KERNEL, groups, 256)?))
    }
}

unit_keys! {
    /// Kernels of the fft family.
    pub enum FftKernel {
        /// Radix-2 transforms of f32 complex rows in shared memory ([`FftParams`]).
        Radix2F32,
    }
}

/// Every key of this family, in a fixed order.
pub(crate) fn keys() -> Vec<FftKernel> {
    FftKernel::ALL.to_vec()
}

/// The variant of `k`.
pub(crate) fn spec(k: FftKernel) -> Spec {
    let FftKernel::Radix2F32 = k;
    Spec::wg256(
        (name(&["fft_radix2", "f32"]), Vec::new()),
        "kernels/fft/fft_radix2.wgsl",
        kernel_src!("fft/fft_radix2.wgsl"),
        IN_OUT,
        params_of::<FftParams>(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_pack_into_workgroups() {
        let (p, grid) = FftParams::new(3, 2048, true).unwrap();
        assert_eq!((p.n, p.log2n, p.rows, p.per_group, p.inverse), (2048, 11, 3, 1, 1));
        assert_eq!(grid, [3, 1, 1]);
        let (p, grid) = FftParams::new(1000, 8, false).unwrap();
        assert_eq!((p.log2n, p.per_group, p.inverse), (3, 256, 0));
        assert_eq!(grid, [4, 1, 1]);
        let (p, _) = FftParams::new(5, 1, false).unwrap();
        assert_eq!((p.log2n, p.per_group), (0, 2048));
        assert!(matches!(FftParams::new(2, 12, false), Err(GpuError::Shape { .. })));
        assert!(matches!(FftParams::new(2, 4096, false), Err(GpuError::Shape { .. })));
        assert_eq!(std::mem::size_of::<FftParams>(), 32);
    }

    #[test]
    fn the_kernel_holds_one_group_of_elements() {
        let src = spec(FftKernel::Radix2F32).source;
        assert!(src.contains(&format!("const NMAX: u32 = {FFT_GROUP_ELEMS}u;")));
        assert_eq!(spec(FftKernel::Radix2F32).name, "fft_radix2_f32");
    }
}
