//! A compiled graph on one wgpu device. Compile builds everything once: buffers by role (one
//! arena for planned intermediates, one buffer per leaf, the scratch buffers steps asked for),
//! constants uploaded, pipelines from the device cache, one uniform buffer per step where
//! params cannot travel as immediates, bind groups, staging buffers. `run` then writes the
//! inputs, records one compute pass with every step, copies the outputs into the staging
//! buffers, submits once, waits once and converts the words back to tensors.

use crate::context::Context;
use crate::error;
use crate::pipeline::{Pipeline, Writable};
use crate::staging::{self, Place, Staging};
use crate::words::{f16_unsupported, from_words, to_words};
use rlx_backend::{BackendError, Executable, RunProfile};
use rlx_gpu::{BufferId, LeafKind, Operand, Schedule};
use rlx_ir::{DType, Graph, NodeId, Tensor, TensorData, TensorType};
use std::collections::HashMap;
use std::num::NonZeroU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Usage of every device-side storage buffer: bound to kernels, written by the queue, copied
/// out for readback.
const STORAGE: wgpu::BufferUsages =
    wgpu::BufferUsages::STORAGE.union(wgpu::BufferUsages::COPY_DST).union(wgpu::BufferUsages::COPY_SRC);

/// One kernel launch, ready to record.
struct Step {
    pipeline: Arc<Pipeline>,
    bind_group: wgpu::BindGroup,
    /// Set as immediates when the pipeline takes them (else already in its uniform buffer).
    params: Vec<u8>,
    workgroups: [u32; 3],
}

/// GPU timestamps around the compute pass.
struct Timestamps {
    queries: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    place: Place,
    /// Nanoseconds per timestamp tick.
    period: f64,
}

pub(crate) struct WgpuExecutable {
    ctx: Arc<Context>,
    arena: wgpu::Buffer,
    leaves: Vec<wgpu::Buffer>,
    scratch: Vec<wgpu::Buffer>,
    /// Input nodes and their leaf buffers, uploaded by every run.
    inputs: Vec<(NodeId, usize)>,
    /// Param nodes and their leaf buffers.
    params: HashMap<NodeId, usize>,
    steps: Vec<Step>,
    // Bound by the steps' bind groups; kept alive with them.
    _uniforms: Vec<wgpu::Buffer>,
    /// Each graph output: where it lives and where it lands in the staging buffers (`None` for
    /// an empty output), and its type.
    outputs: Vec<(Option<(Operand, Place)>, TensorType)>,
    staging: Staging,
    timestamps: Option<Timestamps>,
    profile: Option<RunProfile>,
}

/// Bytes a timestamp pair takes (two u64).
const TIMESTAMP_BYTES: u64 = 16;

impl WgpuExecutable {
    pub(crate) fn compile(ctx: Arc<Context>, graph: &Graph) -> Result<Self, BackendError> {
        let device_name = ctx.name().to_string();
        let schedule = rlx_gpu::lower(graph, &ctx.limits).map_err(|e| error::from_gpu(&device_name, e))?;
        check_sizes(&ctx, &schedule)?;
        let requested = schedule.arena_bytes
            + schedule.leaves.iter().map(|l| l.bytes).sum::<u64>()
            + schedule.scratch.iter().sum::<u64>();
        let scope = format!("compiling graph '{}' ({} steps)", graph.name(), schedule.steps.len());
        let c = ctx.clone();
        c.guarded(&scope, requested, || build(ctx, &schedule))
    }

    fn buffer(&self, id: BufferId) -> Option<&wgpu::Buffer> {
        match id {
            BufferId::Arena => Some(&self.arena),
            BufferId::Leaf(i) => self.leaves.get(i),
            BufferId::Scratch(i) => self.scratch.get(i),
        }
    }

    fn refuse(&self, scope: &str, reason: String) -> BackendError {
        BackendError::Driver { device: self.ctx.name().to_string(), scope: scope.to_string(), reason }
    }

