//! Compute pipelines from the SPIR-V embedded at build time, cached per context by kernel key
//! and built through the context's VkPipelineCache (kept on disk: [`crate::pipeline_cache`]).
//!
//! A kernel's layout: one descriptor set with one storage buffer per entry of the variant's
//! `bindings`, and a push-constant range of the variant's `params_size` bytes.

use crate::context::{Context, Shared};
use crate::spirv;
use ash::vk;
use rlx_backend::BackendError;
use rlx_gpu::{Access, KernelKey, KernelVariant, ENTRY_POINT};
use std::ffi::CString;
use std::sync::Arc;

/// One compute pipeline with its layouts.
pub struct Pipeline {
    shared: Arc<Shared>,
    pub(crate) variant: KernelVariant,
    module: vk::ShaderModule,
    pub(crate) set_layout: vk::DescriptorSetLayout,
    pub(crate) layout: vk::PipelineLayout,
    pub(crate) pipeline: vk::Pipeline,
    /// The driver reported building it from the pipeline cache.
    from_cache: bool,
    /// Counts the pipeline (with its module and layouts) as live while it exists.
    _live: rlx_backend::LiveGuard,
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        // SAFETY: programs hold an Arc to every pipeline they recorded, so none is in use.
        // Null handles (a half-built pipeline) are no-ops.
        unsafe {
            let dev = &self.shared.device;
            dev.destroy_pipeline(self.pipeline, None);
            dev.destroy_pipeline_layout(self.layout, None);
            dev.destroy_descriptor_set_layout(self.set_layout, None);
            dev.destroy_shader_module(self.module, None);
        }
    }
}

impl Pipeline {
    /// The kernel variant this pipeline runs.
    pub fn variant(&self) -> &KernelVariant {
        &self.variant
    }

    /// Whether the driver reported that this pipeline came from the pipeline cache (typically
    /// data loaded from disk) instead of being compiled. False where the device does not report
    /// it (before Vulkan 1.3) or the cache is off.
    pub fn from_cache(&self) -> bool {
        self.from_cache
    }

    /// Storage bindings of the kernel, in binding order.
    pub fn bindings(&self) -> &'static [Access] {
        self.variant.bindings
    }

    fn new(shared: &Arc<Shared>, key: KernelKey, cache: vk::PipelineCache) -> Result<Self, BackendError> {
        let variant = rlx_gpu::variant(key);
        let name = variant.static_name();
        let scope = |what: &str| format!("{what} for kernel {name}");
        let max_push = shared.info.limits.max_push_constants_size;
        if variant.params_size > max_push {
            return Err(BackendError::LimitExceeded {
                device: shared.name().to_string(),
                what: "push constants",
                node: name.to_string(),
                requested: variant.params_size as u64,
                limit: max_push as u64,
                hint: "this device needs the uniform-buffer params path, which rlx-vulkan lacks".into(),
            });
        }
        // A user-defined kernel was compiled when the lowering entered it (rlx_gpu::custom).
        let words = match key {
            KernelKey::Custom(k) => rlx_gpu::custom::spirv_words(k),
            _ => match spirv::development_words(name, key) {
                Some(Ok(words)) => Some(words),
                Some(Err(reason)) => {
                    return Err(BackendError::Driver {
                        device: shared.name().to_string(),
                        scope: scope("compiling RLX_KERNEL_DIR's file"),
                        reason,
                    })
                }
                None => spirv::words(name),
            },
        };
        let words = words.ok_or_else(|| BackendError::Driver {
            device: shared.name().to_string(),
            scope: scope("loading SPIR-V"),
            reason: "no embedded module; the build script and the variants table disagree".into(),
        })?;
        let mut p = Pipeline {
            shared: shared.clone(),
            variant,
            module: vk::ShaderModule::null(),
            set_layout: vk::DescriptorSetLayout::null(),
            layout: vk::PipelineLayout::null(),
            pipeline: vk::Pipeline::null(),
            from_cache: false,
            _live: rlx_backend::LiveGuard::none(),
        };
        let dev = &shared.device;
        // SAFETY (whole function): calls on a live device with create-infos that outlive them;
        // `p`'s Drop releases what was created if a later step fails.
        p.module =
            unsafe { dev.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None) }
                .map_err(|r| shared.err(scope("creating the shader module"), 0, r))?;

        let bindings: Vec<vk::DescriptorSetLayoutBinding> = (0..p.variant.bindings.len() as u32)
            .map(|i| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(i)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE)
            })
            .collect();
        let set_info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
        p.set_layout = unsafe { dev.create_descriptor_set_layout(&set_info, None) }
            .map_err(|r| shared.err(scope("creating the descriptor set layout"), 0, r))?;

        let ranges = [vk::PushConstantRange {
            stage_flags: vk::ShaderStageFlags::COMPUTE,
            offset: 0,
            size: p.variant.params_size,
        }];
        let set_layouts = [p.set_layout];
        let layout_info =
            vk::PipelineLayoutCreateInfo::default().set_layouts(&set_layouts).push_constant_ranges(&ranges);
        p.layout = unsafe { dev.create_pipeline_layout(&layout_info, None) }
            .map_err(|r| shared.err(scope("creating the pipeline layout"), 0, r))?;

        let entry = CString::new(ENTRY_POINT).map_err(|e| BackendError::Driver {
            device: shared.name().to_string(),
            scope: scope("naming the entry point"),
            reason: e.to_string(),
        })?;
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(p.module)
            .name(&entry);
        // Creation feedback (core in Vulkan 1.3) says whether the driver found the pipeline in
        // the cache, so a process that built nothing new does not rewrite the cache file.
        let mut feedback = vk::PipelineCreationFeedback::default();
        let mut feedback_info =
            vk::PipelineCreationFeedbackCreateInfo::default().pipeline_creation_feedback(&mut feedback);
        let mut info = vk::ComputePipelineCreateInfo::default().stage(stage).layout(p.layout);
        if cache != vk::PipelineCache::null() && shared.info.api_version >= [1, 3, 0] {
            info = info.push_next(&mut feedback_info);
        }
        let pipelines = unsafe { dev.create_compute_pipelines(cache, &[info], None) }
            .map_err(|(_, r)| shared.err(scope("creating the compute pipeline"), 0, r))?;
        p.pipeline = pipelines.first().copied().unwrap_or_default();
        p._live = shared.live.track(rlx_backend::LiveKind::Pipeline, 1, 0);
        let hit = vk::PipelineCreationFeedbackFlags::VALID
            | vk::PipelineCreationFeedbackFlags::APPLICATION_PIPELINE_CACHE_HIT;
        p.from_cache = feedback.flags.contains(hit);
        shared.label(p.pipeline, name);
        shared.label(p.module, name);
        Ok(p)
    }
}

impl Context {
    /// The pipeline of `key`, built on first use and cached for this context's life.
    pub fn pipeline(&self, key: KernelKey) -> Result<Arc<Pipeline>, BackendError> {
        self.pipelines.get_or_build(key, || {
            let p = Pipeline::new(&self.shared, key, self.pipeline_cache.handle())?;
            if !p.from_cache {
                self.pipeline_cache.compiled();
            }
            Ok(p)
        })
    }

    /// Number of pipelines built so far.
    pub fn cached_pipelines(&self) -> usize {
        self.pipelines.len()
    }
}
