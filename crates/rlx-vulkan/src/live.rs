//! Live objects of a Vulkan context: each object counts itself in the context's
//! [`rlx_backend::LiveCounters`] when it is created and uncounts itself when it is destroyed
//! (a `LiveGuard` next to its handles), so a soak run can show that nothing leaks.

use crate::context::Context;
use rlx_backend::LiveObjects;

impl Context {
    /// The objects of this device alive now (buffers, pipelines, descriptor sets, command
    /// buffers, fences and pools), counted at creation and destruction.
    pub fn live_objects(&self) -> LiveObjects {
        self.shared.live.snapshot()
    }
}
