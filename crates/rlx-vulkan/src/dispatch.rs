//! Programs: a list of kernel launches recorded once into a command buffer and replayed by
//! [`Program::run`] with one submit and one fence wait.
//!
//! Barriers: a step waits for earlier steps only when it reads a range an earlier step wrote
//! (read after write) or writes a range an earlier step read or wrote (write after read or
//! write). One global memory barrier then covers every earlier step, so the recorder tracks the
//! ranges touched since the last barrier and inserts one only on a conflict. Independent steps
//! run without barriers between them.

use crate::buffer::GpuBuffer;
use crate::context::{lock, Context, Shared};
use crate::pipeline::Pipeline;
use ash::vk;
use rlx_backend::BackendError;
use rlx_gpu::{Access, KernelKey};
use std::sync::Arc;

/// A byte range of a buffer bound to one kernel binding.
#[derive(Clone, Debug)]
pub struct BufferSlice {
    pub buffer: Arc<GpuBuffer>,
    pub offset: u64,
    pub size: u64,
}

impl BufferSlice {
    /// The whole buffer.
    pub fn whole(buffer: &Arc<GpuBuffer>) -> Self {
        BufferSlice { buffer: buffer.clone(), offset: 0, size: buffer.size() }
    }
}

/// One kernel launch.
#[derive(Clone, Debug)]
pub struct Step {
    pub key: KernelKey,
    /// Names the step in errors (a node or kernel name).
    pub label: String,
    /// One slice per binding of the kernel, in binding order.
    pub bindings: Vec<BufferSlice>,
    /// The params struct's bytes (push constants).
    pub params: Vec<u8>,
    pub workgroups: [u32; 3],
}

impl Step {
    pub fn new<P: bytemuck::Pod>(
        key: KernelKey,
        label: impl Into<String>,
        bindings: Vec<BufferSlice>,
        params: &P,
        workgroups: [u32; 3],
    ) -> Self {
        Step { key, label: label.into(), bindings, params: bytemuck::bytes_of(params).to_vec(), workgroups }
    }
}

/// A recorded sequence of steps, ready to run any number of times.
pub struct Program {
    shared: Arc<Shared>,
    command_pool: vk::CommandPool,
    descriptor_pool: vk::DescriptorPool,
    cmd: vk::CommandBuffer,
    fence: vk::Fence,
    // Kept alive for as long as the command buffer refers to them.
    _pipelines: Vec<Arc<Pipeline>>,
    _buffers: Vec<Arc<GpuBuffer>>,
    steps: usize,
    dispatches: usize,
    barriers: usize,
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: `run` waits for its submission (or for the device to idle when the wait
        // fails), so the command buffer is not pending. Null handles are no-ops.
        unsafe {
            let dev = &self.shared.device;
            dev.destroy_fence(self.fence, None);
            dev.destroy_descriptor_pool(self.descriptor_pool, None);
            dev.destroy_command_pool(self.command_pool, None);
        }
    }
}

impl Program {
    /// Submits the recorded commands once and waits for them to finish.
    pub fn run(&mut self) -> Result<(), BackendError> {
        let scope = format!("running a program of {} steps", self.steps);
        submit_and_wait(&self.shared, self.cmd, self.fence, &scope)
    }

    /// Number of steps recorded (including empty ones, which launch nothing).
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// Number of dispatches recorded.
    pub fn dispatches(&self) -> usize {
        self.dispatches
    }

    /// Number of barriers recorded between steps (not counting the one at the start and the
    /// one at the end of every program).
    pub fn barriers(&self) -> usize {
        self.barriers
    }
}

/// Submits one command buffer and waits for its fence, then resets the fence.
pub(crate) fn submit_and_wait(
    shared: &Shared,
    cmd: vk::CommandBuffer,
    fence: vk::Fence,
    scope: &str,
) -> Result<(), BackendError> {
    let dev = &shared.device;
    let cmds = [cmd];
    let submit = [vk::SubmitInfo::default().command_buffers(&cmds)];
    // SAFETY: the command buffer is fully recorded and not pending (every submission is waited
    // for before the next); the queue is locked for the submit.
    unsafe {
        let queue = lock(&shared.queue);
        dev.queue_submit(*queue, &submit, fence).map_err(|r| shared.err(scope, 0, r))?;
    }
    // SAFETY: a wait on our own fence.
    if let Err(r) = unsafe { dev.wait_for_fences(&[fence], true, u64::MAX) } {
        // Make sure nothing is left in flight before the caller may drop the objects.
        let _ = unsafe { dev.device_wait_idle() };
        return Err(shared.err(scope, 0, r));
    }
    // SAFETY: the fence is signalled and no longer used by the queue.
    unsafe { dev.reset_fences(&[fence]) }.map_err(|r| shared.err(scope, 0, r))
}

