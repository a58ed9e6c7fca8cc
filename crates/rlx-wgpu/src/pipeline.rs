//! Compute pipelines of rlx-gpu's kernel variants. Params travel as immediates when the device
//! has them and they are large enough for the variant's params struct, else as a uniform
//! buffer bound after the storage bindings.
//!
//! Read-only inputs in the same buffer as an output: wgpu tracks usage per buffer, not per
//! range, and refuses a dispatch that uses one buffer both as read-only and as read-write
//! storage, even at disjoint ranges. Intermediates share one arena, so a step that reads the
//! arena and writes it needs those inputs declared `read_write`. [`Writable`] says which
//! inputs of a step are in that case; their declarations are rewritten in the WGSL and their
//! layout entries made writable. Inputs in other buffers (weights, graph inputs) stay
//! read-only. Same-buffer read-write uses in consecutive dispatches get a barrier from wgpu.

use crate::context::Context;
use rlx_backend::BackendError;
use rlx_gpu::{Access, BufferId, KernelVariant, Operand, ParamsBinding, ENTRY_POINT};
use std::borrow::Cow;
use std::num::NonZeroU64;

/// One kernel variant, built for one device.
pub(crate) struct Pipeline {
    pub params: ParamsBinding,
    pub layout: wgpu::BindGroupLayout,
    pub pipeline: wgpu::ComputePipeline,
}

/// A set of binding indices (bit i = binding i) of inputs bound as read-write storage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Writable(pub u32);

impl Writable {
    /// The inputs of a step that share a buffer with one of its outputs.
    pub(crate) fn of_step(access: &[Access], operands: &[Operand]) -> Self {
        let written: Vec<BufferId> = access
            .iter()
            .zip(operands)
            .filter(|(a, _)| **a == Access::ReadWrite)
            .map(|(_, o)| o.buffer)
            .collect();
        let mut mask = 0;
        for (i, (a, o)) in access.iter().zip(operands).enumerate() {
            if *a == Access::Read && written.contains(&o.buffer) && i < 32 {
                mask |= 1 << i;
            }
        }
        Writable(mask)
    }

    pub(crate) fn contains(self, binding: usize) -> bool {
        binding < 32 && self.0 & (1 << binding) != 0
    }
}

/// `source` with the storage declarations of the bindings in `writable` changed from `read` to
/// `read_write`. Each must be declared exactly once as `@binding(i) var<storage, read>`.
pub(crate) fn make_writable(source: &str, writable: Writable) -> Result<String, String> {
    let mut out = source.to_string();
    for i in (0..32).filter(|&i| writable.contains(i)) {
        let from = format!("@binding({i}) var<storage, read>");
        if out.matches(&from).count() != 1 {
            return Err(format!("binding {i} is not declared once as `{from}`"));
        }
        out = out.replacen(&from, &format!("@binding({i}) var<storage, read_write>"), 1);
    }
    Ok(out)
}

/// How `variant`'s params travel on a device with `max_immediate_size` bytes of immediates
/// (0 without the feature).
pub(crate) fn params_binding(variant: &KernelVariant, max_immediate_size: u32) -> ParamsBinding {
    if variant.params_size <= max_immediate_size {
        ParamsBinding::Immediate
    } else {
        ParamsBinding::Uniform { binding: variant.uniform_params_binding() }
    }
}

impl Pipeline {
    /// Builds the pipeline; errors surface through the caller's error scope.
    pub(crate) fn new(
        ctx: &Context,
        variant: KernelVariant,
        writable: Writable,
    ) -> Result<Self, BackendError> {
        let device = &ctx.device;
        let params = params_binding(&variant, ctx.granted.max_immediate_size);
        let refuse = |reason: String| BackendError::Driver {
            device: ctx.name().to_string(),
            scope: format!("preparing kernel {} ({})", variant.name, variant.file),
            reason,
        };
        let source = variant.wgsl(params).map_err(|e| refuse(e.to_string()))?;
        let source = make_writable(&source, writable).map_err(refuse)?;
        let desc = wgpu::ShaderModuleDescriptor {
            label: Some(variant.name),
            source: wgpu::ShaderSource::Wgsl(Cow::Owned(source)),
        };
        let module = if ctx.runtime_checks {
            device.create_shader_module(desc)
        } else {
            // SAFETY: rlx-gpu's kernels index only within the sizes their params constructors
            // checked against the bindings (see rlx-gpu's contract) and every loop is bounded
            // by params; the caller opted out of wgpu's runtime checks (WgpuOptions).
            unsafe { device.create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked()) }
        };

