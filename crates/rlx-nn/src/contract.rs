//! XLA's DotGeneral on the native `MatMul`: contraction over any paired dims with any paired
//! batch dims. Each operand is brought to the matrix layout `MatMul` reads — [batch..., rows,
//! contracted] or [batch..., contracted, rows], the latter through the transpose flag — with a
//! `Permute` only when its dims are in neither order, and a `Reshape` (a view) only when several
//! (or no) dims make up the rows or the contraction. So the common layouts (`ij,jk`, `ij,kj`,
//! `ji,jk`, `bij,bjk`, `bhqd,bhkd`) are one `MatMul` and nothing else.
//!
//! `einsum` for two operands, on [`Graph::dot_general`]: indices in both operands and the
//! output are batch dims, in both operands only are contracted, in one operand and the output
//! are free, in one operand only are summed out first. What it refuses, each with an error
//! saying so: a number of operands other than two, an index repeated within one operand (a
//! diagonal) or within the output, `...`, characters other than ASCII letters, an output
//! index no operand has, and operands whose rank or sizes disagree with the spec.

use rlx_ir::{Graph, IrError, NodeId, Shape};

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

/// Tensor contractions on the native `MatMul`: XLA's `dot_general` and two-operand `einsum`.
pub trait ContractExt: AsMut<Graph> {
    /// XLA's `DotGeneral`: contracts `lhs` and `rhs` over the paired axes `lhs_contract[i]` /
    /// `rhs_contract[i]`, batched over the paired axes `lhs_batch[i]` / `rhs_batch[i]` (equal
    /// sizes, no broadcasting). The output is [batch dims (in `lhs_batch` order), lhs free dims,
    /// rhs free dims], free dims in axis order — `torch.einsum` with the same index pairing.
    /// Lowered to one `MatMul` (transpose flags for operands already laid out either way),
    /// with `Permute` / `Reshape` only where the dims are not in place. Errors name
    /// `dot_general`, the shapes and the offending axes.
    fn dot_general(
        &mut self,
        lhs: NodeId,
        rhs: NodeId,
        lhs_batch: &[usize],
        rhs_batch: &[usize],
        lhs_contract: &[usize],
        rhs_contract: &[usize],
    ) -> Result<NodeId, IrError> {
        self.as_mut().atomically(|g| {
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

    /// `torch.einsum(spec, a, b)` for exactly two operands, e.g. `"bij,bjk->bik"`, `"ij,kj->ik"`
    /// or `"bhqd,bhkd->bhqk"`. Without `->` the output is the indices that appear once, in
    /// alphabetical order (numpy's rule). Spaces are ignored. Lowered to [`Graph::dot_general`]
    /// (one `MatMul` for the common layouts), a `Sum` for an index only one operand has, and a
    /// final `Permute` only when the requested output order is not the natural one. Errors name
    /// `einsum`, the spec, the shapes and what is unsupported.
    fn einsum(&mut self, spec: &str, operands: &[NodeId]) -> Result<NodeId, IrError> {
        let g = self.as_mut();
        let &[a, b] = operands else {
            let shape = match operands.first() {
                Some(&x) => g.ty(x)?.shape.clone(),
                None => Shape::new(&[]),
            };
            return Err(spec_err(
                shape,
                spec,
                format!(
                    "einsum takes exactly two operands here, got {}; chain pairs for more",
                    operands.len()
                ),
            ));
        };
        let clean: String = spec.chars().filter(|c| !c.is_whitespace()).collect();
        let (ins, out) = match clean.split_once("->") {
            Some((i, o)) => (i, Some(o)),
            None => (clean.as_str(), None),
        };
        let shapes = [g.ty(a)?.shape.clone(), g.ty(b)?.shape.clone()];
        let Some((ta, tb)) = ins.split_once(',').filter(|(_, tb)| !tb.contains(',')) else {
            return Err(spec_err(
                shapes[0].clone(),
                spec,
                "the inputs must be two comma-separated terms".into(),
            ));
        };
        let mut la = term(spec, ta, "operand 0", &shapes[0])?;
        let mut lb = term(spec, tb, "operand 1", &shapes[1])?;
        for (i, (letters, shape)) in [(&la, &shapes[0]), (&lb, &shapes[1])].into_iter().enumerate() {
            if letters.len() != shape.rank() {
                return Err(spec_err(
                    shape.clone(),
                    spec,
                    format!(
                        "operand {i} has rank {} but its term names {} dims",
                        shape.rank(),
                        letters.len()
                    ),
                ));
            }
        }
        let out = match out {
            Some(o) => term(spec, o, "the output", &shapes[0])?,
            None => {
                let mut once: Vec<char> = la
                    .iter()
                    .chain(&lb)
                    .copied()
                    .filter(|c| la.iter().chain(&lb).filter(|d| *d == c).count() == 1)
                    .collect();
                once.sort_unstable();
                once
            }
        };
        if let Some(c) = out.iter().find(|c| !la.contains(c) && !lb.contains(c)) {
            return Err(spec_err(
                shapes[0].clone(),
                spec,
                format!("output index '{c}' is in neither operand"),
            ));
        }
        for (i, &c) in la.iter().enumerate() {
            if let Some(j) = lb.iter().position(|&d| d == c) {
                let (da, db) = (shapes[0].dims()[i], shapes[1].dims()[j]);
                if da != db {
                    return Err(IrError::ShapeMismatch {
                        op: "einsum",
                        shapes: shapes.to_vec().into(),
                        reason: format!(
                            "'{spec}': index '{c}' has size {da} in operand 0 but {db} in operand 1"
                        ),
                    });
                }
            }
        }
        g.atomically(|g| {
            // Indices one operand has alone and the output lacks are summed out first.
            let sum_alone = |g: &mut Graph, x: NodeId, own: &mut Vec<char>, other: &[char]| {
                let axes: Vec<isize> = (0..own.len())
                    .filter(|&i| !other.contains(&own[i]) && !out.contains(&own[i]))
                    .map(|i| i as isize)
                    .collect();
                if axes.is_empty() {
                    return Ok(x);
                }
                own.retain(|c| other.contains(c) || out.contains(c));
                g.sum(x, &axes, false)
            };
            let lb_now = lb.clone();
            let a = sum_alone(g, a, &mut la, &lb_now)?;
            let la_now = la.clone();
            let b = sum_alone(g, b, &mut lb, &la_now)?;
            let pos = |letters: &[char], c: char| letters.iter().position(|&d| d == c).unwrap_or(0);
            let batch: Vec<char> = out.iter().copied().filter(|c| la.contains(c) && lb.contains(c)).collect();
            let contract: Vec<char> =
                la.iter().copied().filter(|c| lb.contains(c) && !out.contains(c)).collect();
            let lb_axes: Vec<usize> = batch.iter().map(|&c| pos(&la, c)).collect();
            let rb_axes: Vec<usize> = batch.iter().map(|&c| pos(&lb, c)).collect();
            let lc_axes: Vec<usize> = contract.iter().map(|&c| pos(&la, c)).collect();
            let rc_axes: Vec<usize> = contract.iter().map(|&c| pos(&lb, c)).collect();
            let y = g.dot_general(a, b, &lb_axes, &rb_axes, &lc_axes, &rc_axes)?;
            // dot_general's order: batch, a's free indices, b's free indices.
            let mut natural = batch.clone();
            natural.extend(la.iter().filter(|c| !lb.contains(c)));
            natural.extend(lb.iter().filter(|c| !la.contains(c)));
            if natural == out {
                return Ok(y);
            }
            let perm: Vec<usize> = out.iter().map(|&c| pos(&natural, c)).collect();
            g.permute(y, &perm)
        })
    }
}

impl ContractExt for Graph {}

fn spec_err(shape: Shape, spec: &str, reason: String) -> IrError {
    IrError::Attribute { op: "einsum", attr: "spec", shape, reason: format!("'{spec}': {reason}") }
}

/// The index letters of one term, each checked to be a letter and to appear once.
fn term(spec: &str, t: &str, what: &str, shape: &Shape) -> Result<Vec<char>, IrError> {
    if t.contains('.') {
        return Err(spec_err(
            shape.clone(),
            spec,
            "'...' (broadcast dims) is not supported; name every dim".into(),
        ));
    }
    let mut letters = Vec::new();
    for c in t.chars() {
        if !c.is_ascii_alphabetic() {
            return Err(spec_err(
                shape.clone(),
                spec,
                format!("'{c}' in {what} is not an index letter (a-z, A-Z)"),
            ));
        }
        if letters.contains(&c) {
            return Err(spec_err(
                shape.clone(),
                spec,
                format!("index '{c}' repeats in {what}: diagonals and traces are not supported"),
            ));
        }
        letters.push(c);
    }
    Ok(letters)
}
