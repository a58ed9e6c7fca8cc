//! LoRA fine-tuning of a dense decoder, in PEFT's layout: [`LoraOptions`] says which linears get
//! an adapter; [`LoraPlan`] holds the frozen base weights (constants of the training graph),
//! the adapters' names and shapes (the only trainable weights: `<module>.lora_A.weight`
//! [r, K] and `<module>.lora_B.weight` [N, r]), their PEFT init (A ~ U(−1/√K, 1/√K), B = 0),
//! the merge `W + (alpha / r)·B·A` in the graph and on the host, and the PEFT adapter files
//! (`adapter_model.safetensors`, `adapter_config.json`) written beside the merged model.

use crate::common::checkpoint::{Checkpoint, INDEX_FILE, SINGLE_FILE};
use crate::common::safetensors::{write_f32, Precision};
use crate::decoder::train_data::uniform;
use crate::error::{ModelError, Result};
use rlx_ir::{DType, Graph, IrError, NodeId, Tensor};
use std::path::Path;

/// PEFT's adapter weights file.
pub const ADAPTER_FILE: &str = "adapter_model.safetensors";
/// PEFT's adapter config file.
pub const ADAPTER_CONFIG: &str = "adapter_config.json";

/// Which linears of a decoder train a low-rank adapter, and its size. The defaults are PEFT's
/// for Llama (`q_proj`, `v_proj`) with rank 8 and alpha 16.
#[derive(Clone, Debug, PartialEq)]
pub struct LoraOptions {
    /// The adapters' rank r (at least 1).
    pub rank: usize,
    /// PEFT's `lora_alpha`: the update is scaled by `alpha / rank`.
    pub alpha: f32,
    /// Module names: every linear whose name is one of these or ends in `.` and one of these
    /// (`q_proj` matches `model.layers.0.self_attn.q_proj`) gets an adapter.
    pub targets: Vec<String>,
}

impl Default for LoraOptions {
    fn default() -> Self {
        LoraOptions { rank: 8, alpha: 16.0, targets: vec!["q_proj".into(), "v_proj".into()] }
    }
}

impl LoraOptions {
    /// PEFT's scaling, `alpha / rank`.
    pub fn scale(&self) -> f32 {
        self.alpha / self.rank as f32
    }
}

/// One adapted linear: its module path and the index of its weight [N, K] in the base list.
#[derive(Clone, Debug)]
struct Adapter {
    module: String,
    base: usize,
    n: usize,
    k: usize,
}

/// The frozen base weights and the adapters of a LoRA fine-tune.
#[derive(Debug)]
pub(crate) struct LoraPlan {
    opts: LoraOptions,
    base: Vec<(String, Tensor)>,
    adapters: Vec<Adapter>,
}

/// The module path of a linear weight `<module>.weight` of rank 2 (not the embedding).
fn linear_module<'a>(name: &'a str, dims: &[usize]) -> Option<&'a str> {
    let module = name.strip_suffix(".weight")?;
    (dims.len() == 2 && !module.ends_with("embed_tokens")).then_some(module)
}

fn matches(module: &str, target: &str) -> bool {
    module == target || module.strip_suffix(target).is_some_and(|head| head.ends_with('.'))
}

/// Refuses LoRA options out of range: rank 0, an alpha that is not finite, no targets.
pub(crate) fn check_lora_options(o: &LoraOptions) -> Result<()> {
    if o.rank == 0 {
        return Err(ModelError::invalid(
            "LoRA rank 0 trains nothing; use a rank of at least 1 (PEFT's default is 8)",
        ));
    }
    if !o.alpha.is_finite() || o.alpha <= 0.0 {
        return Err(ModelError::invalid(format!(
            "LoRA alpha {} must be a positive finite number (PEFT's default is 16)",
            o.alpha
        )));
    }
    if o.targets.is_empty() {
        return Err(ModelError::invalid("LoRA needs at least one target module (e.g. q_proj,v_proj)"));
    }
    Ok(())
}

