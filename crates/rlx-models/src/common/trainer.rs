//! The training driver every model's fine-tune uses: [`Trainer`] compiles the two phase graphs
//! of an optimizer step (rlx-nn's `train_step`, see its `optim` module) and two small "export"
//! graphs that read the weights and optimizer moments back, as one compile group; it feeds the
//! schedule's rate, the bias corrections and the loss scale per step, handles non-finite steps
//! (skipped under loss scaling, an error without), and saves and resumes checkpoints
//! (`trainer/checkpoint.rs`: one safetensors file).

mod checkpoint;

use crate::error::{ModelError, Result};
use rlx_ir::{DType, Graph, IrError, NodeId, Tensor};
use rlx_nn::optim::LOSS_SCALE_INPUT;
use rlx_nn::{state_name, GradScaler, LrSchedule, OptimExt, StepOpts};
use rlx_runtime::{CompileOptions, Executable, HostData, Session};

/// What a [`Trainer`] trains with.
#[derive(Clone, Debug)]
pub struct TrainConfig {
    /// The optimizer and gradient clipping. `skip_nonfinite` is forced on (a non-finite step
    /// never reaches the weights) and `loss_scale` follows [`TrainConfig::loss_scale`].
    pub opts: StepOpts,
    /// The learning rate of each step.
    pub schedule: LrSchedule,
    /// `Some`: dynamic loss scaling (for `Precision::Mixed`): the loss is multiplied by the
    /// scaler's scale, a step whose scaled gradients overflow is skipped with a warning and
    /// the scale backs off. `None`: a non-finite step is an error.
    pub loss_scale: Option<GradScaler>,
    /// How the graphs are compiled (precision, passes).
    pub compile: CompileOptions,
}

/// What one [`Trainer::step`] did.
#[derive(Clone, Debug, PartialEq)]
pub struct StepReport {
    /// The step's number, from 1.
    pub step: u64,
    /// The loss of the batch, before the update (unscaled).
    pub loss: f32,
    /// The learning rate the step used: the schedule's rate for the next update (0 at the
    /// first step of a warmup; see [`LrSchedule`]).
    pub lr: f32,
    /// The gradients' global norm before clipping, when the config clips.
    pub grad_norm: Option<f32>,
    /// True when the scaled gradients were not finite and the update was skipped.
    pub skipped: bool,
    /// The loss scale the step used, with loss scaling.
    pub loss_scale: Option<f32>,
}

/// A model in training on one device: the weights and optimizer moments live in graph states
/// and a step moves only the batch in and the loss out.
///
/// Steps alternate between two compiled phases (rlx-nn's `optim` module doc says why), and
/// every step, a skipped one too, moves the weights to the other phase's states. The
/// optimizer's count (its bias corrections) and the schedule count only the updates applied:
/// a step the loss scaler skips advances neither, as in PyTorch (a skipped `optimizer.step()`
/// leaves AdamW's step count alone) and in transformers' and sentence-transformers' training
/// loops (which do not step the scheduler after a skipped step).
///
/// ```
/// use rlx_ir::DType;
/// use rlx_models::{TrainConfig, Trainer};
/// use rlx_nn::{Decay, LossExt, LrSchedule, Optimizer};
/// let session = rlx_runtime::Session::new(rlx_runtime::Device::Cpu)?;
/// let schedule = LrSchedule { base: 1e-2, warmup: 10, total: 100, kind: Decay::Cosine };
/// let cfg = TrainConfig {
///     opts: Optimizer::adamw().into(),
///     schedule,
///     loss_scale: None,
///     compile: Default::default(),
/// };
/// let weights = [("w".to_string(), vec![3, 1])];
/// let mut tr = Trainer::new(&session, "linreg", &weights, cfg, |g, p| {
///     let x = g.input("x", &[4, 3], DType::F32)?;
///     let y = g.input("y", &[4, 1], DType::F32)?;
///     let pred = g.matmul(x, p[0])?;
///     g.mse(pred, y)
/// })?;
/// let (x, y) = (vec![0.5f32; 12], vec![1.0f32; 4]);
/// let report = tr.step(&[("x", &x), ("y", &y)])?;
/// assert_eq!((report.step, report.lr), (1, 0.0)); // the warmup starts at 0, as in PyTorch
/// assert_eq!(tr.weights()?[0].1.dims(), &[3, 1]);
/// # Ok::<(), rlx_models::ModelError>(())
/// ```
pub struct Trainer {
    name: String,
    weights: Vec<(String, Vec<usize>)>,
    cfg: TrainConfig,
    /// The step graphs of phase 0 and 1 (outputs: loss, finite flag, grad norm if clipping).
    step_exes: Vec<Executable>,
    /// Per phase: the weights, then each slot's moments, as outputs.
    export_exes: Vec<Executable>,
    /// Steps run (skipped ones included); the weights are in phase `steps % 2`.
    steps: u64,
    /// Updates applied: the optimizer's step count.
    updates: u64,
}

