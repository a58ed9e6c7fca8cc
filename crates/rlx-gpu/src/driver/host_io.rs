//! Where a driver that stages host I/O (rlx-vulkan on discrete GPUs) copies each input and
//! output: rlx-gpu's [`IoPlan`] resolved against an executable's buffers and its upload and
//! readback staging buffers. Without staging buffers (unified memory) the host writes the leaf
//! buffers and reads the outputs in place, and no copies are recorded.

use crate::{BufferId, Buffers, GpuError, IoPlan, Place, Schedule};
use rlx_backend::BackendError;
use rlx_ir::{NodeId, TensorType};

/// One buffer-to-buffer copy to record.
pub struct Copy<B> {
    pub src: B,
    pub src_offset: u64,
    pub dst: B,
    pub dst_offset: u64,
    pub size: u64,
}

/// Where the host reads one graph output: a buffer and offset (`None` when empty), and its type.
pub type HostOutput<B> = (Option<(B, u64)>, TensorType);

/// The host I/O of one executable over buffers of type `B`.
pub struct HostIo<B> {
    /// Input nodes in upload order with where the host writes them: a staging place, or the
    /// leaf buffer itself.
    pub inputs: Vec<(NodeId, B, u64)>,
    /// Staging → leaf copies, before the kernels.
    pub uploads: Vec<Copy<B>>,
    /// Per graph output: the buffer and offset the host reads (`None` when empty), and its type.
    pub outputs: Vec<HostOutput<B>>,
    /// Result → staging copies, after the kernels.
    pub readbacks: Vec<Copy<B>>,
}

/// Resolves `io` (planned for `schedule`) against `buffers` and the staging buffers `upload`
/// and `readback` (empty where the host reads and writes device buffers in place).
pub fn host_io<B: Clone>(
    io: &IoPlan,
    schedule: &Schedule,
    buffers: &Buffers<B>,
    upload: &[B],
    readback: &[B],
) -> Result<HostIo<B>, GpuError> {
    let staged = |list: &[B], p: &Place| list.get(p.buffer).cloned().map(|b| (b, p.offset));
    let mut host =
        HostIo { inputs: Vec::new(), uploads: Vec::new(), outputs: Vec::new(), readbacks: Vec::new() };
    for &(leaf, node, place) in &io.inputs {
        let dst = buffers.get(BufferId::Leaf(leaf))?;
        match staged(upload, &place) {
            Some((src, offset)) => {
                let size = place.size;
                host.uploads.push(Copy {
                    src: src.clone(),
                    src_offset: offset,
                    dst: dst.clone(),
                    dst_offset: 0,
                    size,
                });
                host.inputs.push((node, src, offset));
            }
            None => host.inputs.push((node, dst.clone(), 0)),
        }
    }
    for (out, (_, ty)) in io.outputs.iter().zip(&schedule.outputs) {
        let from = match out {
            Some((op, place)) => {
                let src = buffers.get(op.buffer)?;
                match staged(readback, place) {
                    Some((dst, offset)) => {
                        let (src_offset, size) = (op.offset, op.size);
                        host.readbacks.push(Copy {
                            src: src.clone(),
                            src_offset,
                            dst: dst.clone(),
                            dst_offset: offset,
                            size,
                        });
                        Some((dst, offset))
                    }
                    None => Some((src.clone(), op.offset)),
                }
            }
            None => None,
        };
        host.outputs.push((from, ty.clone()));
    }
    Ok(host)
}

/// Plans and resolves the host I/O of `schedule` in one step. With `staged`, inputs and outputs
/// are packed (offsets aligned to `align`, at most `max_buffer` bytes a buffer) into staging
/// buffers that `alloc(label, bytes, upload)` creates, upload buffers first, labelled
/// `"<graph> upload staging <i>"` and `"<graph> readback staging <i>"`; without, the host reads and
/// writes the device buffers in place. `device` names the device in errors.
pub fn staged_host_io<B: Clone>(
    schedule: &Schedule,
    buffers: &Buffers<B>,
    device: &str,
    staged: bool,
    (align, max_buffer): (u64, u64),
    mut alloc: impl FnMut(&str, u64, bool) -> Result<B, BackendError>,
) -> Result<HostIo<B>, BackendError> {
    let io = IoPlan::new(schedule, align, max_buffer);
    let mut staging = |sizes: &[u64], upload: bool| -> Result<Vec<B>, BackendError> {
        if !staged {
            return Ok(Vec::new());
        }
        let what = if upload { "upload" } else { "readback" };
        let label = |i| format!("{} {what} staging {i}", schedule.name);
        sizes.iter().enumerate().map(|(i, &b)| alloc(&label(i), b, upload)).collect()
    };
    let upload = staging(&io.upload_buffers, true)?;
    let readback = staging(&io.readback_buffers, false)?;
    host_io(&io, schedule, buffers, &upload, &readback).map_err(|e| crate::backend_error(device, e))
}
