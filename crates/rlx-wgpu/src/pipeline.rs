//! Compute pipelines of rlx-gpu's kernel variants, exactly as written: inputs read-only (no
//! step reads and writes one buffer, because rlx-gpu gives values their own pool buffers).
//! Params travel as immediates when the device has them and they are large enough for the
//! variant's params struct, else as a uniform buffer bound after the storage bindings.

use crate::context::Context;
use crate::probe::ShaderChecks;
use rlx_backend::BackendError;
use rlx_gpu::{Access, KernelVariant, ParamsBinding, ENTRY_POINT};
use std::borrow::Cow;
use std::num::NonZeroU64;

/// One kernel variant, built for one device.
pub(crate) struct Pipeline {
    pub params: ParamsBinding,
    pub layout: wgpu::BindGroupLayout,
    pub pipeline: wgpu::ComputePipeline,
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
    pub(crate) fn new(ctx: &Context, variant: KernelVariant) -> Result<Self, BackendError> {
        let device = &ctx.device;
        let params = params_binding(&variant, ctx.granted.max_immediate_size);
        let refuse = |reason: String| BackendError::Driver {
            device: ctx.name().to_string(),
            scope: format!("preparing kernel {} ({})", variant.name, variant.file),
            reason,
        };
        let source = variant.wgsl(params).map_err(|e| refuse(e.to_string()))?;
        let desc = wgpu::ShaderModuleDescriptor {
            label: Some(&variant.name),
            source: wgpu::ShaderSource::Wgsl(Cow::Owned(source)),
        };
        let module = match ctx.shader_checks {
            ShaderChecks::Checked => device.create_shader_module(desc),
            // SAFETY: rlx-gpu's kernels index only within the sizes their params constructors
            // checked against the bindings, every binding range was validated by rlx-gpu
            // (`ValidSchedule`), and every loop is bounded by params.
            ShaderChecks::Trusted => unsafe {
                device.create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked())
            },
        };

        let mut entries: Vec<wgpu::BindGroupLayoutEntry> = variant
            .bindings
            .iter()
            .enumerate()
            .map(|(i, access)| wgpu::BindGroupLayoutEntry {
                binding: i as u32,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Storage { read_only: *access == Access::Read },
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
            label: Some(&variant.name),
            entries: &entries,
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(&variant.name),
            bind_group_layouts: &[Some(&layout)],
            immediate_size,
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(&variant.name),
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some(ENTRY_POINT),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants: &[],
                // Every kernel writes its shared memory before reading it (as on the native
                // Vulkan path, which does not zero it either): zeroing would be wasted time.
                zero_initialize_workgroup_memory: false,
            },
            cache: ctx.wgpu_pipeline_cache(),
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

    #[test]
    fn immediates_only_when_large_enough() {
        let v = rlx_gpu::variant(KernelKey::MATMUL_TILED_F32);
        assert_eq!(params_binding(&v, 128), ParamsBinding::Immediate);
        assert_eq!(params_binding(&v, v.params_size), ParamsBinding::Immediate);
        let uniform = ParamsBinding::Uniform { binding: v.bindings.len() as u32 };
        assert_eq!(params_binding(&v, 0), uniform);
        assert_eq!(params_binding(&v, v.params_size - 4), uniform);
    }
}
