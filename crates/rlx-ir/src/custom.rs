//! User-defined ops: a name, a shape rule, a CPU reference and a WGSL kernel, registered once
//! and then used in graphs like any built-in op ([`crate::Graph::custom`]).
//!
//! Contract. A [`CustomOp`] is immutable after [`CustomOpBuilder::build`] and shared by `Arc`.
//! - The shape rule maps the operand types to the output type or says why not; `Graph::custom`
//!   calls it, so a graph only holds custom nodes whose operands it accepted, and the verifier
//!   calls it again like any op's inference.
//! - The CPU reference computes the output from host tensors. It is the oracle: parity runs
//!   compare the GPU kernel with it, as they do for built-in ops.
//! - The WGSL kernel ([`CustomWgsl`]) follows the built-in kernels' conventions: entry point
//!   `main`; the operands at `@group(0) @binding(0..n)` as `var<storage, read>`, then the output
//!   at `@binding(n)` as `var<storage, read_write>`; a `struct Params` of 32-bit fields whose
//!   size is a multiple of 16 bytes (at most 128), bound by the line `{{PARAMS}} p: Params;`
//!   (the backend replaces `{{PARAMS}}` with a push-constant or uniform declaration). The kernel
//!   sees every operand in its stored form (f32, i32 and u32 as 32-bit words; ops over f16 or
//!   bf16 get f32, as the GPU backends compute them). The params words and the workgroup count
//!   come from the op's [`CustomLaunch`] function, given the operand and output types.
//! - GPU backends validate the kernel (naga: parse, validate, the binding count and the
//!   workgroup size) when a graph holding it is compiled, and refuse it with the op's name and
//!   naga's message; `rlx_gpu::custom::check` runs the same checks without a device, for a
//!   unit test or a build script.
//! - Two ops are the same op when they are the same `Arc` or have the same name and kernel
//!   source; a name says nothing else (two ops may share one).

use crate::{Tensor, TensorType};
use std::fmt;
use std::sync::Arc;

/// The shape rule: operand types to the output type, or why they are refused.
pub type ShapeRule = dyn Fn(&[&TensorType]) -> Result<TensorType, String> + Send + Sync;
/// The CPU reference: operand values to the output value.
pub type CpuRef = dyn Fn(&[&Tensor], &TensorType) -> Result<Tensor, String> + Send + Sync;
/// The launch rule: operand and output types to (params words, workgroup counts).
pub type CustomLaunch =
    dyn Fn(&[&TensorType], &TensorType) -> Result<(Vec<u32>, [u32; 3]), String> + Send + Sync;

/// The GPU side of a custom op.
#[derive(Clone)]
pub struct CustomWgsl {
    /// The kernel (see the module doc for its conventions).
    pub source: String,
    /// `@workgroup_size` of `main`, checked against the source.
    pub workgroup_size: [u32; 3],
    /// Bytes of `struct Params`: a multiple of 16, at most 128.
    pub params_size: u32,
    /// Params words and workgroup counts for one launch.
    pub launch: Arc<CustomLaunch>,
}

/// A user-defined op. Build one with [`CustomOp::builder`].
pub struct CustomOp {
    name: String,
    shape: Arc<ShapeRule>,
    cpu: Arc<CpuRef>,
    wgsl: Option<CustomWgsl>,
}

impl CustomOp {
    /// Starts an op named `name` (lowercase letters, digits and `_`, as kernel names are).
    pub fn builder(name: impl Into<String>) -> CustomOpBuilder {
        CustomOpBuilder { name: name.into(), shape: None, cpu: None, wgsl: None }
    }

    /// The op's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The output type for operands of types `inputs`, or why they are refused.
    pub fn infer(&self, inputs: &[&TensorType]) -> Result<TensorType, String> {
        (self.shape)(inputs)
    }

