//! The context a case builds on: a graph plus the data of its inputs and params, drawn from a
//! pseudo-random stream seeded by the case name.

use rlx_ir::{DType, Graph, IrError, NodeId, QuantType, Tensor, TensorType};
use rlx_runtime::{Executable, HostData, Session};
use rlx_test_support::Rng;
use std::ops::{Deref, DerefMut};

/// A case's graph with the values to feed: what runs on both devices.
#[derive(Clone, Debug)]
pub struct Built {
    pub graph: Graph,
    /// One value per graph input, by name.
    pub inputs: Vec<(String, Tensor)>,
    /// One value per graph param, by name.
    pub params: Vec<(String, Tensor)>,
}

impl Built {
    /// Compiles the graph on `session` with every param set: ready to run with [`Built::feeds`].
    pub fn compile(&self, session: &Session) -> Result<Executable, rlx_runtime::Error> {
        let mut exe = session.compile(&self.graph)?;
        for (name, value) in &self.params {
            exe.set_param(name, value)?;
        }
        Ok(exe)
    }

    /// The inputs as `Executable::run` takes them.
    pub fn feeds(&self) -> Vec<(&str, &dyn HostData)> {
        self.inputs.iter().map(|(n, t)| (n.as_str(), t as &dyn HostData)).collect()
    }
}

/// A graph under construction (reach the builder methods through `Deref`) plus the data of its
/// inputs and params.
#[derive(Debug)]
pub struct CaseCtx {
    graph: Graph,
    rng: Rng,
    inputs: Vec<(String, Tensor)>,
    params: Vec<(String, Tensor)>,
}

impl Deref for CaseCtx {
    type Target = Graph;
    fn deref(&self) -> &Graph {
        &self.graph
    }
}

impl DerefMut for CaseCtx {
    fn deref_mut(&mut self) -> &mut Graph {
        &mut self.graph
    }
}

impl CaseCtx {
    /// An empty graph named `name` whose data stream is seeded from `name`.
    pub fn new(name: &str) -> CaseCtx {
        CaseCtx { graph: Graph::new(name), rng: Rng::from_name(name), inputs: Vec::new(), params: Vec::new() }
    }

    /// `n` values uniform in [lo, hi).
    pub fn uniform(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        self.rng.uniform(n, lo, hi)
    }

    /// `n` integers uniform in [lo, hi] (inclusive).
    pub fn ints(&mut self, n: usize, lo: i32, hi: i32) -> Vec<i32> {
        (0..n).map(|_| self.rng.int(lo as i64, hi as i64) as i32).collect()
    }

    /// `n` random 32-bit words (every bit pattern equally likely).
    pub fn words(&mut self, n: usize) -> Vec<u32> {
        (0..n).map(|_| self.rng.next_u64() as u32).collect()
    }

    /// `n` booleans, each true with probability 1/2.
    pub fn bools(&mut self, n: usize) -> Vec<bool> {
        (0..n).map(|_| self.rng.bool()).collect()
    }

    /// An F32 input of uniform values in [lo, hi).
    pub fn input_f32(&mut self, name: &str, dims: &[usize], lo: f32, hi: f32) -> Result<NodeId, IrError> {
        let v = self.uniform(numel(dims), lo, hi);
        self.input_tensor(name, Tensor::from_f32(dims, v)?)
    }

    /// An F32 input holding small integers in [lo, hi]: comparisons then meet equal values.
    pub fn input_f32_ints(
        &mut self,
        name: &str,
        dims: &[usize],
        lo: i32,
        hi: i32,
    ) -> Result<NodeId, IrError> {
        let v = self.ints(numel(dims), lo, hi).into_iter().map(|x| x as f32).collect();
        self.input_tensor(name, Tensor::from_f32(dims, v)?)
    }

    /// An I32 input of integers in [lo, hi].
    pub fn input_i32(&mut self, name: &str, dims: &[usize], lo: i32, hi: i32) -> Result<NodeId, IrError> {
        let v = self.ints(numel(dims), lo, hi);
        self.input_tensor(name, Tensor::from_i32(dims, v)?)
    }

    /// A U32 input of integers in [lo, hi].
    pub fn input_u32(&mut self, name: &str, dims: &[usize], lo: u32, hi: u32) -> Result<NodeId, IrError> {
        let v = (0..numel(dims)).map(|_| self.rng.int(lo as i64, hi as i64) as u32).collect();
        self.input_tensor(name, Tensor::from_u32(dims, v)?)
    }

    /// A Bool input, each element true with probability 1/2.
    pub fn input_bool(&mut self, name: &str, dims: &[usize]) -> Result<NodeId, IrError> {
        let v = self.bools(numel(dims));
        self.input_tensor(name, Tensor::from_bool(dims, v)?)
    }

    /// An input fed with exactly `t` (its shape and dtype declare the input).
    pub fn input_tensor(&mut self, name: &str, t: Tensor) -> Result<NodeId, IrError> {
        let id = self.graph.input(name, t.dims(), t.dtype())?;
        self.inputs.push((name.to_string(), t));
        Ok(id)
    }

    /// A U8 param [rows, row_bytes] of random valid `quant` blocks (finite f16 scales of
    /// magnitude below `scale`), each row `k` elements: a packed quantized weight.
    pub fn param_quant(
        &mut self,
        name: &str,
        quant: QuantType,
        rows: usize,
        k: usize,
        scale: f32,
    ) -> Result<NodeId, IrError> {
        let row_bytes = quant.byte_len(k).map_err(|e| IrError::Attribute {
            op: "param_quant",
            attr: "k",
            shape: rlx_ir::Shape::new(&[rows, k]),
            reason: e.to_string(),
        })?;
        let bytes =
            rlx_test_support::quant_blocks(&mut self.rng, quant, rows * k / quant.block_elems(), scale);
        self.param_tensor(name, Tensor::from_u8([rows, row_bytes], bytes)?)
    }

