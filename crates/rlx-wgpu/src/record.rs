//! Encoding one run: every step in one compute pass (wgpu orders dependent dispatches itself,
//! from the per-buffer usage that rlx-gpu's pools make exact), GPU timestamps around the pass,
//! then the copies of the outputs (and timestamps) into the readback staging.

use crate::executable::{WgpuExecutable, TIMESTAMP_BYTES};
use rlx_backend::BackendError;

/// The command buffer of one run of `exe`.
pub(crate) fn encode(exe: &WgpuExecutable) -> Result<wgpu::CommandBuffer, BackendError> {
    let ctx = &exe.ctx;
    let mut encoder =
        ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("rlx run") });
    {
        let timestamp_writes = exe.timestamps.as_ref().map(|t| wgpu::ComputePassTimestampWrites {
            query_set: &t.queries,
            beginning_of_pass_write_index: Some(0),
            end_of_pass_write_index: Some(1),
        });
        let mut pass = encoder
            .begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("rlx steps"), timestamp_writes });
        for step in &exe.steps {
            pass.set_pipeline(&step.pipeline.pipeline);
            pass.set_bind_group(0, &step.bind_group, &[]);
            if step.pipeline.uses_immediates() {
                pass.set_immediates(0, &step.params);
            }
            let [x, y, z] = step.workgroups;
            pass.dispatch_workgroups(x, y, z);
        }
    }
    if let Some(t) = &exe.timestamps {
        encoder.resolve_query_set(&t.queries, 0..2, &t.resolve, 0);
        if let Some(dst) = exe.staging.buffers.get(t.place.buffer) {
            encoder.copy_buffer_to_buffer(&t.resolve, 0, dst, t.place.offset, TIMESTAMP_BYTES);
        }
    }
    let missing = |what: &str| BackendError::Driver {
        device: ctx.name().to_string(),
        scope: "encoding a run".into(),
        reason: format!("no {what} buffer"),
    };
    for (operand, place) in exe.outputs.iter().filter_map(|(o, _)| o.as_ref()) {
        let src = exe.buffers.get(operand.buffer).map_err(|_| missing("output"))?;
        let dst = exe.staging.buffers.get(place.buffer).ok_or_else(|| missing("staging"))?;
        encoder.copy_buffer_to_buffer(src, operand.offset, dst, place.offset, operand.size);
    }
    Ok(encoder.finish())
}
