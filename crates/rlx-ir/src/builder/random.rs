//! Builders of counter-based random numbers ([`Op::Random`]) and of their key.

use crate::{DType, Graph, IrError, NodeId, Op, RandomDist, Shape};

impl Graph {
    /// A run-time random key: an `Input` named `name` of type U32 \[2\] holding `[seed, offset]`.
    /// Feed a new offset on each run (each decode step) for a fresh draw without recompiling.
    pub fn rng_key(&mut self, name: &str) -> Result<NodeId, IrError> {
        self.input(name, &[2], DType::U32)
    }

    /// F32 random numbers of shape `dims` drawn from `dist`, keyed by `key` (U32 \[2\] =
    /// `[seed, offset]`). Element `i` depends only on (seed, offset, i); see [`Op::Random`] for
    /// the exact recipe.
    pub fn random(&mut self, key: NodeId, dist: RandomDist, dims: &[usize]) -> Result<NodeId, IrError> {
        self.push(Op::Random { dist, shape: Shape::new(dims) }, &[key])
    }

    /// Uniform on [0, 1) (24-bit resolution, exact in f32).
    pub fn random_uniform(&mut self, key: NodeId, dims: &[usize]) -> Result<NodeId, IrError> {
        self.random(key, RandomDist::Uniform, dims)
    }

    /// Standard normal by Box–Muller.
    pub fn random_normal(&mut self, key: NodeId, dims: &[usize]) -> Result<NodeId, IrError> {
        self.random(key, RandomDist::Normal, dims)
    }
}