        let mut entries: Vec<wgpu::BindGroupLayoutEntry> = variant
            .bindings
            .iter()
            .enumerate()
            .map(|(i, access)| wgpu::BindGroupLayoutEntry {
                binding: i as u32,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Storage {
                        read_only: *access == Access::Read && !writable.contains(i),
                    },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            })
            .collect();
        let mut immediate_size = 0;
        match params {
            ParamsBinding::Immediate => immediate_size = variant.params_size,
            ParamsBinding::Uniform { binding } => entries.push(wgpu::BindGroupLayoutEntry {
                binding,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Uniform,
                    has_dynamic_offset: false,
                    min_binding_size: NonZeroU64::new(u64::from(variant.params_size)),
                },
                count: None,
            }),
        }
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some(variant.name),
            entries: &entries,
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(variant.name),
            bind_group_layouts: &[Some(&layout)],
            immediate_size,
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(variant.name),
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some(ENTRY_POINT),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants: &[],
                // Every kernel writes its shared memory before reading it (as on the native
                // Vulkan path, which does not zero it either): zeroing would be wasted time.
                zero_initialize_workgroup_memory: false,
            },
            cache: None,
        });
        Ok(Pipeline { params, layout, pipeline })
    }

    /// Whether params are set with `set_immediates` (else they live in a uniform buffer).
    pub(crate) fn uses_immediates(&self) -> bool {
        self.params == ParamsBinding::Immediate
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rlx_gpu::KernelKey;

    fn op(buffer: BufferId, offset: u64) -> Operand {
        Operand { buffer, offset, size: 16 }
    }

    #[test]
    fn inputs_sharing_a_buffer_with_an_output_become_writable() {
        let (r, w) = (Access::Read, Access::ReadWrite);
        // a and out in the arena, b a weight: only a must be writable.
        let ops = [op(BufferId::Arena, 0), op(BufferId::Leaf(1), 0), op(BufferId::Arena, 64)];
        let m = Writable::of_step(&[r, r, w], &ops);
        assert_eq!(m, Writable(0b001));
        assert!(m.contains(0) && !m.contains(1) && !m.contains(2) && !m.contains(40));
        // Everything in distinct buffers: nothing changes.
        let ops = [op(BufferId::Leaf(0), 0), op(BufferId::Leaf(1), 0), op(BufferId::Scratch(0), 0)];
        assert_eq!(Writable::of_step(&[r, r, w], &ops), Writable(0));
        // Two outputs, one shared with an input in scratch.
        let ops = [op(BufferId::Scratch(2), 0), op(BufferId::Arena, 0), op(BufferId::Scratch(2), 32)];
        assert_eq!(Writable::of_step(&[r, w, w], &ops), Writable(0b001));
    }

    #[test]
    fn every_input_of_every_kernel_can_be_made_writable_and_still_validates() {
        use naga::valid::{Capabilities, ValidationFlags, Validator};
        for v in rlx_gpu::variants() {
            let src = v.wgsl(ParamsBinding::Immediate).unwrap();
            let all =
                v.bindings.iter().enumerate().filter(|(_, a)| **a == Access::Read).map(|(i, _)| 1u32 << i);
            let mask = Writable(all.fold(0, |m, b| m | b));
            let out = make_writable(&src, mask).unwrap_or_else(|e| panic!("{}: {e}", v.name));
            let module = naga::front::wgsl::parse_str(&out).unwrap_or_else(|e| panic!("{}: {e}", v.name));
            Validator::new(ValidationFlags::all(), Capabilities::all())
                .validate(&module)
                .unwrap_or_else(|e| panic!("{}: {e}", v.name));
            let writable = module
                .global_variables
                .iter()
                .filter(|(_, g)| matches!(g.space, naga::AddressSpace::Storage { access } if access.contains(naga::StorageAccess::STORE)))
                .count();
            assert_eq!(writable, v.bindings.len(), "{}", v.name);
        }
        assert!(make_writable("@binding(0) var<storage, read_write> x: array<f32>;", Writable(1)).is_err());
    }

    #[test]
    fn immediates_only_when_large_enough() {
        let v = rlx_gpu::variant(KernelKey::MatmulTiledF32);
        assert_eq!(params_binding(&v, 128), ParamsBinding::Immediate);
        assert_eq!(params_binding(&v, v.params_size), ParamsBinding::Immediate);
        let uniform = ParamsBinding::Uniform { binding: v.bindings.len() as u32 };
        assert_eq!(params_binding(&v, 0), uniform);
        assert_eq!(params_binding(&v, v.params_size - 4), uniform);
    }
}
