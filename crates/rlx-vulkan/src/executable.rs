//! [`VulkanExecutable`]: a compiled graph on one device, recorded once and replayed.
//!
//! Built once from rlx-gpu's validated [`Schedule`]: one buffer per pool, leaf and scratch
//! request; constants uploaded; on discrete GPUs one upload and one readback staging area
//! (persistent, the readback one in host-cached memory); one descriptor set per step; and one
//! command buffer holding the whole run:
//!
//! 1. copies of the inputs from the upload staging into their leaf buffers (discrete GPUs; on
//!    unified memory the host writes the leaf buffers in place);
//! 2. every kernel launch, with a barrier where [`Schedule::barriers`] puts one, between two
//!    GPU timestamps where the queue has them;
//! 3. copies of the outputs into the readback staging (discrete GPUs; on unified memory the
//!    host reads the pools in place).
//!
//! `run` then copies inputs into mapped memory, submits once, waits once and converts the
//! outputs: nothing is allocated on the device per run.

use crate::buffer::{BufferRole, GpuBuffer};
use crate::context::{Context, MemoryStrategy};
use crate::record::Recording;
use rlx_backend::{BackendError, Executable, RunProfile};
use rlx_gpu::convert::from_device;
use rlx_gpu::driver::{group_mismatch, initial_contents, staged_host_io, HostOutput, LeafTable};
use rlx_gpu::{Buffers, SharedLeaves, ValidSchedule};
use rlx_ir::{NodeId, Tensor};
use std::sync::Arc;
use std::time::Instant;

/// A graph compiled for a Vulkan device.
pub struct VulkanExecutable {
    ctx: Arc<Context>,
    buffers: Buffers<Arc<GpuBuffer>>,
    /// Leaf index, type and name of every input, param and state node.
    leaves: LeafTable,
    /// Input nodes in upload order with where the host writes them: a staging place (discrete)
    /// or the leaf buffer itself (unified).
    inputs: Vec<(NodeId, Arc<GpuBuffer>, u64)>,
    /// Per output: the buffer and offset it is read from (`None` when empty), and its type.
    outputs: Vec<HostOutput<Arc<GpuBuffer>>>,
    recording: Recording,
    profile: Option<RunProfile>,
}

impl std::fmt::Debug for VulkanExecutable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VulkanExecutable")
            .field("device", &self.ctx.info().name)
            .field("dispatches", &self.recording.dispatches)
            .field("barriers", &self.recording.barriers)
            .field("outputs", &self.outputs.len())
            .finish()
    }
}

impl VulkanExecutable {
    /// Allocates, uploads constants and records `schedule` (validated by rlx-gpu: this driver
    /// does not check it again).
    pub fn build(ctx: Arc<Context>, schedule: &ValidSchedule) -> Result<Self, BackendError> {
        Self::build_shared(ctx, schedule, &mut SharedLeaves::default())
    }

    /// [`Self::build`] for one executable of a compile group: params and states already in
    /// `shared` (by name) are bound, not allocated; new ones are added to it.
    pub fn build_shared(
        ctx: Arc<Context>,
        schedule: &ValidSchedule,
        shared: &mut SharedLeaves<Arc<GpuBuffer>>,
    ) -> Result<Self, BackendError> {
        let device = ctx.info().name.clone();
        let (buffers, fresh) = Buffers::allocate_shared(
            schedule,
            shared,
            |spec| ctx.create_buffer(&spec.label, spec.bytes),
            group_mismatch(&device, &schedule.name),
        )?;
        let gpu = |e| rlx_gpu::backend_error(&device, e);
        for written in initial_contents(schedule, &fresh, true, &device) {
            let (i, bytes) = written?;
            ctx.write(buffers.get(rlx_gpu::BufferId::Leaf(i)).map_err(gpu)?, 0, &bytes)?;
        }
        let limits = &ctx.info().limits;
        let align = limits.min_storage_buffer_offset_alignment.max(16);
        let max_alloc = match limits.max_memory_allocation_size {
            0 => u64::MAX,
            m => m,
        };
        let discrete = ctx.memory_strategy() == MemoryStrategy::Discrete;
        let role = |upload| if upload { BufferRole::Upload } else { BufferRole::Staging };
        let host =
            staged_host_io(schedule, &buffers, &device, discrete, (align, max_alloc), |label, bytes, up| {
                ctx.create_host_buffer(label, bytes, role(up))
            })?;
        let recording = Recording::new(&ctx, schedule, &buffers, &host.uploads, &host.readbacks)?;
        // New pipelines reach the disk now, not only when the context drops (a crash or an
        // abort skips drops).
        ctx.save_pipeline_cache();
        let leaves = LeafTable::new(&device, schedule);
        let (inputs, outputs) = (host.inputs, host.outputs);
        Ok(VulkanExecutable { ctx, buffers, leaves, inputs, outputs, recording, profile: None })
    }

    /// Number of kernel launches recorded.
    pub fn dispatches(&self) -> usize {
        self.recording.dispatches
    }

    /// Number of barriers recorded between kernel launches.
    pub fn barriers(&self) -> usize {
        self.recording.barriers
    }
}

impl Executable for VulkanExecutable {
    fn set_param(&mut self, id: NodeId, value: &Tensor) -> Result<(), BackendError> {
        let (index, bytes) = self.leaves.bytes(id, value, "param")?;
        let buffer = self
            .buffers
            .get(rlx_gpu::BufferId::Leaf(index))
            .map_err(|e| rlx_gpu::backend_error(&self.ctx.info().name, e))?;
        self.ctx.write(buffer, 0, &bytes)
    }

    fn run(&mut self, inputs: &[(NodeId, &Tensor)]) -> Result<Vec<Tensor>, BackendError> {
        let device = self.ctx.info().name.clone();
        let t0 = Instant::now();
        for (node, buffer, offset) in &self.inputs {
            let (_, bytes) = self.leaves.bytes(*node, self.leaves.input(inputs, *node)?, "input")?;
            buffer.write_at(*offset, &bytes)?;
        }
        let t1 = Instant::now();
        let gpu_time = self.recording.submit()?;
        let t2 = Instant::now();
        let mut out = Vec::with_capacity(self.outputs.len());
        for (i, (from, ty)) in self.outputs.iter().enumerate() {
            out.push(match from {
                Some((buffer, offset)) => {
                    let bytes = buffer.mapped_bytes(*offset, rlx_gpu::device_bytes(ty))?;
                    from_device(bytes, ty, &device, &format!("output {i}"))?
                }
                None => Tensor::zeros(ty.shape.clone(), ty.dtype),
            });
        }
        let t3 = Instant::now();
        // Compute is the GPU's own time for the kernels where timestamps exist; the copies to
        // and from staging then count as upload and readback.
        self.profile = Some(rlx_gpu::driver::split_profile(t1 - t0, t2 - t1, gpu_time, t3 - t2));
        Ok(out)
    }

    fn last_profile(&self) -> Option<RunProfile> {
        self.profile
    }

    fn kernel_times(&self) -> Vec<(&'static str, std::time::Duration)> {
        self.recording.kernel_times.clone()
    }
}
