//! Test support shared by the parity test binaries: the CPU backend with its outputs altered
//! after every run, the wrong device that shows a comparison can fail.

use rlx_backend::{Backend, BackendError, Capabilities, Executable, Graph, KernelOptions, NodeId, Tensor};
use rlx_cpu::CpuBackend;

/// The CPU backend under another name, with `alter` applied to the outputs of every run.
pub struct Altered {
    cpu: CpuBackend,
    name: &'static str,
    alter: fn(&mut [Tensor]),
}

impl Altered {
    pub fn new(name: &'static str, alter: fn(&mut [Tensor])) -> Altered {
        Altered { cpu: CpuBackend::new(), name, alter }
    }
}

struct AlteredExe(Box<dyn Executable>, fn(&mut [Tensor]));

impl Backend for Altered {
    fn name(&self) -> &'static str {
        self.name
    }
    fn capabilities(&self) -> &Capabilities {
        self.cpu.capabilities()
    }
    fn compile(&self, graph: &Graph, options: &KernelOptions) -> Result<Box<dyn Executable>, BackendError> {
        Ok(Box::new(AlteredExe(self.cpu.compile(graph, options)?, self.alter)))
    }
}

impl Executable for AlteredExe {
    fn set_param(&mut self, id: NodeId, value: &Tensor) -> Result<(), BackendError> {
        self.0.set_param(id, value)
    }
    fn run(&mut self, inputs: &[(NodeId, &Tensor)]) -> Result<Vec<Tensor>, BackendError> {
        let mut out = self.0.run(inputs)?;
        (self.1)(&mut out);
        Ok(out)
    }
}
