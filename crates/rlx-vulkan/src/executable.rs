//! [`VulkanExecutable`]: a compiled graph on one device.
//!
//! Built once from rlx-gpu's [`Schedule`]: one arena buffer for every planned intermediate, one
//! buffer per leaf (input, param, constant), one per scratch request; constants uploaded; every
//! dispatch's operands mapped to buffer slices and the whole schedule recorded into one command
//! buffer. `run` then only copies inputs in, replays the recording (one submit, one wait) and
//! copies outputs out.

use crate::backend::lowering_error;
use crate::convert::{tensor_from_words, tensor_to_words};
use crate::{BufferSlice, Context, GpuBuffer, Program, Step};
use rlx_backend::{BackendError, Executable, RunProfile};
use rlx_gpu::{BufferId, GpuLimits, LeafKind, Operand, Schedule};
use rlx_ir::{NodeId, Tensor, TensorType};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

/// A leaf's device buffer.
struct LeafBuffer {
    buffer: Arc<GpuBuffer>,
    ty: TensorType,
    /// Input or param name, or "%3 constant".
    name: String,
}

/// Where one output is read back from; `None` for an empty output.
struct OutputSlot {
    slice: Option<BufferSlice>,
    ty: TensorType,
}

/// A graph compiled for a Vulkan device.
pub struct VulkanExecutable {
    ctx: Arc<Context>,
    /// `None` when the schedule has no steps (every output is a leaf or empty).
    program: Option<Program>,
    leaves: HashMap<NodeId, LeafBuffer>,
    outputs: Vec<OutputSlot>,
    profile: Option<RunProfile>,
}

impl std::fmt::Debug for VulkanExecutable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VulkanExecutable")
            .field("device", &self.ctx.info().name)
            .field("steps", &self.program.as_ref().map_or(0, Program::steps))
            .field("leaves", &self.leaves.len())
            .field("outputs", &self.outputs.len())
            .finish()
    }
}

/// The buffers a schedule's operands refer to.
struct Buffers {
    arena: Arc<GpuBuffer>,
    leaves: Vec<Arc<GpuBuffer>>,
    scratch: Vec<Arc<GpuBuffer>>,
}

impl Buffers {
    fn slice(&self, op: &Operand, device: &str, scope: &str) -> Result<BufferSlice, BackendError> {
        let buffer = match op.buffer {
            BufferId::Arena => Some(&self.arena),
            BufferId::Leaf(i) => self.leaves.get(i),
            BufferId::Scratch(i) => self.scratch.get(i),
        };
        let Some(buffer) = buffer else {
            return Err(BackendError::Driver {
                device: device.to_string(),
                scope: scope.to_string(),
                reason: format!("operand {:?} names a buffer the schedule does not have", op.buffer),
            });
        };
        Ok(BufferSlice { buffer: buffer.clone(), offset: op.offset, size: op.size })
    }
}

impl VulkanExecutable {
    /// Allocates, uploads constants and records `schedule` (lowered from graph `name` for
    /// `limits`).
    pub fn build(
        ctx: Arc<Context>,
        name: &str,
        schedule: Schedule,
        limits: &GpuLimits,
    ) -> Result<Self, BackendError> {
        let device = ctx.info().name.clone();
        // The driver relies on what the lowering promised (a hand-made schedule may not keep
        // it): a broken promise is a clear error here, not a driver crash.
        schedule.validate(limits).map_err(|e| lowering_error(&device, e))?;

        let arena = ctx.create_buffer(&format!("{name} arena"), schedule.arena_bytes)?;
        let mut leaf_buffers = Vec::with_capacity(schedule.leaves.len());
        let mut leaves = HashMap::new();
        for leaf in &schedule.leaves {
            let label = match &leaf.kind {
                LeafKind::Input(n) | LeafKind::Param(n) => n.clone(),
                LeafKind::Constant(_) => format!("{} constant", leaf.node),
            };
            let buffer = ctx.create_buffer(&label, leaf.bytes)?;
            if let LeafKind::Constant(t) = &leaf.kind {
                ctx.write(&buffer, 0, &tensor_to_words(t, &device, &label)?)?;
            }
            leaves.insert(leaf.node, LeafBuffer { buffer: buffer.clone(), ty: leaf.ty.clone(), name: label });
            leaf_buffers.push(buffer);
        }
        let scratch = schedule
            .scratch
            .iter()
            .enumerate()
            .map(|(i, &bytes)| ctx.create_buffer(&format!("{name} scratch {i}"), bytes))
            .collect::<Result<Vec<_>, _>>()?;
        let buffers = Buffers { arena, leaves: leaf_buffers, scratch };

        let mut steps = Vec::with_capacity(schedule.steps.len());
        for d in schedule.steps {
            let scope = format!("binding step '{}'", d.label);
            let bindings =
                d.operands.iter().map(|op| buffers.slice(op, &device, &scope)).collect::<Result<_, _>>()?;
            steps.push(Step {
                key: d.key,
                label: d.label,
                bindings,
                params: d.params,
                workgroups: d.workgroups,
            });
        }
        let outputs = schedule
            .outputs
            .iter()
            .enumerate()
            .map(|(i, (op, ty))| {
                let slice = match op {
                    Some(op) => Some(buffers.slice(op, &device, &format!("binding output {i}"))?),
                    None => None,
                };
                Ok(OutputSlot { slice, ty: ty.clone() })
            })
            .collect::<Result<Vec<_>, BackendError>>()?;
        let program = if steps.is_empty() { None } else { Some(ctx.record(steps)?) };
        Ok(VulkanExecutable { ctx, program, leaves, outputs, profile: None })
    }

