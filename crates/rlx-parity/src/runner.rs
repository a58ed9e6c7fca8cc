//! Running cases on a device and on the CPU, and reporting the comparison.

use crate::compare::{compare_outputs_by, OutputCheck};
use crate::{Built, Case};
use rlx_ir::{IrError, Tensor, TensorData};
use rlx_runtime::{BackendError, CompileOptions, Device, HostData, Session};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// Why a case could not be compared.
#[derive(Debug, thiserror::Error)]
pub enum ParityError {
    /// The device (or the CPU reference) could not be opened.
    #[error("cannot open device {device}: {source}")]
    Open {
        device: Device,
        #[source]
        source: Box<rlx_runtime::Error>,
    },
    /// The case's graph did not build (a bug in the case).
    #[error("case {case}: building the graph failed: {source}")]
    Build {
        case: String,
        #[source]
        source: IrError,
    },
    /// The case forces a kernel (or precision) the device does not have: not a failure, but
    /// counted and shown apart ([`Report::unavailable`]) with the device's reason.
    #[error("case {case}: unavailable on {device}: {reason}")]
    Unavailable { case: String, device: Device, reason: String },
    /// Compiling, setting a param or running failed on one side.
    #[error("case {case}: {stage} on {device} failed: {source}")]
    Device {
        case: String,
        device: Device,
        stage: &'static str,
        #[source]
        source: Box<rlx_runtime::Error>,
    },
    /// Writing a case's files (`parity --dump`) failed.
    #[error("case {case}: cannot write {}: {source}", path.display())]
    Dump {
        case: String,
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// How one case compared.
#[derive(Clone, Debug, PartialEq)]
pub struct CaseResult {
    pub name: String,
    pub tol: f64,
    /// One check per output.
    pub outputs: Vec<OutputCheck>,
}

impl CaseResult {
    /// Every output within bounds.
    pub fn passed(&self) -> bool {
        !self.outputs.is_empty() && self.outputs.iter().all(|o| o.passed)
    }

    /// The largest error over the outputs (NaN counts as infinite).
    pub fn worst(&self) -> f64 {
        self.outputs.iter().map(|o| if o.err.is_nan() { f64::INFINITY } else { o.err }).fold(0.0, f64::max)
    }

    /// The first failing output's note, if any.
    pub fn first_note(&self) -> Option<&str> {
        self.outputs.iter().filter(|o| !o.passed).find_map(|o| o.note.as_deref())
    }
}

/// Compiles and runs `case` on `device` and on `Device::Cpu`, and compares every output.
pub fn run_case(device: Device, case: &Case) -> Result<CaseResult, ParityError> {
    let dev = open(device)?;
    let cpu = open(Device::Cpu)?;
    run_case_in(&dev, &cpu, case)
}

/// [`run_case`] on sessions opened by the caller (opening a GPU device once per table, not once
/// per case).
pub fn run_case_in(dev: &Session, cpu: &Session, case: &Case) -> Result<CaseResult, ParityError> {
    let built =
        case.instantiate().map_err(|source| ParityError::Build { case: case.name.clone(), source })?;
    // The device first: a case it cannot compile costs no reference run.
    let got = execute(dev, case, &built)?;
    let reference = execute(cpu, case, &built)?;
    Ok(CaseResult {
        name: case.name.clone(),
        tol: case.tol,
        outputs: compare_outputs_by(&reference, &got, case.tol, case.metric),
    })
}

fn open(device: Device) -> Result<Session, ParityError> {
    Session::new(device).map_err(|e| ParityError::Open { device, source: Box::new(e) })
}

/// `t` with every float halved (NaN stays NaN; integers and bools as they are): other data of
/// the same shape, valid wherever `t` is (positive stays positive, indices stay in range).
fn halved(t: &Tensor) -> Tensor {
    let data = match t.data() {
        TensorData::F32(v) => TensorData::F32(v.iter().map(|x| x * 0.5).collect()),
        TensorData::F16(v) => {
            TensorData::F16(v.iter().map(|x| half::f16::from_f32(x.to_f32() * 0.5)).collect())
        }
        TensorData::BF16(v) => {
            TensorData::BF16(v.iter().map(|x| half::bf16::from_f32(x.to_f32() * 0.5)).collect())
        }
        _ => return t.clone(),
    };
    Tensor::new(t.shape().clone(), data).unwrap_or_else(|_| t.clone())
}

fn feeds(values: &[(String, Tensor)]) -> Vec<(&str, &dyn HostData)> {
    values.iter().map(|(n, t)| (n.as_str(), t as &dyn HostData)).collect()
}

/// Compiles, then runs twice: first with every float param and input halved, then with the
/// case's own values, which give the result. The first run makes stale state show: a kernel
/// that accumulates into its output, skips elements, or a replayed command buffer that misses
/// a new upload or a new `set_param` gives wrong numbers in the second run.
pub(crate) fn execute(session: &Session, case: &Case, built: &Built) -> Result<Vec<Tensor>, ParityError> {
    execute_with(session, case, built, case.passes)
}

/// [`execute`] with other optimizer passes than the case's (the differential runs compare a
/// device's full pipeline with the CPU's unoptimized graph).
pub(crate) fn execute_with(
    session: &Session,
    case: &Case,
    built: &Built,
    passes: rlx_runtime::PassOptions,
) -> Result<Vec<Tensor>, ParityError> {
    let fail = |stage: &'static str| {
        move |e| ParityError::Device {
            case: case.name.clone(),
            device: session.device(),
            stage,
            source: Box::new(e),
        }
    };
    let opts = CompileOptions { passes, precision: case.kernels.precision, matmul: case.kernels.matmul };
    let mut exe = session.compile_with(&built.graph, &opts).map_err(|e| match e {
        rlx_runtime::Error::Backend(BackendError::Unsupported { reason, .. })
            if case.kernels.matmul.is_some() =>
        {
            ParityError::Unavailable { case: case.name.clone(), device: session.device(), reason }
        }
        e => fail("compile")(e),
    })?;
    let half = |v: &[(String, Tensor)]| v.iter().map(|(n, t)| (n.clone(), halved(t))).collect::<Vec<_>>();
    for (name, value) in &half(&built.params) {
        exe.set_param(name, value).map_err(fail("set_param (warm-up)"))?;
    }
    exe.run(&feeds(&half(&built.inputs))).map_err(fail("run (warm-up)"))?;
    for (name, value) in &built.params {
        exe.set_param(name, value).map_err(fail("set_param"))?;
    }
    exe.run(&feeds(&built.inputs)).map_err(fail("run"))
}

/// One row of a [`Report`].
#[derive(Debug)]
pub struct Row {
    pub name: String,
    pub tol: f64,
    pub result: Result<CaseResult, ParityError>,
    /// Wall time of both runs, compiles included.
    pub elapsed: Duration,
}

impl Row {
    pub fn passed(&self) -> bool {
        self.result.as_ref().is_ok_and(CaseResult::passed)
    }