impl LoraPlan {
    /// Finds the targeted linears among `weights` (the decoder's names and shapes) and loads
    /// every base weight of `dir` as f32. Errors: bad options, a target no linear matches (the
    /// message lists the linears' names), a folder without weights.
    pub(crate) fn new(opts: &LoraOptions, dir: &Path, weights: &[(String, Vec<usize>)]) -> Result<LoraPlan> {
        check_lora_options(opts)?;
        let mut adapters = Vec::new();
        for target in &opts.targets {
            let before = adapters.len();
            for (i, (name, dims)) in weights.iter().enumerate() {
                let Some(module) = linear_module(name, dims) else { continue };
                if matches(module, target) && !adapters.iter().any(|a: &Adapter| a.base == i) {
                    adapters.push(Adapter { module: module.to_string(), base: i, n: dims[0], k: dims[1] });
                }
            }
            if adapters.len() == before && !adapters.iter().any(|a| matches(&a.module, target)) {
                let mut names: Vec<&str> = weights
                    .iter()
                    .filter_map(|(n, d)| linear_module(n, d))
                    .filter_map(|m| m.rsplit('.').next())
                    .collect();
                names.sort_unstable();
                names.dedup();
                return Err(ModelError::invalid(format!(
                    "LoRA target module '{target}' matches no linear layer of this model; its linears are: {}",
                    names.join(", ")
                )));
            }
        }
        adapters.sort_by_key(|a| a.base);
        if !(dir.join(SINGLE_FILE).is_file() || dir.join(INDEX_FILE).is_file()) {
            return Err(ModelError::invalid(format!(
                "{} has no {SINGLE_FILE} (or {INDEX_FILE}): LoRA adapts trained weights and cannot start from \
                 scratch; point --model at a folder with weights, or train every weight (drop --lora-rank)",
                dir.display()
            )));
        }
        let file = Checkpoint::open(dir)?;
        let mut base = Vec::with_capacity(weights.len());
        for (name, dims) in weights {
            base.push((name.clone(), file.load(name, dims, Precision::F32)?.into_f32_tensor(dims)?));
        }
        Ok(LoraPlan { opts: opts.clone(), base, adapters })
    }

    /// The options.
    pub(crate) fn options(&self) -> &LoraOptions {
        &self.opts
    }

    /// The module paths that have an adapter, in the model's weight order.
    pub(crate) fn modules(&self) -> Vec<String> {
        self.adapters.iter().map(|a| a.module.clone()).collect()
    }

    /// The trainable weights: per adapted module, `lora_A` [r, K] then `lora_B` [N, r].
    pub(crate) fn trainable(&self) -> Vec<(String, Vec<usize>)> {
        let r = self.opts.rank;
        self.adapters
            .iter()
            .flat_map(|a| {
                [
                    (format!("{}.lora_A.weight", a.module), vec![r, a.k]),
                    (format!("{}.lora_B.weight", a.module), vec![a.n, r]),
                ]
            })
            .collect()
    }

    /// Elements of the adapters and of the whole model (base plus adapters), as PEFT's
    /// `print_trainable_parameters` counts them.
    pub(crate) fn parameter_counts(&self) -> (usize, usize) {
        let adapters: usize = self.trainable().iter().map(|(_, d)| d.iter().product::<usize>()).sum();
        let base: usize = self.base.iter().map(|(_, t)| t.dims().iter().product::<usize>()).sum();
        (adapters, base + adapters)
    }

    /// PEFT's init of the adapters in [`LoraPlan::trainable`]'s order: lora_A
    /// `kaiming_uniform_(a=√5)` = U(−1/√K, 1/√K) (seeded with `seed` plus its index), lora_B
    /// zeros, so the first step's model is the base model.
    pub(crate) fn init(&self, seed: u64) -> Result<Vec<(String, Tensor)>> {
        let r = self.opts.rank;
        let mut out = Vec::with_capacity(2 * self.adapters.len());
        for (i, a) in self.adapters.iter().enumerate() {
            let bound = 1.0 / (a.k as f32).sqrt();
            let values = uniform(r * a.k, bound, seed.wrapping_add(i as u64));
            out.push((format!("{}.lora_A.weight", a.module), Tensor::from_f32([r, a.k], values)?));
            out.push((
                format!("{}.lora_B.weight", a.module),
                Tensor::from_f32([a.n, r], vec![0.0; a.n * r])?,
            ));
        }
        Ok(out)
    }