impl std::fmt::Debug for Trainer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trainer")
            .field("name", &self.name)
            .field("weights", &self.weights)
            .field("cfg", &self.cfg)
            .field("steps", &self.steps)
            .field("updates", &self.updates)
            .finish()
    }
}

impl Trainer {
    /// Builds both phase graphs with `forward` (given the weight nodes in `weights`' order,
    /// returns the scalar loss; it may make its own inputs), plus what reading the weights
    /// back needs, and compiles them as one group on `session`.
    ///
    /// The weights start at zero; set them with [`Trainer::set_weight`]. Errors: no weights,
    /// a repeated name, a weight of rank 0, a schedule or optimizer setting out of range, a
    /// forward that does not build, or a compile failure.
    pub fn new(
        session: &Session,
        name: &str,
        weights: &[(String, Vec<usize>)],
        cfg: TrainConfig,
        forward: impl Fn(&mut Graph, &[NodeId]) -> std::result::Result<NodeId, IrError>,
    ) -> Result<Trainer> {
        let mut cfg = cfg;
        cfg.opts.skip_nonfinite = true;
        cfg.opts.loss_scale = cfg.loss_scale.is_some();
        cfg.schedule.check()?;
        if weights.is_empty() {
            return Err(ModelError::InvalidInput {
                reason: format!("trainer '{name}': no weights to train"),
            });
        }
        let slots = cfg.opts.optimizer.slots();
        let mut seen = std::collections::HashSet::new();
        for (w, _) in weights {
            let names = std::iter::once(w.clone()).chain(slots.iter().map(|s| checkpoint::slot_tensor(w, s)));
            for n in names {
                if !seen.insert(n.clone()) {
                    return Err(ModelError::InvalidInput {
                        reason: format!(
                            "trainer '{name}': the name '{n}' is used twice among the weights and their \
                             optimizer moments; rename the weight"
                        ),
                    });
                }
            }
        }
        let refs: Vec<(&str, &[usize])> = weights.iter().map(|(n, d)| (n.as_str(), d.as_slice())).collect();
        let mut graphs = Vec::with_capacity(4);
        for phase in 0..2 {
            let mut g = Graph::new(format!("{name}_step{phase}"));
            let step = g.train_step(phase, &refs, cfg.opts.clone(), &forward)?;
            let mut outs = vec![step.loss, step.finite];
            outs.extend(step.grad_norm);
            g.set_outputs(&outs)?;
            graphs.push(g);
        }
        for phase in 0..2 {
            graphs.push(export_graph(name, phase, &refs, slots)?);
        }
        let graph_refs: Vec<&Graph> = graphs.iter().collect();
        let mut exes = session.compile_group(&graph_refs, &cfg.compile)?;
        let export_exes = exes.split_off(2);
        Ok(Trainer {
            name: name.to_string(),
            weights: weights.to_vec(),
            cfg,
            step_exes: exes,
            export_exes,
            steps: 0,
            updates: 0,
        })
    }

    /// Sets a weight's value before training (or between steps: into the current phase). The
    /// value must be F32 of the weight's shape.
    pub fn set_weight(&mut self, name: &str, value: &Tensor) -> Result<()> {
        let dims = self.weight_dims(name)?;
        if value.dims() != dims {
            return Err(ModelError::WrongShape {
                name: name.to_string(),
                expected: dims.to_vec(),
                got: value.dims().to_vec(),
            });
        }
        let state = state_name(name, None, self.phase());
        self.set_state(&state, value)
    }