    /// Number of kernel launches recorded.
    pub fn dispatches(&self) -> usize {
        self.program.as_ref().map_or(0, Program::dispatches)
    }

    /// Number of barriers recorded between steps.
    pub fn barriers(&self) -> usize {
        self.program.as_ref().map_or(0, Program::barriers)
    }

    /// Converts and writes `value` into the buffer of leaf `id`.
    fn upload(&self, id: NodeId, value: &Tensor, what: &str) -> Result<(), BackendError> {
        let device = &self.ctx.info().name;
        let Some(leaf) = self.leaves.get(&id) else {
            return Err(BackendError::Driver {
                device: device.clone(),
                scope: format!("writing {what} {id}"),
                reason: "the compiled graph has no such leaf".into(),
            });
        };
        if value.dtype() != leaf.ty.dtype || value.numel() != leaf.ty.numel() {
            return Err(BackendError::Driver {
                device: device.clone(),
                scope: format!("writing {what} '{}'", leaf.name),
                reason: format!(
                    "got {}{}, the compiled graph holds {}",
                    value.dtype(),
                    value.shape(),
                    leaf.ty
                ),
            });
        }
        let bytes = tensor_to_words(value, device, &leaf.name)?;
        self.ctx.write(&leaf.buffer, 0, &bytes)
    }

    fn read_output(&self, index: usize, out: &OutputSlot) -> Result<Tensor, BackendError> {
        let device = &self.ctx.info().name;
        let what = format!("output {index}");
        let Some(slice) = &out.slice else {
            // Empty: nothing to read.
            return Ok(Tensor::zeros(out.ty.shape.clone(), out.ty.dtype));
        };
        // The operand may be padded past the value (it never is shorter).
        let len = out.ty.numel() as u64 * 4;
        let bytes = self.ctx.read(&slice.buffer, slice.offset, len.min(slice.size))?;
        tensor_from_words(&bytes, &out.ty, device, &what)
    }
}

impl Executable for VulkanExecutable {
    fn set_param(&mut self, id: NodeId, value: &Tensor) -> Result<(), BackendError> {
        self.upload(id, value, "param")
    }

    fn run(&mut self, inputs: &[(NodeId, &Tensor)]) -> Result<Vec<Tensor>, BackendError> {
        let t0 = Instant::now();
        for &(id, value) in inputs {
            self.upload(id, value, "input")?;
        }
        let t1 = Instant::now();
        if let Some(program) = &mut self.program {
            program.run()?;
        }
        let t2 = Instant::now();
        let out =
            self.outputs.iter().enumerate().map(|(i, o)| self.read_output(i, o)).collect::<Result<_, _>>()?;
        let t3 = Instant::now();
        self.profile = Some(RunProfile { upload: t1 - t0, compute: t2 - t1, readback: t3 - t2 });
        Ok(out)
    }

    fn last_profile(&self) -> Option<RunProfile> {
        self.profile
    }
}