/// A byte range of one buffer, for dependency tracking.
#[derive(Clone, Copy)]
struct Range {
    buffer: vk::Buffer,
    start: u64,
    end: u64,
}

impl Range {
    fn overlaps(&self, o: &Range) -> bool {
        self.buffer == o.buffer && self.start < o.end && o.start < self.end
    }
}

/// Ranges read and written since the last barrier.
#[derive(Default)]
struct Hazards {
    reads: Vec<Range>,
    writes: Vec<Range>,
}

impl Hazards {
    /// Whether a step with these accesses must wait for the steps since the last barrier.
    fn conflicts(&self, reads: &[Range], writes: &[Range]) -> bool {
        reads.iter().any(|r| self.writes.iter().any(|w| w.overlaps(r)))
            || writes.iter().any(|w| self.writes.iter().chain(&self.reads).any(|x| x.overlaps(w)))
    }
}

/// Checks one step against its kernel and the device limits.
fn validate(shared: &Arc<Shared>, step: &Step, pipeline: &Pipeline) -> Result<(), BackendError> {
    let device = shared.name().to_string();
    let v = pipeline.variant();
    let refuse = |reason: String| BackendError::Driver {
        device: device.clone(),
        scope: format!("recording step '{}' (kernel {})", step.label, v.name),
        reason,
    };
    if step.bindings.len() != v.bindings.len() {
        return Err(refuse(format!(
            "the kernel takes {} bindings, the step has {}",
            v.bindings.len(),
            step.bindings.len()
        )));
    }
    if step.params.len() != v.params_size as usize {
        return Err(refuse(format!(
            "params are {} bytes, the kernel takes {}",
            step.params.len(),
            v.params_size
        )));
    }
    let limits = &shared.info.limits;
    for (i, b) in step.bindings.iter().enumerate() {
        if !b.buffer.belongs_to(shared) {
            return Err(refuse(format!(
                "binding {i}: buffer '{}' belongs to another context",
                b.buffer.label()
            )));
        }
        b.buffer.check_range(b.offset, b.size)?;
        if b.size == 0 {
            return Err(refuse(format!("binding {i}: empty range; skip steps on empty tensors")));
        }
        let align = limits.min_storage_buffer_offset_alignment.max(1);
        if b.offset % align != 0 {
            return Err(refuse(format!("binding {i}: offset {} is not a multiple of {align}", b.offset)));
        }
        if b.size > limits.max_storage_buffer_range as u64 {
            return Err(BackendError::LimitExceeded {
                device,
                what: "storage binding size",
                node: step.label.clone(),
                requested: b.size,
                limit: limits.max_storage_buffer_range as u64,
                hint: "split the tensor so that each kernel operand fits one binding".into(),
            });
        }
    }
    for (axis, (&n, &max)) in step.workgroups.iter().zip(&limits.max_compute_work_group_count).enumerate() {
        if n > max {
            return Err(BackendError::LimitExceeded {
                device,
                what: ["workgroup count x", "workgroup count y", "workgroup count z"][axis],
                node: step.label.clone(),
                requested: n as u64,
                limit: max as u64,
                hint: "split the op into smaller launches".into(),
            });
        }
    }
    Ok(())
}

