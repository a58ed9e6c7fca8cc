//! What a backend can do, probed once and converted once.

use rlx_ir::{DType, EwProgram, EwStep, OpKind};
use std::collections::{BTreeMap, BTreeSet};

/// A backend's abilities, as the optimizer and the runtime need them.
#[derive(Clone, Debug, PartialEq)]
pub struct Capabilities {
    /// Human-readable device name ("cpu (16 threads)", "NVIDIA H100 80GB HBM3", …).
    pub device_name: String,
    /// Ops the backend runs natively. rlx-opt's legalize decomposes every other op into these,
    /// or fails with `Unsupported` naming the op.
    pub native_ops: BTreeSet<OpKind>,
    /// Element types the backend stores: inputs, params, constants and outputs may have them.
    pub dtypes: BTreeSet<DType>,
    /// Element types the backend's kernels compute on (a subset of `dtypes`). A stored dtype
    /// missing here (f16, bf16 and u8 on GPUs, whose kernels work on 32-bit words) is only
    /// moved in and out of storage by casts: rlx-opt's dtype legalization rewrites every op that
    /// reads or writes it into a cast to its compute dtype ([`Capabilities::compute_dtype`]),
    /// the op, and a cast back, so the graph keeps its declared dtypes and the values are
    /// those of the CPU, which computes every dtype.
    pub compute_dtypes: BTreeSet<DType>,
    /// Dtypes missing from `dtypes` only because this device lacks a feature the backend needs
    /// for them, with that feature's name (f16 on a GPU without shaderFloat16: "f16 storage
    /// (shaderFloat16 / storageBuffer16BitAccess)"). Errors about such a dtype name the feature.
    pub missing_dtype_features: BTreeMap<DType, String>,
    /// Moves rows of 2-byte elements (f16, bf16) as they are stored, when a row (the elements
    /// after the op's axis) holds an even count of them: 32-bit words then move whole, and
    /// rlx-opt leaves the op unwidened. Gathers (an embedding lookup in an f16 table no longer
    /// widens the table) and state row writes (a KV cache held in f16 takes its new rows
    /// without a round trip through f32). [`Capabilities::moves_packed_rows`] is the rule.
    pub packed_rows: bool,
    /// Attention reads k and v stored as f16 under queries of a dtype it computes (a KV cache
    /// held in f16): rlx-opt leaves those two operands as they are instead of widening them,
    /// which would copy the whole cache to f32 every step.
    pub half_kv_attention: bool,
    /// Binary/compare/where ops broadcast their operands themselves. When false, legalize makes
    /// every broadcast an explicit `Expand`.
    pub native_broadcast: bool,
    /// Offsets of planned buffers are multiples of this (a power of two).
    pub buffer_alignment: usize,
    /// Largest single tensor in bytes (one storage binding on GPUs, the machine's memory on the
    /// CPU), counted as [`rlx_ir::TensorType::storage_bytes`] does (Bool as 4 bytes). rlx-opt's
    /// pipeline refuses a graph holding a bigger tensor. Every tensor is also bounded by
    /// [`rlx_ir::MAX_TENSOR_BYTES`] when it is built, whatever this says.
    pub max_tensor_bytes: u64,
    /// What one `FusedElementwise` node may hold on this device, when it runs them
    /// (`None`: no limit). rlx-opt's fusion builds only nodes within it, and legalize
    /// decomposes a given node past it.
    pub fusion_limits: Option<FusionLimits>,
    /// Native ops that this device runs faster as their decomposition at
    /// [`Precision::F32`](crate::Precision::F32), where its fast kernels for them (tensor
    /// cores) do not apply: [`Capabilities::for_precision`] leaves them out of `native_ops`
    /// there, so rlx-opt decomposes them. GPUs list `AttentionGrad`: its f32 kernel is slower
    /// than the composed gradient on the f32 matmul rungs (measured on the H100: a MiniLM
    /// fine-tune step 7 % slower), while at mixed precision the tensor-core kernel is faster.
    pub composed_at_f32: BTreeSet<OpKind>,
}

