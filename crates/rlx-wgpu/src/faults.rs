//! Device loss on wgpu: wgpu reports it through the device-lost callback, which records it in
//! the context's error log (rlx-gpu's [`LossState`](rlx_gpu::driver::LossState)); from then on
//! every call returns `DeviceLost`. [`DeviceLossTrigger`] destroys the device on purpose, for
//! tests of everything above the driver. Out-of-memory and other driver errors come through
//! error scopes and the uncaptured-error log ([`crate::error`]).

use crate::context::Context;
use rlx_backend::BackendError;
use std::sync::Arc;

/// See [`WgpuBackend::device_loss_trigger`](crate::WgpuBackend::device_loss_trigger).
#[doc(hidden)]
pub struct DeviceLossTrigger {
    pub(crate) ctx: Arc<Context>,
}

impl DeviceLossTrigger {
    /// Destroys the device and waits until wgpu has reported it lost.
    pub fn destroy_device(&self) {
        self.ctx.device.destroy();
        // wgpu calls the device-lost callback from `poll` once the queue is empty.
        let _ = self.ctx.device.poll(wgpu::PollType::wait_indefinitely());
    }
}

impl Context {
    /// `DeviceLost` once the device-lost callback has fired.
    pub(crate) fn check_lost(&self, scope: &str) -> Result<(), BackendError> {
        self.log.loss.check(self.name(), scope, |reason| reason)
    }
}