    /// Everything of one run between the error scopes.
    fn run_scoped(
        &self,
        inputs: &[(NodeId, &Tensor)],
        start: Instant,
    ) -> Result<(Vec<Tensor>, RunProfile), BackendError> {
        let ctx = self.ctx.clone();
        let name = ctx.name();
        for &(node, leaf) in &self.inputs {
            let tensor = inputs
                .iter()
                .find(|(id, _)| *id == node)
                .map(|(_, t)| *t)
                .ok_or_else(|| self.refuse("run", format!("input {node} was not given")))?;
            let bytes = to_words(name, &format!("input {node}"), tensor)?;
            let buffer =
                self.leaves.get(leaf).ok_or_else(|| self.refuse("run", format!("no buffer for {node}")))?;
            if !bytes.is_empty() {
                ctx.queue.write_buffer(buffer, 0, &bytes);
            }
        }
        let uploaded = start.elapsed();

        let mut encoder =
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("rlx run") });
        {
            let timestamp_writes = self.timestamps.as_ref().map(|t| wgpu::ComputePassTimestampWrites {
                query_set: &t.queries,
                beginning_of_pass_write_index: Some(0),
                end_of_pass_write_index: Some(1),
            });
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("rlx steps"),
                timestamp_writes,
            });
            // wgpu orders dependent dispatches of one pass itself (a barrier wherever a
            // dispatch uses what an earlier one wrote).
            for step in &self.steps {
                pass.set_pipeline(&step.pipeline.pipeline);
                pass.set_bind_group(0, &step.bind_group, &[]);
                if step.pipeline.uses_immediates() {
                    pass.set_immediates(0, &step.params);
                }
                let [x, y, z] = step.workgroups;
                pass.dispatch_workgroups(x, y, z);
            }
        }
        if let Some(t) = &self.timestamps {
            encoder.resolve_query_set(&t.queries, 0..2, &t.resolve, 0);
            if let Some(dst) = self.staging.buffers.get(t.place.buffer) {
                encoder.copy_buffer_to_buffer(&t.resolve, 0, dst, t.place.offset, TIMESTAMP_BYTES);
            }
        }
        for (out, _) in &self.outputs {
            if let Some((operand, place)) = out {
                let src = self
                    .buffer(operand.buffer)
                    .ok_or_else(|| self.refuse("run", "no output buffer".into()))?;
                let dst = self
                    .staging
                    .buffers
                    .get(place.buffer)
                    .ok_or_else(|| self.refuse("run", "no staging".into()))?;
                encoder.copy_buffer_to_buffer(src, operand.offset, dst, place.offset, operand.size);
            }
        }
        let submitted = Instant::now();
        ctx.queue.submit([encoder.finish()]);
        let maps = (!self.staging.buffers.is_empty()).then(|| self.staging.map_all());
        ctx.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| self.refuse("waiting for a run", e.to_string()))?;
        let waited = submitted.elapsed();

        let Some(maps) = maps else {
            return Ok((Vec::new(), profile(start, uploaded, waited, None)));
        };
        let mut mapped = Vec::new();
        let mut failure = None;
        for _ in 0..self.staging.buffers.len() {
            match maps.try_recv() {
                Ok((i, Ok(()))) => mapped.push(i),
                Ok((i, Err(e))) => failure = Some(format!("mapping staging buffer {i}: {e}")),
                Err(_) => failure = Some("a staging buffer was not mapped after the wait".into()),
            }
        }
        let read = match failure {
            Some(reason) => Err(self.refuse("reading back outputs", reason)),
            None => self.read_outputs(),
        };
        self.staging.unmap(&mapped);
        let (outputs, gpu_ns) = read?;
        Ok((outputs, profile(start, uploaded, waited, gpu_ns)))
    }

    /// Converts the mapped staging bytes into the output tensors, and the GPU time of the pass
    /// when timestamps were taken.
    fn read_outputs(&self) -> Result<(Vec<Tensor>, Option<f64>), BackendError> {
        let name = self.ctx.name();
        let mut tensors = Vec::with_capacity(self.outputs.len());
        for (i, (out, ty)) in self.outputs.iter().enumerate() {
            let what = format!("output {i}");
            tensors.push(match out {
                Some((_, place)) => {
                    let convert = |bytes: &[u8]| from_words(name, &what, bytes, ty);
                    self.staging
                        .read(*place, convert)
                        .map_err(|r| self.refuse("reading back outputs", r))??
                }
                None => {
                    if ty.dtype == DType::F16 {
                        return Err(f16_unsupported(name, &what));
                    }
                    Tensor::new(ty.shape.clone(), TensorData::zeros(ty.dtype, 0))?
                }
            });
        }
        let gpu_ns = match &self.timestamps {
            Some(t) => {
                let bytes = self
                    .staging
                    .read(t.place, <[u8]>::to_vec)
                    .map_err(|r| self.refuse("reading timestamps", r))?;
                let tick = |i: usize| {
                    bytes
                        .get(i * 8..i * 8 + 8)
                        .and_then(|s| <[u8; 8]>::try_from(s).ok())
                        .map(u64::from_ne_bytes)
                };
                match (tick(0), tick(1)) {
                    (Some(a), Some(b)) if b > a => Some((b - a) as f64 * t.period),
                    _ => None,
                }
            }
            None => None,
        };
        Ok((tensors, gpu_ns))
    }
}

