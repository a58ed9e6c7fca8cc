//! Live objects of a wgpu device, from wgpu's own counters (the `counters` feature): they count
//! what wgpu-hal creates and destroys on the device, so objects wgpu keeps alive internally
//! show too, not only the ones this crate holds.

use crate::context::Context;
use rlx_backend::LiveObjects;

impl Context {
    /// wgpu's counts for this device, in rlx's kinds.
    pub(crate) fn live_objects(&self) -> LiveObjects {
        let c = self.device.get_internal_counters().hal;
        let n = |v: isize| v as i64;
        LiveObjects {
            buffers: n(c.buffers.read()),
            buffer_bytes: n(c.buffer_memory.read()),
            pipelines: n(c.compute_pipelines.read()),
            bind_groups: n(c.bind_groups.read()),
            command_buffers: n(c.command_encoders.read()),
            other: n(c.bind_group_layouts.read()
                + c.pipeline_layouts.read()
                + c.shader_modules.read()
                + c.fences.read()
                + c.query_sets.read()
                + c.textures.read()
                + c.texture_views.read()
                + c.samplers.read()),
        }
    }
}
