//! `Session`: one opened backend, compiling graphs into executables.

#[cfg(not(target_arch = "wasm32"))]
use crate::auto;
use crate::device::Device;
use crate::error::Error;
use crate::executable::Executable;
#[cfg(not(target_arch = "wasm32"))]
use crate::rank::GraphStats;
use crate::registry;
use rlx_backend::{Backend, KernelOptions, MatmulKernel, Precision};
use rlx_ir::{Graph, IrError, Op, Tensor, TensorType};
use rlx_opt::PassOptions;

/// How a graph is compiled.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CompileOptions {
    /// Optional optimizer passes. Legalization for the device always runs.
    pub passes: PassOptions,
    /// How much the kernels may round ([`Precision::F32`] by default).
    pub precision: Precision,
    /// Run every matmul on this kernel of the GPU ladder (tests, benchmarks); the compile fails
    /// with `Unsupported`, naming what is missing, where the device or precision cannot. `None`:
    /// the backend picks per device and shape.
    pub matmul: Option<MatmulKernel>,
}

impl CompileOptions {
    /// What the backend is asked for.
    pub fn kernel_options(&self) -> KernelOptions {
        KernelOptions { precision: self.precision, matmul: self.matmul }
    }
}

/// A backend opened on one device.
pub struct Session {
    device: Device,
    backend: Box<dyn Backend>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("device", &self.device)
            .field("backend", &self.backend.name())
            .finish()
    }
}

impl Session {
    /// Opens `device`; one that cannot be used here gives `DeviceUnavailable` with the reason.
    /// `Auto` takes `RLX_DEVICE` if set (an error if that device is unavailable or the value
    /// does not parse), else the fastest available device for a representative workload (one
    /// BERT-base layer, [`GraphStats::representative`]) by the calibrated estimate; see
    /// [`Session::auto_for`] to rank for the graph at hand instead. Software adapters (lavapipe)
    /// are never chosen by `Auto`; without a real GPU it is the CPU, and nothing is measured.
    ///
    /// On the web only `Device::Cpu` opens this way: a GPU answers on the browser's event
    /// loop, so use [`Session::open`] there.
    pub fn new(device: Device) -> Result<Session, Error> {
        #[cfg(not(target_arch = "wasm32"))]
        if device == Device::Auto {
            return Self::auto_with(&GraphStats::representative());
        }
        Ok(Session { device, backend: registry::open(device)? })
    }

    /// [`Session::new`] without blocking, for the web, where a GPU adapter and device are
    /// granted on the browser's event loop. There `Device::Gpu` is WebGPU, `Device::Auto` is
    /// WebGPU when the browser grants an adapter and the CPU otherwise (nothing is measured),
    /// and `Device::Vulkan` is unavailable. On native it is the same as `Session::new`.
    pub async fn open(device: Device) -> Result<Session, Error> {
        #[cfg(not(target_arch = "wasm32"))]
        if device == Device::Auto {
            return Self::auto_with(&GraphStats::representative());
        }
        let (device, backend) = registry::open_async(device).await?;
        Ok(Session { device, backend })
    }