    /// One optimizer step on `inputs` (the forward's inputs by name); the schedule's rate,
    /// the bias corrections and the loss scale are fed here.
    ///
    /// A step whose loss or gradients are NaN or infinite leaves the weights as they were:
    /// with loss scaling it is reported `skipped` (a warning on stderr) and the scale backs
    /// off; without, it is a [`ModelError::NonFiniteStep`] and the step is not counted.
    pub fn step(&mut self, inputs: &[(&str, &dyn HostData)]) -> Result<StepReport> {
        let t = self.steps + 1;
        let lr = self.cfg.schedule.lr(self.updates + 1);
        // A rate of exactly 0 (the first warmup step) is a real step, as in PyTorch: the
        // moments take the gradient and the update is w·1 − 0·u = w.
        let mut scalars = self.cfg.opts.optimizer.scalars(self.updates + 1, lr)?;
        let scale = self.cfg.loss_scale.map(|s| s.scale());
        if let Some(s) = scale {
            scalars.push((LOSS_SCALE_INPUT, Tensor::scalar_f32(s)));
        }
        let mut feeds: Vec<(&str, &dyn HostData)> = inputs.to_vec();
        feeds.extend(scalars.iter().map(|(n, v)| (*n, v as &dyn HostData)));
        let phase = self.phase();
        let out = self.step_exes[phase].run(&feeds)?;
        let scalar = |i: usize| out.get(i).and_then(|t| t.to_f64_vec().first().copied()).map(|x| x as f32);
        let loss = scalar(0).unwrap_or(f32::NAN);
        let finite = out.get(1).and_then(|t| t.as_bool()).and_then(|b| b.first().copied()).unwrap_or(false);
        let grad_norm = if self.cfg.opts.clip_grad_norm.is_some() { scalar(2) } else { None };
        match (&mut self.cfg.loss_scale, finite) {
            (None, false) => return Err(ModelError::NonFiniteStep { step: t, loss }),
            (Some(scaler), false) => {
                scaler.update(false);
                eprintln!(
                    "rlx: warning: training step {t}: the gradients at loss scale {:?} are not finite \
                     (loss {loss}); the step is skipped and the scale backs off to {:?}",
                    scale.unwrap_or_default(),
                    scaler.scale()
                );
            }
            (Some(scaler), true) => {
                scaler.update(true);
                self.updates += 1;
            }
            (None, true) => self.updates += 1,
        }
        self.steps = t;
        Ok(StepReport { step: t, loss, lr, grad_norm, skipped: !finite, loss_scale: scale })
    }

    /// Steps taken so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Every kernel launch of the last step with its GPU time, in order, where the backend
    /// times launches (Vulkan with `RLX_PROFILE=1`); empty otherwise or before the first step.
    pub fn kernel_times(&self) -> Vec<(&'static str, std::time::Duration)> {
        match self.steps.checked_sub(1) {
            Some(last) => self.step_exes.get((last % 2) as usize).map_or_else(Vec::new, |e| e.kernel_times()),
            None => Vec::new(),
        }
    }

    /// The current loss scale, with loss scaling.
    pub fn loss_scale(&self) -> Option<f32> {
        self.cfg.loss_scale.map(|s| s.scale())
    }

    /// The current weights, read from the device, in `weights`' order.
    pub fn weights(&mut self) -> Result<Vec<(String, Tensor)>> {
        let out = self.export()?;
        Ok(self.weights.iter().map(|(n, _)| n.clone()).zip(out).collect())
    }

    /// Writes the trained weights as `out/model.safetensors` (f32, under the names they were
    /// trained by) beside copies of those of `files` (paths relative to the folder) that the
    /// model folder `source` holds, so that the loader of the model's kind reads `out`. Saving
    /// into `source` itself replaces only its weights file; a sharded checkpoint there would
    /// shadow it, so that is refused.
    pub fn save_folder(
        &mut self,
        source: &std::path::Path,
        out: &std::path::Path,
        files: &[&str],
    ) -> Result<()> {
        prepare_folder(source, out, files)?;
        let weights = self.weights()?;
        crate::common::safetensors::write_f32(
            &out.join(crate::common::checkpoint::SINGLE_FILE),
            &weights,
            None,
        )
    }