impl Context {
    /// Records `steps` in order into a reusable program. Validates every step first (binding
    /// count, params size, ranges, alignment, binding and dispatch limits).
    pub fn record(&self, steps: Vec<Step>) -> Result<Program, BackendError> {
        let shared = &self.shared;
        let dev = &shared.device;
        let pipelines = steps.iter().map(|s| self.pipeline(s.key)).collect::<Result<Vec<_>, _>>()?;
        for (s, p) in steps.iter().zip(&pipelines) {
            validate(shared, s, p)?;
        }
        let buffers: Vec<Arc<GpuBuffer>> =
            steps.iter().flat_map(|s| s.bindings.iter().map(|b| b.buffer.clone())).collect();
        let mut prog = Program {
            shared: shared.clone(),
            command_pool: vk::CommandPool::null(),
            descriptor_pool: vk::DescriptorPool::null(),
            cmd: vk::CommandBuffer::null(),
            fence: vk::Fence::null(),
            _pipelines: pipelines.clone(),
            _buffers: buffers,
            steps: steps.len(),
            dispatches: 0,
            barriers: 0,
        };
        let err = |what: &str| {
            let scope = format!("{what} for a program of {} steps", steps.len());
            move |r| shared.err(scope, 0, r)
        };

        // SAFETY (whole block): calls on a live device; create-infos and descriptor infos
        // outlive the calls; `prog`'s Drop releases what was created if a step fails.
        let sets = unsafe {
            let total_bindings: usize = steps.iter().map(|s| s.bindings.len()).sum();
            let sizes = [vk::DescriptorPoolSize {
                ty: vk::DescriptorType::STORAGE_BUFFER,
                descriptor_count: total_bindings.max(1) as u32,
            }];
            let pool_info = vk::DescriptorPoolCreateInfo::default()
                .max_sets(steps.len().max(1) as u32)
                .pool_sizes(&sizes);
            prog.descriptor_pool =
                dev.create_descriptor_pool(&pool_info, None).map_err(err("creating the descriptor pool"))?;
            let layouts: Vec<vk::DescriptorSetLayout> = pipelines.iter().map(|p| p.set_layout).collect();
            let sets = if layouts.is_empty() {
                Vec::new()
            } else {
                let alloc = vk::DescriptorSetAllocateInfo::default()
                    .descriptor_pool(prog.descriptor_pool)
                    .set_layouts(&layouts);
                dev.allocate_descriptor_sets(&alloc).map_err(err("allocating descriptor sets"))?
            };
            let infos: Vec<Vec<vk::DescriptorBufferInfo>> = steps
                .iter()
                .map(|s| {
                    s.bindings
                        .iter()
                        .map(|b| vk::DescriptorBufferInfo {
                            buffer: b.buffer.buffer,
                            offset: b.offset,
                            range: b.size,
                        })
                        .collect()
                })
                .collect();
            let writes: Vec<vk::WriteDescriptorSet> = sets
                .iter()
                .zip(&infos)
                .filter(|(_, info)| !info.is_empty())
                .map(|(&set, info)| {
                    vk::WriteDescriptorSet::default()
                        .dst_set(set)
                        .dst_binding(0)
                        .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                        .buffer_info(info)
                })
                .collect();
            dev.update_descriptor_sets(&writes, &[]);
            sets
        };

        // SAFETY: as above; the command buffer is recorded by this thread only.
        unsafe {
            let pool_info = vk::CommandPoolCreateInfo::default().queue_family_index(shared.queue_family);
            prog.command_pool =
                dev.create_command_pool(&pool_info, None).map_err(err("creating the command pool"))?;
            let alloc = vk::CommandBufferAllocateInfo::default()
                .command_pool(prog.command_pool)
                .level(vk::CommandBufferLevel::PRIMARY)
                .command_buffer_count(1);
            let cmds = dev.allocate_command_buffers(&alloc).map_err(err("allocating the command buffer"))?;
            prog.cmd = cmds.first().copied().unwrap_or_default();
            prog.fence =
                dev.create_fence(&vk::FenceCreateInfo::default(), None).map_err(err("creating the fence"))?;

            let cmd = prog.cmd;
            dev.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default())
                .map_err(err("beginning the command buffer"))?;
            // Uploads and the previous run (earlier submissions) complete before this run's
            // kernels read or overwrite their buffers.
            memory_barrier(
                dev,
                cmd,
                (
                    vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::TRANSFER,
                    vk::PipelineStageFlags::COMPUTE_SHADER,
                ),
                (
                    vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE,
                    vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE,
                ),
            );
            let mut hazards = Hazards::default();
            for ((step, pipeline), &set) in steps.iter().zip(&pipelines).zip(&sets) {
                if step.workgroups.contains(&0) {
                    continue;
                }
                let (mut reads, mut writes) = (Vec::new(), Vec::new());
                for (b, access) in step.bindings.iter().zip(pipeline.bindings()) {
                    let r = Range { buffer: b.buffer.buffer, start: b.offset, end: b.offset + b.size };
                    match access {
                        Access::Read => reads.push(r),
                        Access::ReadWrite => {
                            reads.push(r);
                            writes.push(r);
                        }
                    }
                }
                if hazards.conflicts(&reads, &writes) {
                    memory_barrier(
                        dev,
                        cmd,
                        (vk::PipelineStageFlags::COMPUTE_SHADER, vk::PipelineStageFlags::COMPUTE_SHADER),
                        (
                            vk::AccessFlags::SHADER_WRITE,
                            vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE,
                        ),
                    );
                    prog.barriers += 1;
                    hazards = Hazards::default();
                }
                hazards.reads.extend(reads);
                hazards.writes.extend(writes);

                dev.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, pipeline.pipeline);
                dev.cmd_bind_descriptor_sets(
                    cmd,
                    vk::PipelineBindPoint::COMPUTE,
                    pipeline.layout,
                    0,
                    &[set],
                    &[],
                );
                dev.cmd_push_constants(cmd, pipeline.layout, vk::ShaderStageFlags::COMPUTE, 0, &step.params);
                let [x, y, z] = step.workgroups;
                dev.cmd_dispatch(cmd, x, y, z);
                prog.dispatches += 1;
            }
            // Kernel results are visible to host reads (unified memory) and readback copies.
            memory_barrier(
                dev,
                cmd,
                (
                    vk::PipelineStageFlags::COMPUTE_SHADER,
                    vk::PipelineStageFlags::HOST | vk::PipelineStageFlags::TRANSFER,
                ),
                (vk::AccessFlags::SHADER_WRITE, vk::AccessFlags::HOST_READ | vk::AccessFlags::TRANSFER_READ),
            );
            dev.end_command_buffer(cmd).map_err(err("ending the command buffer"))?;
        }
        for (p, s) in pipelines.iter().zip(&steps) {
            shared.label(p.pipeline, &format!("{} ({})", p.variant().name, s.label));
        }
        Ok(prog)
    }
}

