//! Buffers and host I/O.
//!
//! A [`GpuBuffer`] is one VkBuffer with its own memory allocation. Where it lives follows the
//! context's [`MemoryStrategy`]: host-visible and persistently mapped on unified memory (host
//! I/O is a memcpy), DEVICE_LOCAL on discrete GPUs (host I/O goes through one staging buffer
//! that grows as needed and is reused).

use crate::context::{lock, Context, MemoryStrategy, Shared};
use crate::record::{memory_barrier, Commands};
use ash::vk;
use rlx_backend::BackendError;
use rlx_gpu::driver::Failure;
use std::sync::Arc;

/// What a buffer is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferRole {
    /// Tensors the kernels read and write.
    Storage,
    /// Host-visible, host-cached memory for copies to and from DEVICE_LOCAL buffers (fast
    /// host reads).
    Staging,
    /// Host-visible memory the host only writes (write-combined where offered).
    Upload,
}

/// One device buffer.
pub struct GpuBuffer {
    shared: Arc<Shared>,
    pub(crate) buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    size: u64,
    /// Start of the persistent mapping; null when the memory is not host-visible.
    mapped: *mut u8,
    label: String,
    /// The heap and byte count reserved in the context's budget, returned on drop.
    reserved: Option<(usize, u64)>,
    /// Counts the buffer and its memory as live while it exists.
    _live: rlx_backend::LiveGuard,
}

// SAFETY: the mapping is plain device memory that Rust never hands out references to; it is
// only copied to and from with explicit ranges checked against `size`. All handles are Send
// and Sync in ash.
unsafe impl Send for GpuBuffer {}
unsafe impl Sync for GpuBuffer {}

impl Drop for GpuBuffer {
    fn drop(&mut self) {
        // SAFETY: no program can still use the buffer: programs hold an Arc to every buffer
        // they bind. Destroying null handles (a half-built buffer) is a no-op.
        unsafe {
            self.shared.device.destroy_buffer(self.buffer, None);
            self.shared.device.free_memory(self.memory, None);
        }
        if let Some((heap, bytes)) = self.reserved {
            self.shared.budget.release(heap, bytes);
        }
    }
}

impl std::fmt::Debug for GpuBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuBuffer").field("label", &self.label).field("size", &self.size).finish()
    }
}