    /// Saves weights, optimizer moments, the step count and the optimizer/schedule settings
    /// (safetensors metadata) to one safetensors file.
    pub fn save_checkpoint(&mut self, path: &std::path::Path) -> Result<()> {
        checkpoint::save(self, path)
    }

    /// Restores a checkpoint saved by `save_checkpoint` for the same weights.
    ///
    /// The weights, moments, step counts and (when this trainer scales the loss) the scaler's
    /// state are restored, so the steps that follow equal those of an uninterrupted run. The
    /// optimizer must be the checkpoint's; the schedule and clipping may differ (a resumed run
    /// may extend `total`). Errors (each naming the file and the fix): a missing file, not a
    /// safetensors file or not a trainer checkpoint, a weight or moment missing, of another
    /// dtype or shape, another optimizer. A failed resume changes nothing.
    pub fn resume(&mut self, path: &std::path::Path) -> Result<()> {
        checkpoint::resume(self, path)
    }

    /// The phase whose read states hold the current weights.
    fn phase(&self) -> usize {
        (self.steps % 2) as usize
    }

    fn weight_dims(&self, name: &str) -> Result<&[usize]> {
        match self.weights.iter().find(|(n, _)| n == name) {
            Some((_, d)) => Ok(d),
            None => Err(ModelError::InvalidInput {
                reason: format!(
                    "trainer '{}' has no weight '{name}'; its weights: {}",
                    self.name,
                    self.weights.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ")
                ),
            }),
        }
    }

    fn set_state(&mut self, state: &str, value: &Tensor) -> Result<()> {
        match self.step_exes.first_mut() {
            Some(exe) => Ok(exe.set_state(state, value)?),
            None => Err(ModelError::InvalidInput { reason: "the trainer has no compiled step".into() }),
        }
    }

    /// The current phase's weights, then each slot's moments (slot-major), from the device.
    fn export(&mut self) -> Result<Vec<Tensor>> {
        let phase = self.phase();
        match self.export_exes.get_mut(phase) {
            Some(exe) => Ok(exe.run(&[])?),
            None => {
                Err(ModelError::InvalidInput { reason: "the trainer has no compiled export graph".into() })
            }
        }
    }
}

/// Makes the folder `out` and copies into it those of `files` (paths relative to the folder)
/// that the model folder `source` holds, for a `model.safetensors` written next. Saving into
/// `source` itself copies nothing; a sharded checkpoint there would shadow the new weights
/// file, so that is refused.
pub(crate) fn prepare_folder(source: &std::path::Path, out: &std::path::Path, files: &[&str]) -> Result<()> {
    use crate::common::checkpoint::INDEX_FILE;
    let io = |path: &std::path::Path, source| ModelError::Write { path: path.to_path_buf(), source };
    std::fs::create_dir_all(out).map_err(|e| io(out, e))?;
    let same = same_folder(source, out);
    if same && out.join(INDEX_FILE).is_file() {
        return Err(ModelError::invalid(format!(
            "{} holds a sharded checkpoint ({INDEX_FILE}) that would shadow the trained weights; \
             save to another folder",
            out.display()
        )));
    }
    // Copying a file onto itself would truncate it: in place, only the weights change.
    for rel in files.iter().filter(|_| !same) {
        let from = source.join(rel);
        if from.is_file() {
            let to = out.join(rel);
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
            }
            std::fs::copy(&from, &to).map_err(|e| io(&to, e))?;
        }
    }
    Ok(())
}

/// Whether `a` and `b` are one existing folder.
pub(crate) fn same_folder(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The graph whose outputs are phase `phase`'s weight states, then each slot's moment states.
/// A state read is an output as it is: nothing in this graph writes it.
fn export_graph(
    name: &str,
    phase: usize,
    weights: &[(&str, &[usize])],
    slots: &[&str],
) -> std::result::Result<Graph, IrError> {
    let mut g = Graph::new(format!("{name}_export{phase}"));
    let mut outs = Vec::new();
    for slot in std::iter::once(None).chain(slots.iter().map(|s| Some(*s))) {
        for (w, dims) in weights {
            outs.push(g.state(&state_name(w, slot, phase), dims, DType::F32)?);
        }
    }
    g.set_outputs(&outs)?;
    Ok(g)
}