/// The most a device's fused elementwise kernel takes in one launch (a GPU's program travels
/// in its push constants, and its inputs are storage bindings).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FusionLimits {
    /// Inputs (storage bindings besides the output).
    pub max_inputs: usize,
    /// Program words: its scalar steps and its op steps (unary, binary, where) together.
    pub max_words: usize,
}

impl FusionLimits {
    /// The words `prog` takes: one per scalar and per op step (inputs are free).
    pub fn words(prog: &EwProgram) -> usize {
        prog.steps.iter().filter(|s| !matches!(s, EwStep::Input(_))).count()
    }

    /// Whether a fused node of `prog` over inputs of `shapes`, with output `out`, fits: at
    /// least one input (a node of scalars alone is a constant) but few enough, few enough
    /// words, and every input read as one run of the output's dims
    /// ([`rlx_ir::infer::broadcast_run`]: a scalar, a row, a column or the whole tensor).
    pub fn admits(&self, prog: &EwProgram, shapes: &[&[usize]], out: &[usize]) -> bool {
        !shapes.is_empty()
            && shapes.len() <= self.max_inputs
            && Self::words(prog) <= self.max_words
            && shapes.iter().all(|s| rlx_ir::infer::broadcast_run(out, s).is_some())
    }
}

impl Capabilities {
    /// Every op kind rlx has, fused forms included.
    pub fn all_ops() -> BTreeSet<OpKind> {
        OpKind::all().collect()
    }

    /// A backend that runs everything natively, with no size limit of its own
    /// (`max_tensor_bytes` = `u64::MAX`). The CPU backend starts from this and sets
    /// `max_tensor_bytes` to the machine's memory; tests use it as a permissive device.
    pub fn everything(device_name: impl Into<String>) -> Self {
        Capabilities {
            device_name: device_name.into(),
            native_ops: Self::all_ops(),
            dtypes: DType::ALL.into_iter().collect(),
            compute_dtypes: DType::ALL.into_iter().collect(),
            missing_dtype_features: BTreeMap::new(),
            // A device that computes every dtype never needs them.
            packed_rows: false,
            half_kv_attention: false,
            native_broadcast: true,
            buffer_alignment: 64,
            max_tensor_bytes: u64::MAX,
            fusion_limits: None,
            composed_at_f32: BTreeSet::new(),
        }
    }

    /// These capabilities as a compile at `precision` should see them: at
    /// [`Precision::F32`](crate::Precision::F32) without the ops of
    /// [`Self::composed_at_f32`].
    pub fn for_precision(&self, precision: crate::Precision) -> std::borrow::Cow<'_, Capabilities> {
        if precision != crate::Precision::F32 || self.composed_at_f32.is_empty() {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut caps = self.clone();
        for k in &self.composed_at_f32 {
            caps.native_ops.remove(k);
        }
        std::borrow::Cow::Owned(caps)
    }

    /// Whether this device moves the rows of this very node as stored words (see
    /// [`Capabilities::packed_rows`]); `inputs` are the node's operand types.
    pub fn is_packed_rows(&self, op: &rlx_ir::Op, inputs: &[&rlx_ir::TensorType]) -> bool {
        self.packed_rows && Self::moves_packed_rows(op, inputs)
    }

    /// The rule itself, whatever the device: `op` is a gather of rows of `inputs[0]`, or a
    /// row write of `inputs[1]` into the state `inputs[0]` of the same dtype, where a row is
    /// an even count of 2-byte elements. A backend with `packed_rows` lowers exactly these as
    /// words.
    pub fn moves_packed_rows(op: &rlx_ir::Op, inputs: &[&rlx_ir::TensorType]) -> bool {
        let (axis, data) = match (op, inputs) {
            (rlx_ir::Op::Gather { axis }, [data, ..]) => (*axis, *data),
            (rlx_ir::Op::WriteRows { axis }, [state, rows, ..]) if state.dtype == rows.dtype => {
                (*axis, *state)
            }
            _ => return false,
        };
        let inner: usize = data.shape.dims().iter().skip(axis + 1).product();
        data.dtype.storage_bytes() == 2 && inner.is_multiple_of(2)
    }

