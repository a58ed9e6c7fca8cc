//! The GPU capability policy, and what a failed lowering means to the user. Both drivers take
//! their [`Capabilities`] from [`capabilities`] and map every [`GpuError`] with
//! [`backend_error`], so they cannot disagree.

use crate::schedule::GpuLimits;
use crate::GpuError;
use rlx_backend::{BackendError, Capabilities, DType, FusionLimits, OpKind};

/// Ops rlx-opt must decompose for every GPU: they have no kernel of their own.
pub const DECOMPOSED: [OpKind; 3] = [OpKind::Conv2d, OpKind::Pool2d, OpKind::Upsample2x];

/// What one generated fused elementwise kernel takes (`lower/fused.rs`): seven inputs (eight
/// storage bindings with the output, WebGPU's default per stage) and 64 program words.
pub const FUSION_LIMITS: FusionLimits = FusionLimits {
    max_inputs: crate::lower::fused::FUSED_MAX_INPUTS,
    max_words: crate::lower::fused::FUSED_MAX_WORDS,
};

/// Dtypes GPUs store, each at its own size (see [`crate::convert`]); F16 only where
/// [`GpuLimits::shader_f16`] holds.
pub const STORED_DTYPES: [DType; 7] =
    [DType::F32, DType::F16, DType::BF16, DType::I32, DType::U32, DType::U8, DType::Bool];

/// Dtypes GPU kernels compute on: 32-bit words (Bool as a u32 word). The others are stored
/// only; the cast kernels convert between every stored dtype, and rlx-opt wraps every other
/// op on them in casts to f32 or i32.
pub const COMPUTE_DTYPES: [DType; 4] = [DType::F32, DType::I32, DType::U32, DType::Bool];

/// What a device without [`GpuLimits::shader_f16`] lacks for f16 tensors, as errors name it.
pub const F16_FEATURE: &str = "f16 storage (shaderFloat16 / storageBuffer16BitAccess)";

/// What rlx-opt may leave in a graph for a GPU with these limits.
///
/// Why F16 needs the f16 feature and BF16 and U8 need none: bf16 and u8 have no WGSL type, so
/// every kernel that touches them reads packed u32 words and converts by shifting, which any
/// device runs. F16 is offered only where shaders can use `f16` itself, so that kernels taking
/// f16 operands as `array<f16>` (the cooperative-matrix matmul rung) may rely on it wherever an
/// f16 tensor exists. (The cast kernels read f16 as packed words too and need no feature.)
pub fn capabilities(device_name: &str, limits: &GpuLimits) -> Capabilities {
    let stored = |d: &DType| *d != DType::F16 || limits.shader_f16;
    let missing = (!limits.shader_f16).then(|| (DType::F16, F16_FEATURE.to_string()));
    Capabilities {
        device_name: device_name.to_string(),
        native_ops: Capabilities::all_ops().into_iter().filter(|k| !DECOMPOSED.contains(k)).collect(),
        dtypes: STORED_DTYPES.into_iter().filter(stored).collect(),
        compute_dtypes: COMPUTE_DTYPES.into_iter().collect(),
        missing_dtype_features: missing.into_iter().collect(),
        packed_rows: true,
        half_kv_attention: true,
        native_broadcast: true,
        buffer_alignment: usize::try_from(limits.alignment()).unwrap_or(usize::MAX),
        max_tensor_bytes: limits.max_binding_bytes,
        fusion_limits: Some(FUSION_LIMITS),
        composed_at_f32: [OpKind::AttentionGrad].into(),
    }
}