impl GpuBuffer {
    pub(crate) fn new(
        shared: &Arc<Shared>,
        label: &str,
        size: u64,
        role: BufferRole,
    ) -> Result<Self, BackendError> {
        let scope = || format!("allocating buffer '{label}' ({size} bytes)");
        shared.check_lost(&scope())?;
        let limit = shared.info.limits.max_memory_allocation_size;
        if limit > 0 && size > limit {
            return Err(BackendError::LimitExceeded {
                device: shared.name().to_string(),
                what: "buffer size",
                node: label.to_string(),
                requested: size,
                limit,
                hint: "split the tensor or use a smaller batch".into(),
            });
        }
        let mut buf = GpuBuffer {
            shared: shared.clone(),
            buffer: vk::Buffer::null(),
            memory: vk::DeviceMemory::null(),
            size,
            mapped: std::ptr::null_mut(),
            label: label.to_string(),
            reserved: None,
            _live: rlx_backend::LiveGuard::none(),
        };
        let dev = &shared.device;
        let usage = match role {
            BufferRole::Storage => {
                vk::BufferUsageFlags::STORAGE_BUFFER
                    | vk::BufferUsageFlags::TRANSFER_SRC
                    | vk::BufferUsageFlags::TRANSFER_DST
            }
            BufferRole::Staging | BufferRole::Upload => {
                vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST
            }
        };
        // Vulkan has no empty buffers; an empty tensor gets 4 bytes nobody reads.
        let info = vk::BufferCreateInfo::default()
            .size(size.max(4))
            .usage(usage)
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        // SAFETY (whole function): calls on a live device with create-infos that outlive them;
        // `buf`'s Drop releases whatever was created if a later step fails.
        buf.buffer = unsafe { dev.create_buffer(&info, None) }.map_err(|r| shared.err(scope(), size, r))?;
        let req = unsafe { dev.get_buffer_memory_requirements(buf.buffer) };

        use vk::MemoryPropertyFlags as M;
        let host = M::HOST_VISIBLE | M::HOST_COHERENT;
        let (required, preferred) = match (role, shared.strategy) {
            (BufferRole::Storage, MemoryStrategy::Unified) => (host, M::DEVICE_LOCAL),
            (BufferRole::Storage, MemoryStrategy::Discrete) => (M::DEVICE_LOCAL, M::empty()),
            // Cached memory makes readback fast; coherent makes flushes unnecessary.
            (BufferRole::Staging, _) => (host, M::HOST_CACHED),
            (BufferRole::Upload, _) => (host, M::empty()),
        };
        let Some(type_index) = shared.memory_type(req.memory_type_bits, required, preferred) else {
            return Err(BackendError::Driver {
                device: shared.name().to_string(),
                scope: scope(),
                reason: format!("no memory type with {required:?} is allowed for this buffer"),
            });
        };
        let heap = shared.memory.memory_types[type_index as usize].heap_index as usize;
        let out_of_memory =
            |why| Failure::OutOfMemory.error(shared.name(), format!("{} ({why})", scope()), req.size);
        shared.budget.reserve(heap, req.size).map_err(out_of_memory)?;
        buf.reserved = Some((heap, req.size));
        let alloc = vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(type_index);
        buf.memory =
            unsafe { dev.allocate_memory(&alloc, None) }.map_err(|r| shared.err(scope(), req.size, r))?;
        buf._live = shared.live.track(rlx_backend::LiveKind::Buffer, 1, req.size as i64);
        unsafe { dev.bind_buffer_memory(buf.buffer, buf.memory, 0) }
            .map_err(|r| shared.err(scope(), size, r))?;
        let flags = shared.memory.memory_types[type_index as usize].property_flags;
        // On discrete GPUs even host-visible device memory (resizable BAR) is read over PCIe
        // uncached, so storage buffers always go through staging there.
        let map = role != BufferRole::Storage || shared.strategy == MemoryStrategy::Unified;
        if map && flags.contains(M::HOST_VISIBLE) {
            let ptr = unsafe { dev.map_memory(buf.memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()) }
                .map_err(|r| shared.err(format!("mapping buffer '{label}'"), size, r))?;
            buf.mapped = ptr.cast();
        }
        shared.label(buf.buffer, label);
        Ok(buf)
    }

    /// Size in bytes as requested.
    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    /// True when the host reads and writes the buffer in place.
    pub fn is_host_visible(&self) -> bool {
        !self.mapped.is_null()
    }

    pub(crate) fn belongs_to(&self, shared: &Arc<Shared>) -> bool {
        Arc::ptr_eq(&self.shared, shared)
    }

    /// Checks that [offset, offset + len) lies inside the buffer.
    pub(crate) fn check_range(&self, offset: u64, len: u64) -> Result<(), BackendError> {
        rlx_gpu::driver::check_range(self.shared.name(), &self.label, self.size, offset, len)
    }

    /// Copies `bytes` into the mapping at `offset`: an error when the range passes the end or the
    /// buffer is not host-visible.
    pub(crate) fn write_at(&self, offset: u64, bytes: &[u8]) -> Result<(), BackendError> {
        self.check_range(offset, bytes.len() as u64)?;
        self.check_mapped("writing")?;
        self.write_mapped(offset, bytes);
        Ok(())
    }