    /// The device does not have what the case forces ([`ParityError::Unavailable`]).
    pub fn unavailable(&self) -> bool {
        matches!(self.result, Err(ParityError::Unavailable { .. }))
    }
}

/// The outcome of a table on one device.
#[derive(Debug)]
pub struct Report {
    /// The device's name as `Device` prints it (`vulkan`, `cpu`, …).
    pub device: String,
    pub rows: Vec<Row>,
}

/// Opens `device` and the CPU once and runs every case; `Err` only when a device cannot be
/// opened (a failing case is a failed row, never an early exit).
pub fn run_table(device: Device, cases: &[Case]) -> Result<Report, ParityError> {
    let dev = open(device)?;
    let cpu = open(Device::Cpu)?;
    let rows = cases
        .iter()
        .map(|case| {
            let t = Instant::now();
            let result = run_case_in(&dev, &cpu, case);
            Row { name: case.name.clone(), tol: case.tol, result, elapsed: t.elapsed() }
        })
        .collect();
    Ok(Report { device: dev.device().to_string(), rows })
}

impl Report {
    pub fn passed(&self) -> usize {
        self.rows.iter().filter(|r| r.passed()).count()
    }

    /// Rows that neither passed nor were unavailable.
    pub fn failures(&self) -> Vec<&Row> {
        self.rows.iter().filter(|r| !r.passed() && !r.unavailable()).collect()
    }

    /// Rows whose forced kernel the device lacks.
    pub fn unavailable(&self) -> Vec<&Row> {
        self.rows.iter().filter(|r| r.unavailable()).collect()
    }

    /// `parity vulkan: 212 passed, 0 failed`, and `, 30 unavailable (reason)` when some
    /// cases force a kernel the device lacks (the first reason; all are in [`Self::table`]).
    pub fn summary(&self) -> String {
        let unavailable = self.unavailable();
        let mut s =
            format!("parity {}: {} passed, {} failed", self.device, self.passed(), self.failures().len());
        if let Some(Err(ParityError::Unavailable { reason, .. })) = unavailable.first().map(|r| &r.result) {
            let _ = write!(s, ", {} unavailable ({reason})", unavailable.len());
        }
        s
    }

    /// A table of (case, rel err, tol, pass, ms, note) for the rows `all` selects: every row, or
    /// only the failures.
    pub fn table(&self, all: bool) -> String {
        let rows: Vec<&Row> = self.rows.iter().filter(|r| all || !r.passed()).collect();
        let width = rows.iter().map(|r| r.name.len()).max().unwrap_or(4).max(4);
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:<width$}  {:>10}  {:>8}  {:<4}  {:>7}  note",
            "case", "rel err", "tol", "pass", "ms"
        );
        for r in rows {
            let ms = r.elapsed.as_secs_f64() * 1e3;
            let (err, note) = match &r.result {
                Ok(c) => (format!("{:.3e}", c.worst()), c.first_note().unwrap_or("").to_string()),
                Err(e) => ("error".to_string(), e.to_string()),
            };
            let pass = if r.passed() { "ok" } else { "FAIL" };
            let _ =
                writeln!(s, "{:<width$}  {err:>10}  {:>8.1e}  {pass:<4}  {ms:>7.1}  {note}", r.name, r.tol);
        }
        s
    }
}
