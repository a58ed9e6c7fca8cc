//! The leaves of a compiled graph that the host writes (inputs, params, states), and the checks
//! both drivers make before writing one: the node must be a leaf of the graph, the tensor must
//! have its dtype and size, and every input must be given. The errors are the drivers' own
//! (`Driver`, naming the leaf and both types). Also what the leaves hold before the first write
//! ([`initial_contents`]).

use crate::convert::to_device;
use crate::{LeafKind, Schedule};
use rlx_backend::BackendError;
use rlx_ir::{NodeId, Tensor, TensorType};
use std::borrow::Cow;
use std::collections::HashMap;

/// Leaf index, type and name of every input, param and state node of one schedule.
#[derive(Debug)]
pub struct LeafTable {
    device: String,
    leaves: HashMap<NodeId, (usize, TensorType, String)>,
}

impl LeafTable {
    /// The host-written leaves of `schedule` on `device` (the name errors carry).
    pub fn new(device: &str, schedule: &Schedule) -> Self {
        let leaves = schedule
            .leaves
            .iter()
            .enumerate()
            .filter(|(_, leaf)| !matches!(leaf.kind, LeafKind::Constant(_)))
            .map(|(i, leaf)| (leaf.node, (i, leaf.ty.clone(), leaf.label())))
            .collect();
        LeafTable { device: device.to_string(), leaves }
    }

    /// `Driver` on this device, in `scope`, for `reason`.
    pub fn refuse(&self, scope: impl Into<String>, reason: String) -> BackendError {
        BackendError::Driver { device: self.device.clone(), scope: scope.into(), reason }
    }

    /// The leaf index and name of `id` after checking `value` against it; `what` ("param",
    /// "input") names the write in errors.
    pub fn check(&self, id: NodeId, value: &Tensor, what: &str) -> Result<(usize, &str), BackendError> {
        let Some((index, ty, name)) = self.leaves.get(&id) else {
            return Err(
                self.refuse(format!("writing {what} {id}"), "the compiled graph has no such leaf".into())
            );
        };
        if value.dtype() != ty.dtype || value.numel() != ty.numel() {
            let reason = format!("got {}{}, the compiled graph holds {ty}", value.dtype(), value.shape());
            return Err(self.refuse(format!("writing {what} '{name}'"), reason));
        }
        Ok((*index, name))
    }

    /// [`Self::check`], then `value` in the device's layout ([`to_device`]): the leaf index and
    /// the bytes to write.
    pub fn bytes<'t>(
        &self,
        id: NodeId,
        value: &'t Tensor,
        what: &str,
    ) -> Result<(usize, Cow<'t, [u8]>), BackendError> {
        let (index, name) = self.check(id, value, what)?;
        Ok((index, to_device(value, &self.device, name)?))
    }

    /// The tensor `inputs` gives for input `node`, or the error of a run that lacks it.
    pub fn input<'a>(
        &self,
        inputs: &[(NodeId, &'a Tensor)],
        node: NodeId,
    ) -> Result<&'a Tensor, BackendError> {
        inputs
            .iter()
            .find(|(id, _)| *id == node)
            .map(|(_, t)| *t)
            .ok_or_else(|| self.refuse("run", format!("input {node} was not given")))
    }
}

/// The error of a compile group whose graphs disagree on a shared leaf's type (for
/// [`crate::Buffers::allocate_shared`]).
pub fn group_mismatch<'a>(
    device: &'a str,
    graph: &'a str,
) -> impl Fn(&str, &TensorType, &TensorType) -> BackendError + 'a {
    move |leaf, had, now| BackendError::Driver {
        device: device.to_string(),
        scope: format!("compiling graph '{graph}' into a group"),
        reason: format!("'{leaf}' is {now} here but {had} in another graph of the group"),
    }
}

/// What must be written into leaf buffers right after they are allocated, as (leaf index,
/// device bytes), converted one at a time: every constant, and with `zero_states` every state
/// that `fresh` (from [`crate::Buffers::allocate_shared`]) says was just allocated, as zeros. A
/// driver whose new buffers start zeroed passes `zero_states = false`.
pub fn initial_contents<'a>(
    schedule: &'a Schedule,
    fresh: &'a [bool],
    zero_states: bool,
    device: &'a str,
) -> impl Iterator<Item = Result<(usize, Cow<'a, [u8]>), BackendError>> + 'a {
    schedule.leaves.iter().enumerate().filter_map(move |(i, leaf)| match &leaf.kind {
        LeafKind::Constant(t) => Some(to_device(t, device, &leaf.label()).map(|b| (i, b))),
        LeafKind::State(_) if zero_states && fresh.get(i).copied().unwrap_or(true) => {
            Some(Ok((i, Cow::Owned(vec![0u8; crate::device_bytes(&leaf.ty) as usize]))))
        }
        LeafKind::Input(_) | LeafKind::Param(_) | LeafKind::State(_) => None,
    })
}
