//! The command buffer of one Vulkan executable: host I/O copies, every kernel launch with the
//! barriers rlx-gpu's dependency analysis asks for, and GPU timestamps around the kernels;
//! recorded once at compile time, submitted once per run.

use crate::buffer::GpuBuffer;
use crate::context::{lock, Context, Shared};
use crate::pipeline::Pipeline;
use ash::vk;
use rlx_backend::BackendError;
use rlx_gpu::driver::{profiling, Timestamps};
use rlx_gpu::{Buffers, Operand, Schedule};
use std::sync::Arc;
use std::time::Duration;

/// One recorded buffer-to-buffer copy.
pub(crate) type Copy = rlx_gpu::driver::Copy<Arc<GpuBuffer>>;

/// The command buffer of one executable and what it needs to stay valid.
pub(crate) struct Recording {
    shared: Arc<Shared>,
    commands: Commands,
    descriptor_pool: vk::DescriptorPool,
    query_pool: vk::QueryPool,
    /// The timestamps recorded when `query_pool` is live: with `RLX_PROFILE=1` one after each
    /// launch, giving each kernel's time in the last run (`kernel_times`).
    timestamps: Option<Timestamps>,
    pub kernel_times: Vec<(&'static str, Duration)>,
    _pipelines: Vec<Arc<Pipeline>>,
    pub dispatches: usize,
    pub barriers: usize,
    /// Counts the descriptor sets, the descriptor pool and the queries.
    _live: Vec<rlx_backend::LiveGuard>,
}

impl Drop for Recording {
    fn drop(&mut self) {
        // SAFETY: `submit` waits for its submission (or for the device to idle when the wait
        // fails), so the command buffer is not pending. Null handles are no-ops.
        unsafe {
            let dev = &self.shared.device;
            dev.destroy_query_pool(self.query_pool, None);
            dev.destroy_descriptor_pool(self.descriptor_pool, None);
        }
    }
}

/// A command pool with one primary command buffer and its fence: what one submission needs.
pub(crate) struct Commands {
    shared: Arc<Shared>,
    pool: vk::CommandPool,
    pub(crate) cmd: vk::CommandBuffer,
    fence: vk::Fence,
    /// Counts the command buffer, and the pool and the fence.
    _live: Vec<rlx_backend::LiveGuard>,
}

impl Drop for Commands {
    fn drop(&mut self) {
        // SAFETY: every submission is waited for (or the device idled when the wait failed), so
        // nothing is pending. Null handles (a half-built value) are no-ops.
        unsafe {
            self.shared.device.destroy_fence(self.fence, None);
            self.shared.device.destroy_command_pool(self.pool, None);
        }
    }
}

impl Commands {
    /// `reset`: the command buffer may be recorded again. `scope` turns the step that failed
    /// ("creating the fence") into the error's scope.
    pub(crate) fn new(
        shared: &Arc<Shared>,
        reset: bool,
        scope: impl Fn(&str) -> String,
    ) -> Result<Self, BackendError> {
        let dev = &shared.device;
        let null = (vk::CommandPool::null(), vk::CommandBuffer::null(), vk::Fence::null());
        let mut c =
            Commands { shared: shared.clone(), pool: null.0, cmd: null.1, fence: null.2, _live: Vec::new() };
        let err = |what: &str| {
            let scope = scope(what);
            move |r| shared.err(scope, 0, r)
        };
        let flags = if reset {
            vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER
        } else {
            vk::CommandPoolCreateFlags::empty()
        };
        let pool = vk::CommandPoolCreateInfo::default().queue_family_index(shared.queue_family).flags(flags);
        // SAFETY: calls on a live device; `c`'s Drop cleans up on failure.
        unsafe {
            c.pool = dev.create_command_pool(&pool, None).map_err(err("creating the command pool"))?;
            let alloc = vk::CommandBufferAllocateInfo::default()
                .command_pool(c.pool)
                .level(vk::CommandBufferLevel::PRIMARY)
                .command_buffer_count(1);
            let cmds = dev.allocate_command_buffers(&alloc).map_err(err("allocating the command buffer"))?;
            c.cmd = cmds.first().copied().unwrap_or_default();
            c._live.push(shared.live.track(rlx_backend::LiveKind::CommandBuffer, 1, 0));
            c.fence =
                dev.create_fence(&vk::FenceCreateInfo::default(), None).map_err(err("creating the fence"))?;
            c._live.push(shared.live.track(rlx_backend::LiveKind::Other, 2, 0));
        }
        Ok(c)
    }