    /// The mapped bytes [offset, offset + len): an error when the range passes the end or the
    /// buffer is not host-visible. The caller makes sure no device work writes them meanwhile
    /// (executables read only after waiting for their run).
    pub(crate) fn mapped_bytes(&self, offset: u64, len: u64) -> Result<&[u8], BackendError> {
        self.check_range(offset, len)?;
        self.check_mapped("reading")?;
        // SAFETY: the range lies inside the mapping (checked above; the mapping covers `size`),
        // the mapping lives as long as `self`, and no device write overlaps the borrow.
        Ok(unsafe { std::slice::from_raw_parts(self.mapped.add(offset as usize), len as usize) })
    }

    fn check_mapped(&self, what: &str) -> Result<(), BackendError> {
        if self.mapped.is_null() {
            return Err(BackendError::Driver {
                device: self.shared.name().to_string(),
                scope: format!("{what} buffer '{}' from the host", self.label),
                reason: "the buffer is not host-visible".into(),
            });
        }
        Ok(())
    }

    /// Copies `bytes` into the mapping at `offset` (range already checked, buffer mapped).
    fn write_mapped(&self, offset: u64, bytes: &[u8]) {
        // SAFETY: the caller checked offset + len ≤ size ≤ the mapped allocation, and the
        // mapping is not null; no device work touches it meanwhile (runs are waited for), and
        // the slice lives only for this copy.
        let dst = unsafe { std::slice::from_raw_parts_mut(self.mapped.add(offset as usize), bytes.len()) };
        rlx_gpu::convert::copy_bytes(dst, bytes);
    }

    /// Copies from the mapping at `offset` into `out` (range already checked, buffer mapped).
    fn read_mapped(&self, offset: u64, out: &mut [u8]) {
        // SAFETY: as in `write_mapped`.
        unsafe {
            std::ptr::copy_nonoverlapping(self.mapped.add(offset as usize), out.as_mut_ptr(), out.len())
        }
    }
}

/// Host I/O state of a context: a one-shot command buffer, its fence and the staging buffer.
pub(crate) struct Transfer {
    shared: Arc<Shared>,
    commands: Commands,
    staging: Option<GpuBuffer>,
}

impl Transfer {
    pub(crate) fn new(shared: &Arc<Shared>) -> Result<Self, BackendError> {
        let commands = Commands::new(shared, true, |what| what.replacen("the ", "the transfer ", 1))?;
        Ok(Transfer { shared: shared.clone(), commands, staging: None })
    }

    /// The staging buffer, grown to at least `len` bytes.
    fn staging(&mut self, len: u64) -> Result<&GpuBuffer, BackendError> {
        if self.staging.as_ref().is_none_or(|s| s.size < len) {
            // Grow geometrically so a sequence of rising sizes reallocates only a few times.
            let size = len.max(1 << 16).next_power_of_two();
            self.staging = None;
            self.staging = Some(GpuBuffer::new(&self.shared, "staging", size, BufferRole::Staging)?);
        }
        self.staging.as_ref().ok_or_else(|| BackendError::Driver {
            device: self.shared.name().to_string(),
            scope: "staging".into(),
            reason: "staging buffer missing after allocation".into(),
        })
    }

    /// Copies `len` bytes between buffers on the queue and waits for it.
    fn copy(
        &self,
        src: (vk::Buffer, u64),
        dst: (vk::Buffer, u64),
        len: u64,
        scope: &str,
    ) -> Result<(), BackendError> {
        let (dev, cmd) = (&self.shared.device, self.commands.cmd);
        let err = |r| self.shared.err(scope.to_string(), len, r);
        let begin = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
        let region = vk::BufferCopy { src_offset: src.1, dst_offset: dst.1, size: len };
        use vk::{AccessFlags as A, PipelineStageFlags as S};
        // SAFETY: the command buffer is idle (every submission is waited for), the buffers are
        // live and the ranges were checked by the caller.
        unsafe {
            dev.reset_command_buffer(cmd, vk::CommandBufferResetFlags::empty()).map_err(err)?;
            dev.begin_command_buffer(cmd, &begin).map_err(err)?;
            // Earlier kernels and copies (any submission) finish writing before this copy; its
            // writes are visible to the host and to later kernels afterwards.
            let before = (A::SHADER_WRITE | A::TRANSFER_WRITE, A::TRANSFER_READ | A::TRANSFER_WRITE);
            memory_barrier(dev, cmd, (S::COMPUTE_SHADER | S::TRANSFER, S::TRANSFER), before);
            dev.cmd_copy_buffer(cmd, src.0, dst.0, &[region]);
            memory_barrier(dev, cmd, (S::TRANSFER, S::HOST), (A::TRANSFER_WRITE, A::HOST_READ));
            dev.end_command_buffer(cmd).map_err(err)?;
        }
        self.commands.submit_and_wait(scope)
    }
}