    /// `Device::Auto` for `g`: `RLX_DEVICE` if set, else the available device with the lowest
    /// estimated time for this graph (matmul and attention flops, tensor bytes and step count
    /// against each device's calibration). A device without a cached calibration is measured
    /// first (about a second, once per device and driver, with a line on stderr).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn auto_for(g: &Graph) -> Result<Session, Error> {
        Self::auto_with(&GraphStats::of(g))
    }

    #[cfg(not(target_arch = "wasm32"))]
    fn auto_with(stats: &GraphStats) -> Result<Session, Error> {
        Self::resolve(Device::from_env_or(Device::Auto)?, stats)
    }

    /// The one place `Device::Auto` is resolved: `requested` is what `RLX_DEVICE` names (`Auto`
    /// when unset), which must then be available; `Auto` is the fastest candidate for `stats`
    /// (auto.rs). The registry itself opens concrete devices only.
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn resolve(requested: Device, stats: &GraphStats) -> Result<Session, Error> {
        match requested {
            Device::Auto => {
                let (device, backend) = auto::fastest(stats)?;
                Ok(Session { device, backend })
            }
            d => Ok(Session { device: d, backend: registry::open(d)? }),
        }
    }

    /// A session over a backend built by the caller: for tests and for backends that live outside
    /// this registry. `device` is what [`Session::device`] reports for it.
    pub fn with_backend(device: Device, backend: Box<dyn Backend>) -> Session {
        Session { device, backend }
    }

    /// The backend, for code in this crate that borrowed it into a session (calibration).
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn into_backend(self) -> Box<dyn Backend> {
        self.backend
    }

    /// The device this session runs on (never `Auto`).
    pub fn device(&self) -> Device {
        self.device
    }

    /// Short name of the backend ("cpu", …).
    pub fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    /// The device objects the backend holds now (buffers and their bytes, pipelines, bind
    /// groups, command buffers, ...), for leak checks in soak runs; `None` for the CPU.
    pub fn live_objects(&self) -> Option<rlx_backend::LiveObjects> {
        self.backend.live_objects()
    }

    /// What the backend runs natively and its limits.
    pub fn capabilities(&self) -> &rlx_backend::Capabilities {
        self.backend.capabilities()
    }

    /// [`Session::compile_with`] with default options (every pass on).
    pub fn compile(&self, g: &Graph) -> Result<Executable, Error> {
        self.compile_with(g, &CompileOptions::default())
    }

    /// Verifies `g`, optimizes it for this device (constant folding evaluates on the CPU
    /// reference), and compiles it on the backend.
    pub fn compile_with(&self, g: &Graph, opts: &CompileOptions) -> Result<Executable, Error> {
        let optimized = self.optimize(g, opts)?;
        let compiled = self.backend.compile(&optimized, &opts.kernel_options())?;
        Executable::new(g, optimized, compiled, self.backend.name(), Default::default())
    }

    /// [`Session::compile_with`] without blocking: the only way to compile for a GPU on the
    /// web, where the device reports compile errors on the browser's event loop.
    pub async fn compile_async(&self, g: &Graph, opts: &CompileOptions) -> Result<Executable, Error> {
        let optimized = self.optimize(g, opts)?;
        let options = opts.kernel_options();
        let compiled = self.backend.compile_async(&optimized, &options).await?;
        Executable::new(g, optimized, compiled, self.backend.name(), Default::default())
    }

    /// Verifies `g` and runs rlx-opt's pipeline for this backend.
    fn optimize(&self, g: &Graph, opts: &CompileOptions) -> Result<Graph, Error> {
        // An explicit check first: it is the most common mistake and deserves its own message
        // rather than whatever the verifier meets first.
        if g.outputs().is_empty() {
            return Err(IrError::NoOutputs { graph: g.name().to_string() }.into());
        }
        rlx_ir::verify(g)?;
        let fold = |op: &Op, inputs: &[&Tensor], out: &TensorType| rlx_cpu::eval(op, inputs, out).ok();
        let caps = self.backend.capabilities().for_precision(opts.kernel_options().precision);
        Ok(rlx_opt::optimize(g, &caps, &opts.passes, Some(&fold))?)
    }

    /// Compiles `graphs` together: params and states with the same name and type are one value
    /// on the device. A param set through any of the executables is set for all, and a state
    /// one of them writes (a KV cache filled by a prefill graph) is what the next run of any
    /// of them reads (the decode graph). A shared name with another type in another graph is an
    /// error. Each graph is optimized as [`Session::compile_with`] does.
    pub fn compile_group(&self, graphs: &[&Graph], opts: &CompileOptions) -> Result<Vec<Executable>, Error> {
        let mut optimized = Vec::with_capacity(graphs.len());
        for g in graphs {
            optimized.push(self.optimize(g, opts)?);
        }
        let refs: Vec<&Graph> = optimized.iter().collect();
        let compiled = self.backend.compile_group(&refs, &opts.kernel_options())?;
        let set = crate::executable::ParamsSet::default();
        graphs
            .iter()
            .zip(optimized)
            .zip(compiled)
            .map(|((g, o), c)| Executable::new(g, o, c, self.backend.name(), set.clone()))
            .collect()
    }
}