    /// Whether operand `j` (of type `input`) of `op` stays in its stored dtype on this device,
    /// its kernel reading it as stored: the packed blocks of a quantized op
    /// ([`rlx_ir::Op::packed_operand`]), and f16 keys and values of an attention where the
    /// device has [`Capabilities::half_kv_attention`].
    pub fn reads_as_stored(&self, op: &rlx_ir::Op, j: usize, input: &rlx_ir::TensorType) -> bool {
        Self::read_as_stored_with(op, j, input, self.half_kv_attention)
    }

    /// [`Self::reads_as_stored`] for a device that has `half_kv_attention` or not (for a
    /// backend's lowering, which knows its own abilities).
    pub fn read_as_stored_with(
        op: &rlx_ir::Op,
        j: usize,
        input: &rlx_ir::TensorType,
        half_kv_attention: bool,
    ) -> bool {
        op.packed_operand() == Some(j)
            || (half_kv_attention
                && matches!(op, rlx_ir::Op::Attention(_))
                && (j == 1 || j == 2)
                && input.dtype == DType::F16)
    }

    pub fn supports(&self, kind: OpKind) -> bool {
        self.native_ops.contains(&kind)
    }

    /// Whether the device runs this very node natively: [`Self::supports`] its kind, and for
    /// a fused elementwise node, the program and input shapes fit [`Self::fusion_limits`].
    pub fn runs(&self, op: &rlx_ir::Op, inputs: &[&[usize]], out: &[usize]) -> bool {
        if !self.supports(op.kind()) {
            return false;
        }
        match (op, &self.fusion_limits) {
            (rlx_ir::Op::FusedElementwise(prog), Some(limits)) => limits.admits(prog, inputs, out),
            _ => true,
        }
    }

    /// The dtype an op on `dtype` values computes in on this backend: `dtype` itself when the
    /// backend computes it, else the wider type that holds every value exactly and computes the
    /// same results once rounded back (f16 and bf16 → f32; u8 → i32, whose arithmetic on
    /// 0..=255 does not wrap before the saturating cast back). `None` when that one is missing
    /// too.
    pub fn compute_dtype(&self, dtype: DType) -> Option<DType> {
        let wide = match dtype {
            d if self.compute_dtypes.contains(&d) => return Some(d),
            DType::F16 | DType::BF16 => DType::F32,
            DType::U8 => DType::I32,
            _ => return None,
        };
        self.compute_dtypes.contains(&wide).then_some(wide)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f32_compiles_decompose_what_the_device_composes_better_there() {
        let mut caps = Capabilities::everything("gpu");
        assert!(matches!(caps.for_precision(crate::Precision::F32), std::borrow::Cow::Borrowed(_)));
        caps.composed_at_f32.insert(OpKind::AttentionGrad);
        let f32 = caps.for_precision(crate::Precision::F32);
        assert!(!f32.supports(OpKind::AttentionGrad) && f32.supports(OpKind::Attention));
        assert_eq!(f32.native_ops.len(), caps.native_ops.len() - 1);
        for p in [crate::Precision::Mixed, crate::Precision::F16] {
            assert!(caps.for_precision(p).supports(OpKind::AttentionGrad), "{p:?}");
        }
    }

    #[test]
    fn compute_dtypes_widen_what_is_only_stored() {
        let mut caps = Capabilities::everything("dev");
        assert_eq!(caps.compute_dtype(DType::BF16), Some(DType::BF16));
        for d in [DType::F16, DType::BF16, DType::U8] {
            caps.compute_dtypes.remove(&d);
        }
        assert_eq!(caps.compute_dtype(DType::F16), Some(DType::F32));
        assert_eq!(caps.compute_dtype(DType::BF16), Some(DType::F32));
        assert_eq!(caps.compute_dtype(DType::U8), Some(DType::I32));
        assert_eq!(caps.compute_dtype(DType::Bool), Some(DType::Bool));
        caps.compute_dtypes.remove(&DType::I32);
        assert_eq!(caps.compute_dtype(DType::U8), None);
    }
}
