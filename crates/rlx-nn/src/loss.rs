//! Losses built from forward ops, so that `rlx_ir::grad` differentiates them like any graph:
//! cross-entropy over logits (ignore-index and label smoothing, as PyTorch's
//! `F.cross_entropy`), mean squared error, and sentence-transformers'
//! MultipleNegativesRankingLoss (in-batch negatives).

use rlx_ir::{DType, Graph, IrError, NodeId, ShapeList, Tensor};

/// Options of [`LossExt::cross_entropy`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CrossEntropyOpts {
    /// Rows whose target is this id count for nothing, neither in the sum nor in the mean
    /// (PyTorch's `ignore_index`, default −100 there; `None` here: every row counts).
    pub ignore_index: Option<i32>,
    /// ε in [0, 1]: the target distribution is (1 − ε)·one-hot + ε/C (PyTorch's
    /// `label_smoothing`).
    pub label_smoothing: f32,
}

impl Default for CrossEntropyOpts {
    /// No ignored id, no smoothing.
    fn default() -> Self {
        CrossEntropyOpts { ignore_index: None, label_smoothing: 0.0 }
    }
}

/// Losses; every method returns a rank-0 node of the operands' float dtype.
pub trait LossExt: AsMut<Graph> {
    /// Cross-entropy of `logits` [..., C] against I32 class ids `targets` [...] (the same
    /// leading dims), averaged over the rows whose target is not `ignore_index`: PyTorch's
    /// `F.cross_entropy(logits.view(-1, C), targets.view(-1), ignore_index=…,
    /// label_smoothing=ε)` with `reduction="mean"`. Per row, with p = log_softmax(logits):
    /// `−(1 − ε)·p[target] − ε·mean(p)`.
    ///
    /// Differences from PyTorch, both for a loss that stays finite: a batch where every row is
    /// ignored gives 0 (PyTorch: NaN), and a target outside [0, C) that is not the ignore id
    /// contributes only its smoothing term (PyTorch: an error; rlx cannot raise one at run
    /// time).
    fn cross_entropy(
        &mut self,
        logits: NodeId,
        targets: NodeId,
        opts: CrossEntropyOpts,
    ) -> Result<NodeId, IrError> {
        self.as_mut().atomically(|g| {
            let lt = g.ty(logits)?.clone();
            let tt = g.ty(targets)?.clone();
            let ld = lt.shape.dims();
            let mismatch = |reason: String| IrError::ShapeMismatch {
                op: "cross_entropy",
                shapes: ShapeList(vec![lt.shape.clone(), tt.shape.clone()]),
                reason,
            };
            let Some((&c, lead)) = ld.split_last() else {
                return Err(mismatch("logits must be [..., classes] (rank ≥ 1)".into()));
            };
            if lead != tt.shape.dims() {
                return Err(mismatch(format!(
                    "targets must have the logits' leading dims {lead:?} (one class id per row)"
                )));
            }
            if !lt.dtype.is_float() || tt.dtype != DType::I32 {
                let (operand, got, expected) = if lt.dtype.is_float() {
                    (1, tt.dtype, "i32 class ids (cast them first)")
                } else {
                    (0, lt.dtype, "f32, f16 or bf16 logits")
                };
                return Err(IrError::DType { op: "cross_entropy", operand, got, expected: expected.into() });
            }
            let eps = opts.label_smoothing;
            if !(0.0..=1.0).contains(&eps) {
                return Err(IrError::Attribute {
                    op: "cross_entropy",
                    attr: "label_smoothing",
                    shape: lt.shape.clone(),
                    reason: format!("{eps} is outside [0, 1]; PyTorch's range"),
                });
            }
            let dt = lt.dtype;
            let n: usize = lead.iter().product();
            let x = g.reshape(logits, &[n, c])?;
            let t = g.reshape(targets, &[n, 1])?;
            let lp = g.log_softmax(x, -1)?;
            // One-hot of the targets: compare against 0..C (an out-of-range id matches nothing).
            let iota = g.constant(Tensor::from_i32([1, c], (0..c).map(|i| i as i32).collect())?)?;
            let hit = g.eq(t, iota)?;
            let onehot = g.cast(hit, dt)?;
            // Per row: −Σ_c w_c·p_c with w = (1 − ε)·one-hot + ε/C.
            let w = if eps > 0.0 {
                let k = g.full(&[], dt, 1.0 - eps as f64)?;
                let s = g.mul(onehot, k)?;
                let u = g.full(&[], dt, eps as f64 / c as f64)?;
                g.add(s, u)?
            } else {
                onehot
            };
            let wl = g.mul(lp, w)?;
            let row = g.sum(wl, &[1], false)?;
            let row = g.neg(row)?;
            match opts.ignore_index {
                None => g.mean(row, &[0], false),
                Some(ignore) => {
                    let ig = g.constant(Tensor::from_i32([1], vec![ignore])?)?;
                    let t1 = g.reshape(targets, &[n])?;
                    let keep = g.ne(t1, ig)?;
                    let keep = g.cast(keep, dt)?;
                    let kept = g.mul(row, keep)?;
                    let total = g.sum(kept, &[0], false)?;
                    let count = g.sum(keep, &[0], false)?;
                    let one = g.full(&[], dt, 1.0)?;
                    let count = g.maximum(count, one)?;
                    g.div(total, count)
                }
            }
        })
    }