/// The profile of a finished run: upload (host writes), compute (the pass on the GPU by
/// timestamps, else submit-to-wait on the host), readback (the rest: copies, map, conversion).
fn profile(start: Instant, uploaded: Duration, waited: Duration, gpu_ns: Option<f64>) -> RunProfile {
    let total = start.elapsed();
    let compute = gpu_ns.map_or(waited, |ns| Duration::from_nanos(ns as u64));
    let readback = total.saturating_sub(uploaded).saturating_sub(compute);
    RunProfile { upload: uploaded, compute, readback }
}

/// Refuses buffers past the device's buffer-size limit, naming them, before any allocation.
fn check_sizes(ctx: &Context, s: &Schedule) -> Result<(), BackendError> {
    let limit = ctx.granted.max_buffer_size;
    let named = std::iter::once(("arena of planned intermediates".to_string(), s.arena_bytes))
        .chain(s.leaves.iter().map(|l| (l.node.to_string(), l.bytes)))
        .chain(s.scratch.iter().enumerate().map(|(i, &b)| (format!("scratch {i}"), b)));
    for (node, bytes) in named {
        if bytes > limit {
            return Err(BackendError::LimitExceeded {
                device: ctx.name().to_string(),
                what: "buffer size",
                node,
                requested: bytes,
                limit,
                hint: "use smaller tensors or a smaller batch".into(),
            });
        }
    }
    Ok(())
}

fn storage_buffer(device: &wgpu::Device, label: &str, size: u64) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        // Buffers are at least one word; copies and bindings need multiples of 4.
        size: size.max(4).div_ceil(4) * 4,
        usage: STORAGE,
        mapped_at_creation: false,
    })
}