/// One global memory barrier: (src stages, dst stages), (src access, dst access).
///
/// # Safety
/// `cmd` is in the recording state on `dev`.
unsafe fn memory_barrier(
    dev: &ash::Device,
    cmd: vk::CommandBuffer,
    stages: (vk::PipelineStageFlags, vk::PipelineStageFlags),
    access: (vk::AccessFlags, vk::AccessFlags),
) {
    let barrier = vk::MemoryBarrier::default().src_access_mask(access.0).dst_access_mask(access.1);
    dev.cmd_pipeline_barrier(cmd, stages.0, stages.1, vk::DependencyFlags::empty(), &[barrier], &[], &[]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(buffer: u64, start: u64, end: u64) -> Range {
        Range { buffer: vk::Handle::from_raw(buffer), start, end }
    }

    #[test]
    fn overlap_is_half_open_and_per_buffer() {
        assert!(r(1, 0, 8).overlaps(&r(1, 4, 12)));
        assert!(!r(1, 0, 8).overlaps(&r(1, 8, 12)));
        assert!(!r(1, 0, 8).overlaps(&r(2, 0, 8)));
    }

    #[test]
    fn hazards_detect_raw_war_and_waw_only() {
        let h = Hazards { reads: vec![r(1, 0, 16)], writes: vec![r(2, 0, 16)] };
        // Read after write.
        assert!(h.conflicts(&[r(2, 8, 24)], &[]));
        // Write after read and write after write.
        assert!(h.conflicts(&[], &[r(1, 0, 4)]));
        assert!(h.conflicts(&[], &[r(2, 12, 13)]));
        // Read after read, and disjoint ranges, need nothing.
        assert!(!h.conflicts(&[r(1, 0, 16)], &[r(3, 0, 16)]));
        assert!(!h.conflicts(&[r(2, 16, 32)], &[r(2, 16, 32)]));
    }

    #[test]
    fn push_constant_bytes_are_the_struct() {
        let (p, grid) = rlx_gpu::UnaryParams::new(10).unwrap();
        let s = Step::new(KernelKey::unary_f32(rlx_ir::UnaryOp::Exp), "e", Vec::new(), &p, grid);
        assert_eq!(s.params, [10u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(s.workgroups, [1, 1, 1]);
    }
}