    /// Mean squared error `mean((pred − target)²)` over every element (PyTorch's `F.mse_loss`);
    /// `target` broadcasts to `pred`'s shape.
    fn mse(&mut self, pred: NodeId, target: NodeId) -> Result<NodeId, IrError> {
        self.as_mut().atomically(|g| {
            let d = g.sub(pred, target)?;
            let sq = g.square(d)?;
            let r = g.ty(sq)?.shape.rank();
            if r == 0 {
                return Ok(sq);
            }
            let axes: Vec<isize> = (0..r as isize).collect();
            g.mean(sq, &axes, false)
        })
    }

    /// sentence-transformers' `MultipleNegativesRankingLoss`: anchors [B, D] against candidates
    /// [M, D] (M ≥ B: the B positives, row i for anchor i, then any hard negatives), scores =
    /// `scale`·cos_sim(anchors, candidates) [B, M], and the cross-entropy of each anchor's row
    /// with its own positive as the class (every other candidate is a negative). Rows are
    /// normalised as `F.normalize` does (‖x‖ clamped at 1e-12). Its default scale is 20.
    fn multiple_negatives_ranking(
        &mut self,
        anchors: NodeId,
        candidates: NodeId,
        scale: f32,
    ) -> Result<NodeId, IrError> {
        self.as_mut().atomically(|g| {
            let (at, ct) = (g.ty(anchors)?.clone(), g.ty(candidates)?.clone());
            let (ad, cd) = (at.shape.dims(), ct.shape.dims());
            let ok = matches!((ad, cd), ([b, d], [m, d2]) if d == d2 && m >= b);
            if !ok {
                return Err(IrError::ShapeMismatch {
                    op: "multiple_negatives_ranking",
                    shapes: ShapeList(vec![at.shape.clone(), ct.shape.clone()]),
                    reason: "anchors [B, D] and candidates [M, D] with M ≥ B (the positives first)".into(),
                });
            }
            let b = ad[0];
            let a = normalize_rows(g, anchors)?;
            let c = normalize_rows(g, candidates)?;
            let s = g.matmul_t(a, c, false, true)?;
            let k = g.full(&[], at.dtype, scale as f64)?;
            let s = g.mul(s, k)?;
            let labels = g.constant(Tensor::from_i32([b], (0..b).map(|i| i as i32).collect())?)?;
            g.cross_entropy(s, labels, CrossEntropyOpts::default())
        })
    }
}

/// Rows of `x` [N, D] divided by their L2 norm clamped at 1e-12 (`F.normalize`).
fn normalize_rows(g: &mut Graph, x: NodeId) -> Result<NodeId, IrError> {
    let dt = g.ty(x)?.dtype;
    let sq = g.square(x)?;
    let n = g.sum(sq, &[-1], true)?;
    let n = g.sqrt(n)?;
    let tiny = g.full(&[], dt, 1e-12)?;
    let n = g.maximum(n, tiny)?;
    g.div(x, n)
}

impl LossExt for Graph {}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use rlx_ir::Shape;

    #[test]
    fn cross_entropy_checks_its_operands() {
        let mut g = Graph::new("ce");
        let x = g.input("x", &[4, 5], DType::F32).unwrap();
        let t = g.input("t", &[3], DType::I32).unwrap();
        let tf = g.input("tf", &[4], DType::F32).unwrap();
        let t4 = g.input("t4", &[4], DType::I32).unwrap();
        let before = g.len();
        let e = g.cross_entropy(x, t, CrossEntropyOpts::default()).unwrap_err();
        assert!(e.to_string().contains("leading dims [4]"), "{e}");
        let e = g.cross_entropy(x, tf, CrossEntropyOpts::default()).unwrap_err();
        assert!(matches!(e, IrError::DType { operand: 1, .. }), "{e}");
        let bad = CrossEntropyOpts { label_smoothing: 1.5, ..Default::default() };
        assert!(g.cross_entropy(x, t4, bad).unwrap_err().to_string().contains("label_smoothing"));
        assert_eq!(g.len(), before);
        let l = g
            .cross_entropy(x, t4, CrossEntropyOpts { ignore_index: Some(-100), label_smoothing: 0.1 })
            .unwrap();
        assert_eq!(g.ty(l).unwrap().shape, Shape::scalar());
    }
}