    /// An F32 param of uniform values in [lo, hi).
    pub fn param_f32(&mut self, name: &str, dims: &[usize], lo: f32, hi: f32) -> Result<NodeId, IrError> {
        let v = self.uniform(numel(dims), lo, hi);
        self.param_tensor(name, Tensor::from_f32(dims, v)?)
    }

    /// A param set to exactly `t`.
    pub fn param_tensor(&mut self, name: &str, t: Tensor) -> Result<NodeId, IrError> {
        let id = self.graph.param(name, t.dims(), t.dtype())?;
        self.params.push((name.to_string(), t));
        Ok(id)
    }

    /// Data for every param of the graph that has none yet (params added by a builder from
    /// another crate): F32 values uniform in the range `range` gives for the param's name and
    /// type.
    pub fn fill_params(&mut self, range: impl Fn(&str, &TensorType) -> (f32, f32)) -> Result<(), IrError> {
        let missing: Vec<(String, TensorType)> = self
            .graph
            .params()
            .into_iter()
            .filter(|(n, _, _)| !self.params.iter().any(|(have, _)| have == n))
            .map(|(n, _, ty)| (n.to_string(), ty.clone()))
            .collect();
        for (name, ty) in missing {
            let (lo, hi) = range(&name, &ty);
            let v = self.uniform(ty.numel(), lo, hi);
            self.params.push((name, Tensor::from_f32(ty.shape.dims(), v)?));
        }
        Ok(())
    }

    /// A leaf of `dtype` with random data in a range that suits the dtype (an input).
    pub fn input_of(&mut self, name: &str, dims: &[usize], dtype: DType) -> Result<NodeId, IrError> {
        match dtype {
            DType::I32 => self.input_i32(name, dims, -50, 50),
            DType::U32 => self.input_u32(name, dims, 0, 100),
            DType::U8 => {
                let v: Vec<f64> = self.ints(numel(dims), 0, 255).into_iter().map(f64::from).collect();
                self.input_tensor(name, Tensor::from_f64(dims, dtype, &v)?)
            }
            DType::Bool => self.input_bool(name, dims),
            DType::F16 | DType::BF16 => {
                let v: Vec<f64> = self.uniform(numel(dims), -2.0, 2.0).into_iter().map(f64::from).collect();
                self.input_tensor(name, Tensor::from_f64(dims, dtype, &v)?)
            }
            DType::F32 => self.input_f32(name, dims, -2.0, 2.0),
        }
    }

    /// Sets the outputs and hands back the graph with its data.
    pub fn finish(mut self, outputs: &[NodeId]) -> Result<Built, IrError> {
        self.graph.set_outputs(outputs)?;
        Ok(Built { graph: self.graph, inputs: self.inputs, params: self.params })
    }
}

/// Element count of `dims` (1 for a scalar).
pub(crate) fn numel(dims: &[usize]) -> usize {
    dims.iter().product()
}

/// The range [`CaseCtx::fill_params`] draws a transformer parameter from, scaled like a trained
/// layer's: weights about 1/sqrt(fan_in), norm gammas near 1, small biases (names as in
/// Hugging Face checkpoints: BERT's `LayerNorm.weight`, the decoders' `…norm.weight`).
pub fn trained_like(name: &str, ty: &TensorType) -> (f32, f32) {
    if name.ends_with("LayerNorm.weight") || name.ends_with("norm.weight") {
        (0.8, 1.2)
    } else if name.ends_with(".bias") {
        (-0.1, 0.1)
    } else {
        let r = 1.5 / (ty.shape.dims().last().copied().unwrap_or(1) as f32).sqrt();
        (-r, r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_name_same_data_other_name_other_data() {
        let mut a = CaseCtx::new("case_a");
        let mut b = CaseCtx::new("case_a");
        let mut c = CaseCtx::new("case_b");
        let (va, vb, vc) = (a.uniform(64, -1.0, 1.0), b.uniform(64, -1.0, 1.0), c.uniform(64, -1.0, 1.0));
        assert_eq!(va, vb);
        assert_ne!(va, vc);
        assert!(va.iter().all(|&x| (-1.0..1.0).contains(&x)));
        // Not degenerate: a spread of values, not one repeated.
        let (lo, hi) = va.iter().fold((f32::MAX, f32::MIN), |(l, h), &x| (l.min(x), h.max(x)));
        assert!(hi - lo > 1.0, "{lo}..{hi}");
    }

    #[test]
    fn ints_stay_in_their_inclusive_range_and_reach_both_ends() {
        let mut c = CaseCtx::new("ints");
        let v = c.ints(500, -3, 3);
        assert!(v.iter().all(|&x| (-3..=3).contains(&x)));
        assert!(v.contains(&-3) && v.contains(&3));
    }

    #[test]
    fn leaves_record_their_data() {
        let mut c = CaseCtx::new("leaves");
        let x = c.input_f32("x", &[2, 3], 0.0, 1.0).unwrap();
        let w = c.param_f32("w", &[3], 0.0, 1.0).unwrap();
        let y = c.add(x, w).unwrap();
        let built = c.finish(&[y]).unwrap();
        assert_eq!(built.inputs.len(), 1);
        assert_eq!(built.inputs[0].0, "x");
        assert_eq!(built.inputs[0].1.dims(), &[2, 3]);
        assert_eq!(built.params[0].1.dims(), &[3]);
        assert_eq!(built.graph.outputs(), &[y]);
    }
}
