//! A compiled graph on one wgpu device. Compile builds everything once from rlx-gpu's
//! validated schedule: a buffer per pool, leaf and scratch request (each value its own buffer,
//! so inputs are bound read-only and wgpu's tracker puts barriers only between dependent
//! steps), constants uploaded, pipelines from the device cache, one uniform buffer per step
//! where params cannot travel as immediates, bind groups, readback staging. `run` writes the
//! inputs, encodes the run ([`crate::record`]), submits once, waits once and converts the
//! outputs back to tensors.

use crate::buffer::{self, Staging};
use crate::context::Context;
use crate::pipeline::Pipeline;
use rlx_backend::{BackendError, Executable, LocalFuture, RunProfile};
use rlx_gpu::convert::{from_device, to_device};
use rlx_gpu::driver::{group_mismatch, initial_contents, LeafTable};
use rlx_gpu::{BufferId, Buffers, Operand, Place, SharedLeaves, ValidSchedule};
use rlx_ir::{NodeId, Tensor, TensorType};
use std::num::NonZeroU64;
use std::sync::Arc;
use std::time::Duration;
use web_time::Instant;

/// One kernel launch, ready to record.
pub(crate) struct Step {
    pub pipeline: Arc<Pipeline>,
    pub bind_group: wgpu::BindGroup,
    /// Set as immediates when the pipeline takes them (else already in its uniform buffer).
    pub params: Vec<u8>,
    pub workgroups: [u32; 3],
}

/// GPU timestamps around the compute pass.
pub(crate) struct Timestamps {
    pub queries: wgpu::QuerySet,
    pub resolve: wgpu::Buffer,
    pub place: Place,
    /// Nanoseconds per timestamp tick.
    pub period: f64,
}

/// Bytes a timestamp pair takes (two u64).
pub(crate) const TIMESTAMP_BYTES: u64 = 16;

pub(crate) struct WgpuExecutable {
    pub(crate) ctx: Arc<Context>,
    pub(crate) buffers: Buffers<wgpu::Buffer>,
    /// Leaf index, type and name of every input, param and state node.
    leaves: LeafTable,
    /// Input nodes in upload order.
    inputs: Vec<NodeId>,
    pub(crate) steps: Vec<Step>,
    // Bound by the steps' bind groups; kept alive with them.
    _uniforms: Vec<wgpu::Buffer>,
    /// Each graph output: where it lives and where it lands in the staging buffers (`None` for
    /// an empty output), and its type.
    pub(crate) outputs: Vec<(Option<(Operand, Place)>, TensorType)>,
    pub(crate) staging: Staging,
    pub(crate) timestamps: Option<Timestamps>,
    profile: Option<RunProfile>,
}

impl WgpuExecutable {
    /// Allocates, uploads and binds everything `s` needs (validated by rlx-gpu: not checked
    /// again here), inside the device's error scopes.
    /// Params and states already in `shared` (by name, from other executables of the compile
    /// group) are bound, not allocated; new ones are added to it.
    /// Pipelines are built first (each in its own scopes), then everything else in one scope.
    pub(crate) async fn build(
        ctx: Arc<Context>,
        s: &ValidSchedule,
        shared: &mut SharedLeaves<wgpu::Buffer>,
    ) -> Result<Self, BackendError> {
        check_sizes(&ctx, s)?;
        for d in &s.steps {
            ctx.build_pipeline(d.key).await?;
        }
        let scope = format!("compiling graph '{}' ({} steps)", s.name, s.steps.len());
        let c = ctx.clone();
        let exe = c.guarded(&scope, s.total_bytes(), || build(ctx, s, shared)).await?;
        // New pipelines reach the disk now, not only when the backend drops (a crash or an
        // abort skips drops).
        c.save_pipeline_cache();
        Ok(exe)
    }

    fn refuse(&self, scope: &str, reason: String) -> BackendError {
        self.leaves.refuse(scope, reason)
    }

    /// The leaf buffer of `id` after checking `value` against it.
    fn leaf(&self, id: NodeId, value: &Tensor, what: &str) -> Result<(&wgpu::Buffer, &str), BackendError> {
        let (index, name) = self.leaves.check(id, value, what)?;
        let buffer = self
            .buffers
            .get(BufferId::Leaf(index))
            .map_err(|e| rlx_gpu::backend_error(self.ctx.name(), e))?;
        Ok((buffer, name))
    }