    /// The CPU reference's output for `inputs`.
    pub fn cpu(&self, inputs: &[&Tensor], out: &TensorType) -> Result<Tensor, String> {
        let t = (self.cpu)(inputs, out)?;
        if t.shape() != &out.shape || t.dtype() != out.dtype {
            return Err(format!(
                "the CPU reference returned {} {} but the shape rule says {out}",
                t.dtype(),
                t.shape()
            ));
        }
        Ok(t)
    }

    /// The GPU kernel, if the op has one (an op without one runs only on the CPU).
    pub fn wgsl(&self) -> Option<&CustomWgsl> {
        self.wgsl.as_ref()
    }
}

/// Collects a [`CustomOp`]'s parts; [`CustomOpBuilder::build`] checks that none is missing.
pub struct CustomOpBuilder {
    name: String,
    shape: Option<Arc<ShapeRule>>,
    cpu: Option<Arc<CpuRef>>,
    wgsl: Option<CustomWgsl>,
}

impl CustomOpBuilder {
    /// The shape rule (required).
    pub fn shape(
        mut self,
        f: impl Fn(&[&TensorType]) -> Result<TensorType, String> + Send + Sync + 'static,
    ) -> Self {
        self.shape = Some(Arc::new(f));
        self
    }

    /// The CPU reference (required: it is what every GPU result is checked against).
    pub fn cpu(
        mut self,
        f: impl Fn(&[&Tensor], &TensorType) -> Result<Tensor, String> + Send + Sync + 'static,
    ) -> Self {
        self.cpu = Some(Arc::new(f));
        self
    }

    /// The WGSL kernel, its workgroup size, its params size and its launch rule.
    pub fn wgsl(
        mut self,
        source: impl Into<String>,
        workgroup_size: [u32; 3],
        params_size: u32,
        launch: impl Fn(&[&TensorType], &TensorType) -> Result<(Vec<u32>, [u32; 3]), String>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        self.wgsl =
            Some(CustomWgsl { source: source.into(), workgroup_size, params_size, launch: Arc::new(launch) });
        self
    }

    /// The op, or what is missing or malformed.
    pub fn build(self) -> Result<Arc<CustomOp>, String> {
        let name = self.name;
        let well_named = !name.is_empty()
            && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !well_named {
            return Err(format!(
                "custom op name {name:?}: use lowercase ASCII letters, digits and '_' (it names kernels)"
            ));
        }
        let shape = self.shape.ok_or_else(|| format!("custom op {name}: no shape rule; call .shape(..)"))?;
        let cpu = self.cpu.ok_or_else(|| format!("custom op {name}: no CPU reference; call .cpu(..)"))?;
        if let Some(w) = &self.wgsl {
            if w.params_size % 16 != 0 || w.params_size > 128 {
                return Err(format!(
                    "custom op {name}: params_size {} must be a multiple of 16 bytes, at most 128 \
                     (pad struct Params with u32 fields)",
                    w.params_size
                ));
            }
            if w.workgroup_size.contains(&0) {
                return Err(format!("custom op {name}: workgroup size {:?} has a zero", w.workgroup_size));
            }
        }
        Ok(Arc::new(CustomOp { name, shape, cpu, wgsl: self.wgsl }))
    }
}

/// A custom op in a graph node ([`crate::Op::Custom`]).
#[derive(Clone)]
pub struct CustomCall(pub Arc<CustomOp>);

impl CustomCall {
    /// The op.
    pub fn op(&self) -> &CustomOp {
        &self.0
    }
}

impl PartialEq for CustomCall {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
            || (self.0.name == other.0.name
                && self.0.wgsl.as_ref().map(|w| &w.source) == other.0.wgsl.as_ref().map(|w| &w.source))
    }
}

impl fmt::Debug for CustomCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "custom({})", self.0.name)
    }
}

impl fmt::Debug for CustomOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CustomOp").field("name", &self.name).field("gpu", &self.wgsl.is_some()).finish()
    }
}