    /// The nodes of every decoder weight in the base order, for the forward's name map: the
    /// base weights as constants, and for an adapted linear `W + s·(B·A)` of the adapter
    /// nodes `adapters` (in [`LoraPlan::trainable`]'s order).
    pub(crate) fn weight_nodes(
        &self,
        g: &mut Graph,
        adapters: &[NodeId],
    ) -> std::result::Result<Vec<NodeId>, IrError> {
        let mut nodes = Vec::with_capacity(self.base.len());
        for (_, t) in &self.base {
            nodes.push(g.constant(t.clone())?);
        }
        let scale = g.full(&[], DType::F32, f64::from(self.opts.scale()))?;
        for (a, ab) in self.adapters.iter().zip(adapters.chunks_exact(2)) {
            let ba = g.matmul(ab[1], ab[0])?;
            let update = g.mul(ba, scale)?;
            nodes[a.base] = g.add(nodes[a.base], update)?;
        }
        Ok(nodes)
    }

    /// The merged weights, `W + s·B·A` for the adapted linears (f32 on the host) and the base
    /// weights as loaded elsewhere, given the trained adapters in [`LoraPlan::trainable`]'s order.
    pub(crate) fn merged(&self, adapters: &[(String, Tensor)]) -> Result<Vec<(String, Tensor)>> {
        let mut out = self.base.clone();
        let (r, s) = (self.opts.rank, self.opts.scale());
        for (a, ab) in self.adapters.iter().zip(adapters.chunks_exact(2)) {
            let (lora_a, lora_b) = (ab[0].1.to_f32_vec(), ab[1].1.to_f32_vec());
            let (name, w) = &self.base[a.base];
            let mut v = w.to_f32_vec();
            for n in 0..a.n {
                for k in 0..a.k {
                    let ba: f32 = (0..r).map(|i| lora_b[n * r + i] * lora_a[i * a.k + k]).sum();
                    v[n * a.k + k] += s * ba;
                }
            }
            out[a.base] = (name.clone(), Tensor::from_f32([a.n, a.k], v)?);
        }
        Ok(out)
    }

    /// Writes PEFT's `adapter_model.safetensors` (keys `base_model.model.<module>.lora_A.weight`
    /// and `.lora_B.weight`) and `adapter_config.json` into `out`, `source` being the base
    /// model's folder.
    pub(crate) fn write_adapter(
        &self,
        out: &Path,
        source: &Path,
        adapters: &[(String, Tensor)],
    ) -> Result<()> {
        let keyed: Vec<(String, Tensor)> =
            adapters.iter().map(|(n, t)| (format!("base_model.model.{n}"), t.clone())).collect();
        write_f32(&out.join(ADAPTER_FILE), &keyed, None)?;
        let source = source.canonicalize().unwrap_or_else(|_| source.to_path_buf());
        let config = serde_json::json!({
            "peft_type": "LORA",
            "task_type": "CAUSAL_LM",
            "r": self.opts.rank,
            "lora_alpha": self.opts.alpha,
            "lora_dropout": 0.0,
            "bias": "none",
            "fan_in_fan_out": false,
            "inference_mode": true,
            "target_modules": self.opts.targets,
            "base_model_name_or_path": source.display().to_string(),
        });
        let path = out.join(ADAPTER_CONFIG);
        let text = serde_json::to_string_pretty(&config)
            .map_err(|e| ModelError::invalid(format!("cannot write {}: {e}", path.display())))?;
        std::fs::write(&path, text).map_err(|e| ModelError::Write { path: path.clone(), source: e })
    }
}
