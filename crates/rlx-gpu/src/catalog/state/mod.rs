//! Kernel family "state": rows written into a state tensor in place at a run-time offset (a KV
//! cache append, `Op::WriteRows`). Its key ([`StateKernel`]), variant and params
//! ([`params::WriteRowsParams`]). `Op::State` itself launches nothing: it names a buffer.

pub mod params;

use super::{name, params_of, Spec, IN2_OUT};
use params::WriteRowsParams;

const WRITE_ROWS_SRC: &str = flat_kernel!("state/write_rows.wgsl");

unit_keys! {
    /// Kernels of the state family.
    pub enum StateKernel {
        /// `write_rows.wgsl`, [`WriteRowsParams`]: rows written into a state in place at a
        /// run-time offset, on words of any type.
        WriteRows,
    }
}

/// The variant of `k`.
pub(crate) fn spec(k: StateKernel) -> Spec {
    match k {
        StateKernel::WriteRows => Spec::wg256(
            (name(&["write_rows", "word"]), Vec::new()),
            "kernels/state/write_rows.wgsl",
            WRITE_ROWS_SRC,
            IN2_OUT,
            params_of::<WriteRowsParams>(),
        ),
    }
}

/// Every key of this family, in a fixed order.
pub(crate) fn keys() -> Vec<StateKernel> {
    StateKernel::ALL.to_vec()
}
