//! LoRA: a linear layer plus its low-rank adapter, `x·wᵀ + scale·(x·aᵀ)·bᵀ`, as PEFT computes it.
//!
//! Why it is three matmuls and one add, and nothing else. The rank-r path costs x·aᵀ ([M, r],
//! reading x and a again: M·K + r·K) and t·bᵀ ([M, N] from M·r + N·r); the scale goes on t, the
//! smallest tensor (M·r elements, no node at all for a scale of 1). What is left is the add of
//! two [M, N] results. Concatenating instead, `[x | s·t] · [w | b]ᵀ` in one matmul, would copy
//! the whole weight w (N·K, plus x's M·K) on every run, since params arrive at run time: for a
//! 4096² layer that is 64 MiB of extra traffic in f32 against 2·M·N for the add (32 KiB at M =
//! 1, 16 MiB at M = 512), so concatenation only pays past M ≈ K. For decode rows (M = 1 after
//! the leading dims) the add needs no pass of its own: t·bᵀ is [1, N], a bias by rlx-opt's
//! matmul-epilogue fusion, so the add folds into the base matmul's epilogue (one FusedMatMul
//! writing the output once). For M > 1 the add is one elementwise pass over [M, N].

use rlx_ir::{Graph, IrError, NodeId, Shape};

/// The dims of a 2-D operand of `lora_matmul`, or an error naming it and the layout.
fn dims2(g: &Graph, id: NodeId, what: &str, layout: &str) -> Result<[usize; 2], IrError> {
    let shape = g.ty(id)?.shape.clone();
    match *shape.dims() {
        [r, c] => Ok([r, c]),
        _ => Err(IrError::Attribute {
            op: "lora_matmul",
            attr: "operand rank",
            shape,
            reason: format!("{what} must be 2-D {layout} (nn.Linear / PEFT layout)"),
        }),
    }
}

/// A linear layer with its LoRA adapter (PEFT's computation) as three matmuls and an add.
pub trait LoraExt: AsMut<Graph> {
    /// `x·wᵀ + scale·(x·aᵀ)·bᵀ`: an `nn.Linear` weight `w` [N, K] with a PEFT LoRA adapter,
    /// `a` = lora_A [r, K] and `b` = lora_B [N, r]; `scale` is PEFT's `lora_alpha / r`. `x` is
    /// [..., K] (rank ≥ 2), all of one float dtype; the result is [..., N] in it, as
    /// `F.linear(x, w) + scale * F.linear(F.linear(x, a), b)`. Errors name `lora_matmul`, the
    /// shapes and which dim disagrees.
    fn lora_matmul(
        &mut self,
        x: NodeId,
        w: NodeId,
        a: NodeId,
        b: NodeId,
        scale: f32,
    ) -> Result<NodeId, IrError> {
        self.as_mut().atomically(|g| {
            let [n, k] = dims2(g, w, "the weight w", "[N, K]")?;
            let [r, ka] = dims2(g, a, "lora_A", "[r, K]")?;
            let [nb, rb] = dims2(g, b, "lora_B", "[N, r]")?;
            let xs = g.ty(x)?.shape.clone();
            let kx = xs.dims().last().copied();
            if (ka, nb, rb, kx) != (k, n, r, Some(k)) || xs.rank() < 2 {
                let shapes: Vec<Shape> = [x, w, a, b]
                    .iter()
                    .map(|&id| g.ty(id).map(|t| t.shape.clone()))
                    .collect::<Result<_, _>>()?;
                return Err(IrError::ShapeMismatch {
                    op: "lora_matmul",
                    shapes: shapes.into(),
                    reason: format!(
                        "x [..., K] (rank ≥ 2), w [N, K], lora_A [r, K] and lora_B [N, r] must agree: \
                         here K = {k} (w), {ka} (lora_A), {kx:?} (x); N = {n} (w), {nb} (lora_B); r = \
                         {r} (lora_A), {rb} (lora_B)"
                    ),
                });
            }
            let base = g.matmul_t(x, w, false, true)?;
            let mut t = g.matmul_t(x, a, false, true)?;
            if scale != 1.0 {
                let dtype = g.ty(t)?.dtype;
                let s = g.full(&[], dtype, f64::from(scale))?;
                t = g.mul(t, s)?;
            }
            let update = g.matmul_t(t, b, false, true)?;
            g.add(base, update)
        })
    }
}

impl LoraExt for Graph {}