    /// Everything of one run between the device checks.
    async fn run_checked(
        &self,
        inputs: &[(NodeId, &Tensor)],
        start: Instant,
    ) -> Result<(Vec<Tensor>, RunProfile), BackendError> {
        let ctx = &self.ctx;
        for &node in &self.inputs {
            let tensor = self.leaves.input(inputs, node)?;
            let (buffer, name) = self.leaf(node, tensor, "input")?;
            let bytes = to_device(tensor, ctx.name(), name)?;
            if !bytes.is_empty() {
                ctx.queue.write_buffer(buffer, 0, &bytes);
            }
        }
        let uploaded = start.elapsed();
        let commands = crate::record::encode(self)?;
        let submitted = Instant::now();
        ctx.queue.submit([commands]);
        let maps = (!self.staging.buffers.is_empty()).then(|| self.staging.map_all());
        // Native: blocks until the maps' callbacks ran. Web: returns at once; the browser
        // runs the callbacks, and the await below yields to its event loop until then.
        ctx.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| self.refuse("waiting for a run", e.to_string()))?;
        let Some(maps) = maps else {
            return Ok((Vec::new(), profile(start, uploaded, submitted.elapsed(), None)));
        };
        let results = maps.await;
        let waited = submitted.elapsed();
        let mut mapped = Vec::new();
        let mut failure = None;
        for (i, r) in results {
            match r {
                Ok(()) => mapped.push(i),
                Err(e) => failure = Some(format!("mapping staging buffer {i}: {e}")),
            }
        }
        let read = match failure {
            Some(reason) => Err(self.refuse("reading back outputs", reason)),
            None => self.read_outputs(),
        };
        self.staging.unmap(&mapped);
        let (tensors, gpu_ns) = read?;
        Ok((tensors, profile(start, uploaded, waited, gpu_ns)))
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
                    let len = rlx_gpu::device_bytes(ty) as usize;
                    let convert =
                        |bytes: &[u8]| from_device(bytes.get(..len).unwrap_or(bytes), ty, name, &what);
                    self.staging
                        .read(*place, convert)
                        .map_err(|r| self.refuse("reading back outputs", r))??
                }
                None => Tensor::try_zeros(ty.shape.clone(), ty.dtype)?,
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
    rlx_gpu::driver::rest_profile(start.elapsed(), uploaded, waited, gpu_ns)
}

/// Refuses buffers past the device's buffer-size limit, naming them, before any allocation.
fn check_sizes(ctx: &Context, s: &ValidSchedule) -> Result<(), BackendError> {
    let limit = ctx.granted.max_buffer_size;
    match s.buffers().into_iter().find(|b| b.bytes > limit) {
        Some(b) => Err(BackendError::LimitExceeded {
            device: ctx.name().to_string(),
            what: "buffer size",
            node: b.label,
            requested: b.bytes,
            limit,
            hint: "use smaller tensors or a smaller batch".into(),
        }),
        None => Ok(()),
    }
}

/// Allocates, uploads and binds everything a schedule needs.
fn build(
    ctx: Arc<Context>,
    s: &ValidSchedule,
    shared: &mut SharedLeaves<wgpu::Buffer>,
) -> Result<WgpuExecutable, BackendError> {
    let device = &ctx.device;
    let name = ctx.name().to_string();
    let gpu = |e| rlx_gpu::backend_error(&name, e);
    // wgpu zero-fills new buffers, so a new state starts at zeros with no write.
    let (buffers, fresh) = Buffers::allocate_shared(
        s,
        shared,
        |spec| Ok::<_, BackendError>(buffer::storage(device, &spec.label, spec.bytes)),
        group_mismatch(&name, &s.name),
    )?;
    for written in initial_contents(s, &fresh, false, &name) {
        let (i, bytes) = written?;
        if !bytes.is_empty() {
            ctx.queue.write_buffer(buffers.get(BufferId::Leaf(i)).map_err(gpu)?, 0, &bytes);
        }
    }
    let leaves = LeafTable::new(&name, s);
    let inputs = s.inputs().map(|(_, l)| l.node).collect();

    let mut steps = Vec::with_capacity(s.steps.len());
    let mut uniforms = Vec::new();
    for d in s.steps.iter() {
        let pipeline = ctx.built_pipeline(d.key)?;
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
            entries.push(wgpu::BindGroupEntry {
                binding: i as u32,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: buffers.get(op.buffer).map_err(gpu)?,
                    offset: op.offset,
                    size: NonZeroU64::new(op.binding_size()),
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
    let (buffer_sizes, places) =
        rlx_gpu::bind::pack(&sizes, wgpu::MAP_ALIGNMENT, ctx.granted.max_buffer_size);
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
        buffers,
        leaves,
        inputs,
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
        let device = self.ctx.name().to_string();
        crate::wait(&device, "set_param", self.set_param_async(id, value))
    }

    fn set_param_async<'a>(
        &'a mut self,
        id: NodeId,
        value: &'a Tensor,
    ) -> LocalFuture<'a, Result<(), BackendError>> {
        Box::pin(async move {
            let ctx = self.ctx.clone();
            let (buffer, name) = self.leaf(id, value, "param")?;
            let bytes = to_device(value, ctx.name(), name)?;
            let scope = format!("setting param '{name}'");
            ctx.guarded(&scope, bytes.len() as u64, || {
                if !bytes.is_empty() {
                    ctx.queue.write_buffer(buffer, 0, &bytes);
                }
                Ok(())
            })
            .await
        })
    }

    fn run(&mut self, inputs: &[(NodeId, &Tensor)]) -> Result<Vec<Tensor>, BackendError> {
        let device = self.ctx.name().to_string();
        crate::wait(&device, "run", self.run_async(inputs))
    }

    /// Without error scopes (validated at compile time; three scopes per call cost more than
    /// a small graph's GPU time): the device-lost flag and the uncaptured-error log are checked
    /// before and after instead.
    fn run_async<'a>(
        &'a mut self,
        inputs: &'a [(NodeId, &'a Tensor)],
    ) -> LocalFuture<'a, Result<Vec<Tensor>, BackendError>> {
        Box::pin(async move {
            let start = Instant::now();
            let ctx = self.ctx.clone();
            let scope = format!("running {} steps", self.steps.len());
            ctx.check_lost(&scope)?;
            let result = self.run_checked(inputs, start).await;
            let (outputs, profile) = ctx.settle(&scope, 0, result)?;
            self.profile = Some(profile);
            Ok(outputs)
        })
    }

    fn last_profile(&self) -> Option<RunProfile> {
        self.profile
    }
}