impl Context {
    /// A storage buffer of `size` bytes, placed as the memory strategy says. Contents are
    /// undefined until written.
    pub fn create_buffer(&self, label: &str, size: u64) -> Result<Arc<GpuBuffer>, BackendError> {
        Ok(Arc::new(GpuBuffer::new(&self.shared, label, size, BufferRole::Storage)?))
    }

    /// A storage buffer holding `bytes`.
    pub fn buffer_from_bytes(&self, label: &str, bytes: &[u8]) -> Result<Arc<GpuBuffer>, BackendError> {
        let buf = self.create_buffer(label, bytes.len() as u64)?;
        self.write(&buf, 0, bytes)?;
        Ok(buf)
    }

    fn check_owner(&self, buf: &GpuBuffer) -> Result<(), BackendError> {
        if buf.belongs_to(&self.shared) {
            return Ok(());
        }
        Err(BackendError::Driver {
            device: self.shared.name().to_string(),
            scope: format!("host I/O on buffer '{}'", buf.label),
            reason: "the buffer belongs to another context".into(),
        })
    }

    /// Writes `bytes` at `offset`. Must not overlap a program that is running.
    pub fn write(&self, dst: &GpuBuffer, offset: u64, bytes: &[u8]) -> Result<(), BackendError> {
        self.check_owner(dst)?;
        let len = bytes.len() as u64;
        dst.check_range(offset, len)?;
        if len == 0 {
            return Ok(());
        }
        if dst.is_host_visible() {
            dst.write_mapped(offset, bytes);
            return Ok(());
        }
        let mut t = lock(&self.transfer);
        let staging = t.staging(len)?;
        staging.write_mapped(0, bytes);
        let src = (staging.buffer, 0);
        t.copy(src, (dst.buffer, offset), len, &format!("uploading to buffer '{}'", dst.label))
    }

    /// Reads `len` bytes at `offset`.
    pub fn read(&self, src: &GpuBuffer, offset: u64, len: u64) -> Result<Vec<u8>, BackendError> {
        self.check_owner(src)?;
        src.check_range(offset, len)?;
        let mut out = vec![0u8; len as usize];
        if len == 0 {
            return Ok(out);
        }
        if src.is_host_visible() {
            src.read_mapped(offset, &mut out);
            return Ok(out);
        }
        let mut t = lock(&self.transfer);
        let staging_buffer = t.staging(len)?.buffer;
        t.copy(
            (src.buffer, offset),
            (staging_buffer, 0),
            len,
            &format!("reading back buffer '{}'", src.label),
        )?;
        if let Some(staging) = &t.staging {
            staging.read_mapped(0, &mut out);
        }
        Ok(out)
    }

    /// A host-visible buffer for one direction of host I/O (see [`BufferRole`]).
    pub(crate) fn create_host_buffer(
        &self,
        label: &str,
        size: u64,
        role: BufferRole,
    ) -> Result<Arc<GpuBuffer>, BackendError> {
        Ok(Arc::new(GpuBuffer::new(&self.shared, label, size, role)?))
    }
}
