//! XLA's DotGeneral on the native `MatMul`: contraction over any paired dims with any paired
//! batch dims. Each operand is brought to the matrix layout `MatMul` reads — [batch..., rows,
//! contracted] or [batch..., contracted, rows], the latter through the transpose flag — with a
//! `Permute` only when its dims are in neither order, and a `Reshape` (a view) only when several
//! (or no) dims make up the rows or the contraction. So the common layouts (`ij,jk`, `ij,kj`,
//! `ji,jk`, `bij,bjk`, `bhqd,bhkd`) are one `MatMul` and nothing else.

use crate::{Graph, IrError, NodeId, Shape};

/// How one operand enters the matmul.
struct Arranged {
    node: NodeId,
    /// The operand's matrix is [.., contracted, free] rather than [.., free, contracted].
    contracted_first: bool,
    /// The free (neither batch nor contracted) dims' sizes, in axis order.
    free: Vec<usize>,
}

fn attr_err(shape: &Shape, attr: &'static str, reason: String) -> IrError {
    IrError::Attribute { op: "dot_general", attr, shape: shape.clone(), reason }
}

/// Checks one operand's batch and contracting axes: in range, none twice.
fn check_axes(shape: &Shape, side: &str, batch: &[usize], contract: &[usize]) -> Result<(), IrError> {
    let mut seen = vec![false; shape.rank()];
    for &a in batch.iter().chain(contract) {
        match seen.get_mut(a) {
            None => {
                return Err(attr_err(
                    shape,
                    "dimension numbers",
                    format!("{side} axis {a} is out of range for rank {}", shape.rank()),
                ))
            }
            Some(true) => {
                return Err(attr_err(
                    shape,
                    "dimension numbers",
                    format!("{side} axis {a} is listed twice among batch and contracting dims"),
                ))
            }
            Some(s) => *s = true,
        }
    }
    Ok(())
}

/// `x` arranged as [batch..., free, contracted] or [batch..., contracted, free], each group
/// flattened to one dim. `prefer_contracted_first` picks the order used when a permute is
/// needed anyway.
fn arrange(
    g: &mut Graph,
    x: NodeId,
    batch: &[usize],
    contract: &[usize],
    prefer_contracted_first: bool,
) -> Result<Arranged, IrError> {
    let dims = g.ty(x)?.shape.dims().to_vec();
    let free_axes: Vec<usize> =
        (0..dims.len()).filter(|a| !batch.contains(a) && !contract.contains(a)).collect();
    let order = |contracted_first: bool| -> Vec<usize> {
        let (first, second) =
            if contracted_first { (contract, &free_axes[..]) } else { (&free_axes[..], contract) };
        batch.iter().chain(first).chain(second).copied().collect()
    };
    let identity: Vec<usize> = (0..dims.len()).collect();
    let (node, contracted_first) = if order(false) == identity {
        (x, false)
    } else if order(true) == identity {
        (x, true)
    } else {
        (g.permute(x, &order(prefer_contracted_first))?, prefer_contracted_first)
    };
    let size = |axes: &[usize]| axes.iter().map(|&a| dims[a]).product::<usize>();
    let (rows, cols) = (size(&free_axes), size(contract));
    let mut target: Vec<usize> = batch.iter().map(|&a| dims[a]).collect();
    target.extend(if contracted_first { [cols, rows] } else { [rows, cols] });
    let node = if free_axes.len() == 1 && contract.len() == 1 { node } else { g.reshape(node, &target)? };
    Ok(Arranged { node, contracted_first, free: free_axes.iter().map(|&a| dims[a]).collect() })
}

impl Graph {
    /// XLA's `DotGeneral`: contracts `lhs` and `rhs` over the paired axes `lhs_contract[i]` /
    /// `rhs_contract[i]`, batched over the paired axes `lhs_batch[i]` / `rhs_batch[i]` (equal
    /// sizes, no broadcasting). The output is [batch dims (in `lhs_batch` order), lhs free dims,
    /// rhs free dims], free dims in axis order — `torch.einsum` with the same index pairing.
    /// Lowered to one `MatMul` (transpose flags for operands already laid out either way),
    /// with `Permute` / `Reshape` only where the dims are not in place. Errors name
    /// `dot_general`, the shapes and the offending axes.
    pub fn dot_general(
        &mut self,
        lhs: NodeId,
        rhs: NodeId,
        lhs_batch: &[usize],
        rhs_batch: &[usize],
        lhs_contract: &[usize],
        rhs_contract: &[usize],
    ) -> Result<NodeId, IrError> {
        self.atomically(|g| {
            let ls = g.ty(lhs)?.shape.clone();
            let rs = g.ty(rhs)?.shape.clone();
            check_axes(&ls, "lhs", lhs_batch, lhs_contract)?;
            check_axes(&rs, "rhs", rhs_batch, rhs_contract)?;
            let pairs = [("batch", lhs_batch, rhs_batch), ("contracting", lhs_contract, rhs_contract)];
            for (what, l, r) in pairs {
                let mismatch = |reason: String| IrError::ShapeMismatch {
                    op: "dot_general",
                    shapes: vec![ls.clone(), rs.clone()].into(),
                    reason,
                };
                if l.len() != r.len() {
                    return Err(mismatch(format!(
                        "{} lhs {what} dims {l:?} but {} rhs {what} dims {r:?}; they pair up one to one",
                        l.len(),
                        r.len()
                    )));
                }
                for (&a, &b) in l.iter().zip(r) {
                    let (da, db) = (ls.dims()[a], rs.dims()[b]);
                    if da != db {
                        return Err(mismatch(format!(
                            "{what} dims lhs axis {a} (size {da}) and rhs axis {b} (size {db}) differ"
                        )));
                    }
                }
            }
            let l = arrange(g, lhs, lhs_batch, lhs_contract, false)?;
            let r = arrange(g, rhs, rhs_batch, rhs_contract, false)?;
            // MatMul reads a as [.., M, K] unless transposed, b as [.., K, N] unless transposed.
            let y = g.matmul_t(l.node, r.node, l.contracted_first, !r.contracted_first)?;
            let mut out: Vec<usize> = lhs_batch.iter().map(|&a| ls.dims()[a]).collect();
            out.extend(l.free.iter().chain(&r.free));
            if l.free.len() == 1 && r.free.len() == 1 {
                Ok(y)
            } else {
                g.reshape(y, &out)
            }
        })
    }
}