/// Allocates, uploads and binds everything a schedule needs.
fn build(ctx: Arc<Context>, s: &Schedule) -> Result<WgpuExecutable, BackendError> {
    let device = &ctx.device;
    let name = ctx.name().to_string();
    let arena = storage_buffer(device, "arena", s.arena_bytes);
    let mut leaves = Vec::with_capacity(s.leaves.len());
    let mut inputs = Vec::new();
    let mut params = HashMap::new();
    for (i, leaf) in s.leaves.iter().enumerate() {
        if leaf.ty.dtype == DType::F16 {
            return Err(f16_unsupported(&name, &format!("leaf {}", leaf.node)));
        }
        let label = match &leaf.kind {
            LeafKind::Input(n) => format!("{} input {n}", leaf.node),
            LeafKind::Param(n) => format!("{} param {n}", leaf.node),
            LeafKind::Constant(_) => format!("{} constant", leaf.node),
        };
        let buffer = storage_buffer(device, &label, leaf.bytes);
        match &leaf.kind {
            LeafKind::Input(_) => inputs.push((leaf.node, i)),
            LeafKind::Param(_) => {
                params.insert(leaf.node, i);
            }
            LeafKind::Constant(t) => {
                let bytes = to_words(&name, &label, t)?;
                if !bytes.is_empty() {
                    ctx.queue.write_buffer(&buffer, 0, &bytes);
                }
            }
        }
        leaves.push(buffer);
    }
    let scratch: Vec<wgpu::Buffer> = s
        .scratch
        .iter()
        .enumerate()
        .map(|(i, &b)| storage_buffer(device, &format!("scratch {i}"), b))
        .collect();
    let lookup = |id: BufferId| match id {
        BufferId::Arena => Some(&arena),
        BufferId::Leaf(i) => leaves.get(i),
        BufferId::Scratch(i) => scratch.get(i),
    };

    let mut steps = Vec::with_capacity(s.steps.len());
    let mut uniforms = Vec::new();
    for d in &s.steps {
        let writable = Writable::of_step(rlx_gpu::variant(d.key).bindings, &d.operands);
        let pipeline = ctx.pipeline(d.key, writable)?;
        let uniform = (!pipeline.uses_immediates()).then(|| {
            let buffer = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(&format!("{} params", d.label)),
                size: d.params.len().max(16) as u64,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            ctx.queue.write_buffer(&buffer, 0, &d.params);
            buffer
        });
        let mut entries = Vec::with_capacity(d.operands.len() + 1);
        for (i, op) in d.operands.iter().enumerate() {
            let buffer = lookup(op.buffer).ok_or_else(|| BackendError::Driver {
                device: name.clone(),
                scope: format!("binding step '{}'", d.label),
                reason: format!("operand {i} names a buffer the schedule does not have: {:?}", op.buffer),
            })?;
            entries.push(wgpu::BindGroupEntry {
                binding: i as u32,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer,
                    offset: op.offset,
                    size: NonZeroU64::new(op.size),
                }),
            });
        }
        if let (Some(u), rlx_gpu::ParamsBinding::Uniform { binding }) = (&uniform, pipeline.params) {
            entries.push(wgpu::BindGroupEntry { binding, resource: u.as_entire_binding() });
        }
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(&d.label),
            layout: &pipeline.layout,
            entries: &entries,
        });
        steps.push(Step { pipeline, bind_group, params: d.params.clone(), workgroups: d.workgroups });
        uniforms.extend(uniform);
    }

    // Staging: the non-empty outputs in order, then the timestamps.
    let timestamps_on = ctx.info.features.timestamp_query;
    let mut sizes: Vec<u64> = s.outputs.iter().filter_map(|(op, _)| op.map(|o| o.size)).collect();
    if timestamps_on {
        sizes.push(TIMESTAMP_BYTES);
    }
    let (buffer_sizes, places) = staging::plan(&sizes, ctx.granted.max_buffer_size);
    let staging = Staging::new(device, &buffer_sizes);
    let mut places = places.into_iter();
    let outputs = s
        .outputs
        .iter()
        .map(|(op, ty)| (op.and_then(|o| places.next().map(|p| (o, p))), ty.clone()))
        .collect();
    let timestamps = match places.next() {
        Some(place) if timestamps_on => Some(Timestamps {
            queries: device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("rlx pass timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: 2,
            }),
            resolve: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("rlx timestamps"),
                size: TIMESTAMP_BYTES,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }),
            place,
            period: f64::from(ctx.queue.get_timestamp_period()),
        }),
        _ => None,
    };
    Ok(WgpuExecutable {
        ctx,
        arena,
        leaves,
        scratch,
        inputs,
        params,
        steps,
        _uniforms: uniforms,
        outputs,
        staging,
        timestamps,
        profile: None,
    })
}

impl Executable for WgpuExecutable {
    fn set_param(&mut self, id: NodeId, value: &Tensor) -> Result<(), BackendError> {
        let ctx = self.ctx.clone();
        let leaf =
            *self.params.get(&id).ok_or_else(|| self.refuse("set_param", format!("{id} is not a param")))?;
        let bytes = to_words(ctx.name(), &format!("param {id}"), value)?;
        let buffer =
            self.leaves.get(leaf).ok_or_else(|| self.refuse("set_param", format!("no buffer for {id}")))?;
        ctx.guarded(&format!("setting param {id}"), bytes.len() as u64, || {
            if !bytes.is_empty() {
                ctx.queue.write_buffer(buffer, 0, &bytes);
            }
            Ok(())
        })
    }

    fn run(&mut self, inputs: &[(NodeId, &Tensor)]) -> Result<Vec<Tensor>, BackendError> {
        let start = Instant::now();
        let ctx = self.ctx.clone();
        let scope = format!("running {} steps", self.steps.len());
        let (outputs, profile) = ctx.guarded(&scope, 0, || self.run_scoped(inputs, start))?;
        self.profile = Some(profile);
        Ok(outputs)
    }

    fn last_profile(&self) -> Option<RunProfile> {
        self.profile
    }
}
