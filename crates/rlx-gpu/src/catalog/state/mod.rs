//! Kernel family "state": rows written into a state tensor in place at a run-time offset (a KV
//! cache append, `Op::WriteRows`). Its key ([`StateKernel`]), variant and params
//! ([`params::WriteRowsParams`]). `Op::State` itself launches nothing: it names a buffer.

pub mod params;

use super::{name, params_of, Spec, IN2_OUT};
use params::WriteRowsParams;

const WRITE_ROWS_SRC: &str = flat_kernel!("state/write_rows.wgsl", "include/float_narrow.wgsl");

unit_keys! {
    /// Kernels of the state family.
    pub enum StateKernel {
        /// `write_rows.wgsl`, [`WriteRowsParams`]: rows written into a state in place at a
        /// run-time offset, on words of any type.
        WriteRows,
        /// The same from f32 rows into an f16 state, two rows' values rounded into each word
        /// (a cast f32 → f16 absorbed into the write).
        WriteRowsF16,
        /// The same into a bf16 state.
        WriteRowsBf16,
    }
}

impl StateKernel {
    /// The write that rounds f32 rows into a state of `dtype` as it writes (f16, bf16).
    pub fn narrowing(dtype: rlx_ir::DType) -> Option<Self> {
        match dtype {
            rlx_ir::DType::F16 => Some(StateKernel::WriteRowsF16),
            rlx_ir::DType::BF16 => Some(StateKernel::WriteRowsBf16),
            _ => None,
        }
    }
}

/// The variant of `k`.
pub(crate) fn spec(k: StateKernel) -> Spec {
    let (part, narrow) = match k {
        StateKernel::WriteRows => ("word", "0"),
        StateKernel::WriteRowsF16 => ("f32_to_f16", "1"),
        StateKernel::WriteRowsBf16 => ("f32_to_bf16", "2"),
    };
    Spec::wg256(
        (name(&["write_rows", part]), vec![("NARROW", std::borrow::Cow::Borrowed(narrow))]),
        "kernels/state/write_rows.wgsl",
        WRITE_ROWS_SRC,
        IN2_OUT,
        params_of::<WriteRowsParams>(),
    )
}

/// Every key of this family, in a fixed order.
pub(crate) fn keys() -> Vec<StateKernel> {
    StateKernel::ALL.to_vec()
}