/// The rlx error a lowering failure means on `device`.
pub fn backend_error(device: &str, e: GpuError) -> BackendError {
    let device = device.to_string();
    match e {
        GpuError::TooLarge { kernel, what, value, limit } => BackendError::LimitExceeded {
            device,
            what,
            node: kernel.to_string(),
            requested: value,
            limit,
            hint: "split the op into smaller parts (a smaller batch or sequence)".into(),
        },
        GpuError::TensorTooLarge { node, bytes, limit } => BackendError::LimitExceeded {
            device,
            what: "tensor bytes (one storage binding)",
            node,
            requested: bytes,
            limit,
            hint: "split the tensor (a smaller batch or sequence) so that each fits one binding".into(),
        },
        GpuError::Lowering { node, reason } => BackendError::Unsupported { op: node, device, reason },
        GpuError::Shape { kernel, shapes, reason } => BackendError::Unsupported {
            op: kernel.to_string(),
            device,
            reason: format!("{shapes}: {reason}"),
        },
        // Kernel-source errors: a bug in rlx-gpu's catalogue, not in the user's graph.
        other @ (GpuError::MissingDefine { .. }
        | GpuError::UnterminatedPlaceholder { .. }
        | GpuError::MultiLineDefine { .. }) => {
            BackendError::Driver { device, scope: "preparing a kernel".into(), reason: other.to_string() }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(align: u64) -> GpuLimits {
        GpuLimits {
            max_binding_bytes: 2 << 30,
            min_offset_alignment: align,
            subgroup_size: 32,
            ..GpuLimits::lavapipe()
        }
    }

    #[test]
    fn capabilities_follow_the_gpu_policy() {
        let caps = capabilities("dev", &limits(32));
        for k in DECOMPOSED {
            assert!(!caps.supports(k), "{k:?}");
        }
        for k in [OpKind::MatMul, OpKind::FusedMatMul, OpKind::AddNorm, OpKind::Attention, OpKind::TopK] {
            assert!(caps.supports(k), "{k:?}");
        }
        assert_eq!(caps.native_ops.len(), Capabilities::all_ops().len() - 3);
        assert!(caps.supports(OpKind::FusedElementwise) && caps.fusion_limits == Some(FUSION_LIMITS));
        assert_eq!(caps.dtypes.len(), 7);
        assert!(caps.compute_dtypes.iter().all(|d| caps.dtypes.contains(d)));
        for d in [DType::F16, DType::BF16, DType::U8] {
            assert!(caps.dtypes.contains(&d) && !caps.compute_dtypes.contains(&d), "{d}");
        }
        assert!(caps.missing_dtype_features.is_empty());
        assert!(caps.native_broadcast);
        assert_eq!((caps.buffer_alignment, caps.max_tensor_bytes), (32, 2 << 30));
    }

    #[test]
    fn f16_needs_the_f16_feature_and_bf16_and_u8_nothing() {
        let caps = capabilities("dev", &GpuLimits { shader_f16: false, ..limits(16) });
        assert!(!caps.dtypes.contains(&DType::F16));
        assert!(caps.dtypes.contains(&DType::BF16) && caps.dtypes.contains(&DType::U8));
        let why = caps.missing_dtype_features.get(&DType::F16).unwrap();
        assert!(why.contains("shaderFloat16") && why.contains("storageBuffer16BitAccess"), "{why}");
    }

    #[test]
    fn alignment_is_at_least_16_and_a_power_of_two() {
        assert_eq!(limits(1).alignment(), 16);
        assert_eq!(limits(4).alignment(), 16);
        assert_eq!(limits(64).alignment(), 64);
        assert_eq!(limits(48).alignment(), 64);
        assert_eq!(capabilities("d", &limits(256)).buffer_alignment, 256);
    }

    #[test]
    fn errors_map_to_what_they_mean() {
        let e =
            backend_error("gpu", GpuError::Shape { kernel: "k", shapes: "[2]".into(), reason: "r".into() });
        assert!(matches!(e, BackendError::Unsupported { .. }), "{e}");
        let e = backend_error("gpu", GpuError::TooLarge { kernel: "k", what: "w", value: 9, limit: 8 });
        assert!(matches!(e, BackendError::LimitExceeded { requested: 9, limit: 8, .. }), "{e}");
        let e = backend_error(
            "gpu",
            GpuError::TensorTooLarge { node: "%3 add f32[9]".into(), bytes: 36, limit: 8 },
        );
        assert!(e.to_string().contains("%3 add"), "{e}");
        let e = backend_error("gpu", GpuError::Lowering { node: "%1".into(), reason: "r".into() });
        assert!(matches!(e, BackendError::Unsupported { .. }), "{e}");
        let e = backend_error("gpu", GpuError::UnterminatedPlaceholder { line: 3 });
        assert!(matches!(e, BackendError::Driver { .. }), "{e}");
    }
}