    /// Submits the command buffer and waits for it ([`submit_and_wait`]).
    pub(crate) fn submit_and_wait(&self, scope: &str) -> Result<(), BackendError> {
        submit_and_wait(&self.shared, self.cmd, self.fence, scope)
    }
}

/// How long `submit_and_wait` polls before it blocks.
const SPIN_BEFORE_BLOCKING: Duration = Duration::from_micros(200);

/// Submits one command buffer and waits for its fence, then resets the fence.
fn submit_and_wait(
    shared: &Shared,
    cmd: vk::CommandBuffer,
    fence: vk::Fence,
    scope: &str,
) -> Result<(), BackendError> {
    shared.check_lost(scope)?;
    let dev = &shared.device;
    let cmds = [cmd];
    let submit = [vk::SubmitInfo::default().command_buffers(&cmds)];
    // SAFETY: the command buffer is fully recorded and not pending (every submission is waited
    // for before the next); the queue is locked for the submit.
    unsafe {
        let queue = lock(&shared.queue);
        shared.take_simulated_loss().map_err(|r| shared.err(scope, 0, r))?;
        dev.queue_submit(*queue, &submit, fence).map_err(|r| shared.err(scope, 0, r))?;
    }
    // Short runs finish within microseconds, and a blocking wait's wake-up costs tens of them
    // (measured on the H200): poll the fence for a while before blocking.
    let polled = std::time::Instant::now();
    // SAFETY: a status query on our own fence.
    while polled.elapsed() < SPIN_BEFORE_BLOCKING {
        match unsafe { dev.get_fence_status(fence) } {
            Ok(false) => std::hint::spin_loop(),
            _ => break,
        }
    }
    // SAFETY: a wait on our own fence (returns at once when it is signalled).
    if let Err(r) = unsafe { dev.wait_for_fences(&[fence], true, u64::MAX) } {
        // Make sure nothing is left in flight before the caller may drop the objects. Like
        // vkQueueSubmit, vkDeviceWaitIdle needs the device's queues externally synchronised.
        let _queue = lock(&shared.queue);
        let _ = unsafe { dev.device_wait_idle() };
        return Err(shared.err(scope, 0, r));
    }
    // SAFETY: the fence is signalled and no longer used by the queue.
    unsafe { dev.reset_fences(&[fence]) }.map_err(|r| shared.err(scope, 0, r))
}

/// Operand of a kernel binding, for the descriptor writes.
fn descriptor(buffers: &Buffers<Arc<GpuBuffer>>, op: &Operand) -> Option<vk::DescriptorBufferInfo> {
    let b = buffers.get(op.buffer).ok()?;
    Some(vk::DescriptorBufferInfo { buffer: b.buffer, offset: op.offset, range: op.binding_size() })
}

/// One global memory barrier: (src stages, dst stages), (src access, dst access).
///
/// # Safety
/// `cmd` is in the recording state on `dev`.
pub(crate) unsafe fn memory_barrier(
    dev: &ash::Device,
    cmd: vk::CommandBuffer,
    stages: (vk::PipelineStageFlags, vk::PipelineStageFlags),
    access: (vk::AccessFlags, vk::AccessFlags),
) {
    let barrier = vk::MemoryBarrier::default().src_access_mask(access.0).dst_access_mask(access.1);
    dev.cmd_pipeline_barrier(cmd, stages.0, stages.1, vk::DependencyFlags::empty(), &[barrier], &[], &[]);
}

/// # Safety
/// `cmd` is in the recording state on `dev`; the buffers are live.
unsafe fn copies(dev: &ash::Device, cmd: vk::CommandBuffer, list: &[Copy]) {
    for c in list {
        let region = vk::BufferCopy { src_offset: c.src_offset, dst_offset: c.dst_offset, size: c.size };
        dev.cmd_copy_buffer(cmd, c.src.buffer, c.dst.buffer, &[region]);
    }
}

impl Recording {
    /// Records `uploads`, the schedule's steps and `readbacks` into one command buffer.
    pub(crate) fn new(
        ctx: &Context,
        schedule: &Schedule,
        buffers: &Buffers<Arc<GpuBuffer>>,
        uploads: &[Copy],
        readbacks: &[Copy],
    ) -> Result<Self, BackendError> {
        let shared = &ctx.shared;
        let dev = &shared.device;
        let steps = &schedule.steps;
        let pipelines = steps.iter().map(|s| ctx.pipeline(s.key)).collect::<Result<Vec<_>, _>>()?;
        let scope = |what: &str| format!("{what} for graph '{}' ({} steps)", schedule.name, steps.len());
        let mut rec = Recording {
            shared: shared.clone(),
            commands: Commands::new(shared, false, scope)?,
            descriptor_pool: vk::DescriptorPool::null(),
            query_pool: vk::QueryPool::null(),
            timestamps: None,
            kernel_times: Vec::new(),
            _pipelines: pipelines.clone(),
            dispatches: 0,
            barriers: 0,
            _live: Vec::new(),
        };
        let err = |what: &str| {
            let scope = scope(what);
            move |r| shared.err(scope, 0, r)
        };
        let missing = |step: &str| BackendError::Driver {
            device: shared.name().to_string(),
            scope: format!("binding step '{step}'"),
            reason: "an operand names a buffer the schedule does not have".into(),
        };
        let infos: Vec<Vec<vk::DescriptorBufferInfo>> = steps
            .iter()
            .map(|s| {
                s.operands.iter().map(|op| descriptor(buffers, op).ok_or_else(|| missing(&s.label))).collect()
            })
            .collect::<Result<_, _>>()?;

        // SAFETY (whole block): calls on a live device; create-infos and descriptor infos
        // outlive the calls; `rec`'s Drop releases what was created if a call fails.
        unsafe {
            let total_bindings: usize = infos.iter().map(Vec::len).sum();
            let sizes = [vk::DescriptorPoolSize {
                ty: vk::DescriptorType::STORAGE_BUFFER,
                descriptor_count: total_bindings.max(1) as u32,
            }];
            let pool_info = vk::DescriptorPoolCreateInfo::default()
                .max_sets(steps.len().max(1) as u32)
                .pool_sizes(&sizes);
            rec.descriptor_pool =
                dev.create_descriptor_pool(&pool_info, None).map_err(err("creating the descriptor pool"))?;
            let layouts: Vec<vk::DescriptorSetLayout> = pipelines.iter().map(|p| p.set_layout).collect();
            let sets = if layouts.is_empty() {
                Vec::new()
            } else {
                let alloc = vk::DescriptorSetAllocateInfo::default()
                    .descriptor_pool(rec.descriptor_pool)
                    .set_layouts(&layouts);
                dev.allocate_descriptor_sets(&alloc).map_err(err("allocating descriptor sets"))?
            };
            let live = &shared.live;
            rec._live.push(live.track(rlx_backend::LiveKind::BindGroup, sets.len() as i64, 0));
            rec._live.push(live.track(rlx_backend::LiveKind::Other, 1, 0));
            let writes: Vec<vk::WriteDescriptorSet> = sets
                .iter()
                .zip(&infos)
                .map(|(&set, info)| {
                    vk::WriteDescriptorSet::default()
                        .dst_set(set)
                        .dst_binding(0)
                        .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                        .buffer_info(info)
                })
                .collect();
            dev.update_descriptor_sets(&writes, &[]);
            // Names go on this recording's own objects, which no other thread can reach yet;
            // never on the pipelines, which the context shares (see `Shared::label`).
            shared.label(rec.commands.cmd, &format!("graph '{}'", schedule.name));
            for ((&set, p), s) in sets.iter().zip(&pipelines).zip(steps) {
                shared.label(set, &format!("{} ({})", p.variant().name, s.label));
            }

            if let Some(period) = shared.timestamp_period {
                let names =
                    profiling().then(|| pipelines.iter().map(|p| p.variant().static_name()).collect());
                let timestamps = Timestamps { period, names };
                let info = vk::QueryPoolCreateInfo::default()
                    .query_type(vk::QueryType::TIMESTAMP)
                    .query_count(timestamps.queries());
                rec.query_pool =
                    dev.create_query_pool(&info, None).map_err(err("creating the timestamp queries"))?;
                rec._live.push(live.track(rlx_backend::LiveKind::Other, 1, 0));
                rec.timestamps = Some(timestamps);
            }
            let timed = rec.timestamps.clone();

            let cmd = rec.commands.cmd;
            dev.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default())
                .map_err(err("beginning the command buffer"))?;
            use vk::AccessFlags as A;
            use vk::PipelineStageFlags as S;
            // The previous run, param uploads and the host's input writes (earlier submissions)
            // complete before this run copies or launches anything.
            memory_barrier(
                dev,
                cmd,
                (S::COMPUTE_SHADER | S::TRANSFER | S::HOST, S::COMPUTE_SHADER | S::TRANSFER),
                (
                    A::SHADER_WRITE | A::TRANSFER_WRITE | A::HOST_WRITE,
                    A::SHADER_READ | A::SHADER_WRITE | A::TRANSFER_READ | A::TRANSFER_WRITE,
                ),
            );
            if !uploads.is_empty() {
                copies(dev, cmd, uploads);
                memory_barrier(
                    dev,
                    cmd,
                    (S::TRANSFER, S::COMPUTE_SHADER),
                    (A::TRANSFER_WRITE, A::SHADER_READ),
                );
            }
            if let Some(t) = &timed {
                dev.cmd_reset_query_pool(cmd, rec.query_pool, 0, t.queries());
                dev.cmd_write_timestamp(cmd, S::BOTTOM_OF_PIPE, rec.query_pool, 0);
            }
            for ((step, pipeline), (&set, barrier)) in
                steps.iter().zip(&pipelines).zip(sets.iter().zip(schedule.barriers()))
            {
                if barrier {
                    memory_barrier(
                        dev,
                        cmd,
                        (S::COMPUTE_SHADER, S::COMPUTE_SHADER),
                        (A::SHADER_WRITE, A::SHADER_READ | A::SHADER_WRITE),
                    );
                    rec.barriers += 1;
                }
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
                rec.dispatches += 1;
                if let Some(query) = timed.as_ref().and_then(|t| t.after_launch(rec.dispatches)) {
                    dev.cmd_write_timestamp(cmd, S::BOTTOM_OF_PIPE, rec.query_pool, query);
                }
            }
            if let Some(query) = timed.as_ref().and_then(Timestamps::after_all) {
                dev.cmd_write_timestamp(cmd, S::BOTTOM_OF_PIPE, rec.query_pool, query);
            }
            // Kernel results are visible to the readback copies, and everything to the host.
            memory_barrier(
                dev,
                cmd,
                (S::COMPUTE_SHADER | S::TRANSFER, S::TRANSFER | S::HOST),
                (A::SHADER_WRITE | A::TRANSFER_WRITE, A::TRANSFER_READ | A::HOST_READ),
            );
            if !readbacks.is_empty() {
                copies(dev, cmd, readbacks);
                memory_barrier(dev, cmd, (S::TRANSFER, S::HOST), (A::TRANSFER_WRITE, A::HOST_READ));
            }
            dev.end_command_buffer(cmd).map_err(err("ending the command buffer"))?;
        }
        Ok(rec)
    }

    /// Submits the recording, waits for it, and returns the GPU time of the kernels where the
    /// queue has timestamps.
    pub(crate) fn submit(&mut self) -> Result<Option<Duration>, BackendError> {
        let scope = format!("running {} kernel launches", self.dispatches);
        self.commands.submit_and_wait(&scope)?;
        let Some(timestamps) = &self.timestamps else { return Ok(None) };
        let mut ticks = vec![0u64; timestamps.queries() as usize];
        // SAFETY: every query was written by the submission just waited for.
        let read = unsafe {
            self.shared.device.get_query_pool_results(
                self.query_pool,
                0,
                &mut ticks,
                vk::QueryResultFlags::TYPE_64,
            )
        };
        if read.is_err() {
            return Ok(None);
        }
        if timestamps.names.is_some() {
            self.kernel_times = timestamps.kernel_times(&ticks);
        }
        Ok(Some(timestamps.total(&ticks)))
    }
}
