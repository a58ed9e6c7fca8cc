//! Mamba-2's state-space duality (SSD) scan as a decomposition into native ops: the chunked
//! algorithm of the SSD paper as transformers' `mamba2_chunk_scan` (Mamba2Mixer's torch path)
//! writes it: matmuls within each chunk (a causal "attention" of C against B weighted by the
//! segment-sum decay mask), chunk states from B and x, the recurrence across chunks as one more
//! matmul with the chunk-level decay mask, and the states read out through C. Also the stable
//! `softplus` the Mamba-2 mixer applies to its step sizes.
//!
//! The recurrence across chunks is not a native op here: with C = ⌈L / chunk⌉ chunks (16 for
//! L = 4096 at Mamba-2's chunk of 256) its [C + 1, C + 1] decay matrix is tiny, and a batched
//! matmul over it keeps the whole scan in matmuls (tensor cores where a GPU has them) and
//! equal, term for term, to transformers' computation.

use crate::layers::attr;
use crate::LayerExt;
use rlx_ir::{DType, Graph, IrError, NodeId, Tensor};

/// The optional parts of `mamba2_chunk_scan` around the scan.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SsdOpts {
    /// Skip weight D \[H\]: adds `D[h] · x` to y.
    pub d: Option<NodeId>,
    /// Bias \[H\] added to dt before the softplus.
    pub dt_bias: Option<NodeId>,
    /// dt = softplus(dt + bias) when true.
    pub dt_softplus: bool,
}

/// Mamba-2's chunked SSD scan from matmuls and elementwise ops.
pub trait SsdExt: AsMut<Graph> {
    /// Mamba-2's SSD scan, transformers' `mamba2_chunk_scan(x, dt, A, B, C, chunk, D, dt_bias,
    /// dt_softplus)` from a zero state: x [B, L, H, P], dt [B, L, H], a \[H\] (negative decay
    /// rates, `−exp(A_log)`), bm and cm [B, L, G, N] (G divides H; head h reads group
    /// h / (H / G)), chunk ≥ 1 steps. Per (b, h, p) and state n, with δ = softplus(dt + bias):
    /// `s_t = exp(δ_t a_h) s_{t−1} + δ_t x_t B_t`, `y_t = C_t · s_t (+ D_h x_t)`. Returns
    /// y [B, L, H, P] (f32). L is padded to a multiple of `chunk` with zeros inside, as
    /// transformers does. Atomic; errors name the shapes.
    #[allow(clippy::too_many_arguments)]
    fn ssd_scan(
        &mut self,
        x: NodeId,
        dt: NodeId,
        a: NodeId,
        bm: NodeId,
        cm: NodeId,
        chunk: usize,
        opts: &SsdOpts,
    ) -> Result<NodeId, IrError> {
        self.as_mut().atomically(|g| {
            const OP: &str = "ssd_scan";
            let xs = g.shape_of(OP, x)?;
            let &[b, l, h, p] = xs.dims() else {
                return Err(attr(OP, "x", &xs, "x must be [batch, length, heads, head_dim]"));
            };
            let bs = g.shape_of(OP, bm)?;
            let &[_, _, groups, n] = bs.dims() else {
                return Err(attr(OP, "B", &bs, "B must be [batch, length, groups, state]"));
            };
            if chunk == 0 || groups == 0 || h % groups != 0 || g.shape_of(OP, cm)? != bs {
                return Err(attr(OP, "chunk / groups", &bs,
                    format!(
                        "chunk {chunk} must be ≥ 1, the {groups} groups must divide {h} heads, C must be B's shape"
                    ),
                ));
            }
            if g.shape_of(OP, dt)?.dims() != [b, l, h] || g.shape_of(OP, a)?.dims() != [h] {
                return Err(attr(OP, "dt / A", &xs, format!("dt must be [{b}, {l}, {h}] and A [{h}]")));
            }
            // δ = softplus(dt + bias).
            let mut dt = dt;
            if let Some(bias) = opts.dt_bias {
                dt = g.add(dt, bias)?;
            }
            if opts.dt_softplus {
                dt = g.softplus(dt)?;
            }
            // B and C repeated over the heads of each group: [B, L, H, N].
            let rep = |g: &mut Graph, t: NodeId| -> Result<NodeId, IrError> {
                let t = g.reshape(t, &[b, l, groups, 1, n])?;
                let t = g.expand(t, &[b, l, groups, h / groups, n])?;
                g.reshape(t, &[b, l, h, n])
            };
            let (bm, cm) = (rep(g, bm)?, rep(g, cm)?);
            let pad = (chunk - l % chunk) % chunk;
            let (lp, c) = (l + pad, (l + pad) / chunk);
            let padded = |g: &mut Graph, t: NodeId, rank: usize| -> Result<NodeId, IrError> {
                if pad == 0 {
                    return Ok(t);
                }
                let mut pads = vec![(0, 0); rank];
                pads[1] = (0, pad);
                g.pad(t, &pads, 0.0)
            };
            let x_p = padded(g, x, 4)?;
            let dt4 = g.reshape(dt, &[b, l, h, 1])?;
            let xdt = g.mul(x, dt4)?;
            let adt = g.mul(dt, a)?;
            // Chunked: x [B, C, cs, H, P] → [B, C, H, cs, P]; B, C → [B, C, H, cs, N];
            // A·dt → [B, H, C, cs] and its cumulative sum within each chunk.
            let xdt = padded(g, xdt, 4)?;
            let xdt = g.reshape(xdt, &[b, c, chunk, h, p])?;
            let xdt = g.permute(xdt, &[0, 1, 3, 2, 4])?;
            let chunked = |g: &mut Graph, t: NodeId| -> Result<NodeId, IrError> {
                let t = padded(g, t, 4)?;
                let t = g.reshape(t, &[b, c, chunk, h, n])?;
                g.permute(t, &[0, 1, 3, 2, 4])
            };
            let (bc, cc) = (chunked(g, bm)?, chunked(g, cm)?);
            let adt = padded(g, adt, 3)?;
            let adt = g.reshape(adt, &[b, c, chunk, h])?;
            let adt = g.permute(adt, &[0, 3, 1, 2])?;
            let acum = g.cumsum(adt, -1)?;
            // 1. Within chunks: y_diag = (C Bᵀ ∘ exp(segsum)) x.
            let decay = segsum_exp(g, adt, chunk)?; // [B, H, C, cs, cs]
            let decay = g.permute(decay, &[0, 2, 1, 3, 4])?; // [B, C, H, l, s]
            let scores = g.matmul_t(cc, bc, false, true)?; // [B, C, H, l, s]
            let m = g.mul(scores, decay)?;
            let y_diag = g.matmul(m, xdt)?; // [B, C, H, l, P]
                                            // 2. Each chunk's end state from a zero start: Σ_l exp(acum_last − acum_l) x_l B_lᵀ.
            let last = g.slice(acum, -1, chunk - 1, chunk, 1)?; // [B, H, C, 1]
            let to_end = g.sub(last, acum)?;
            let to_end = g.exp(to_end)?;
            let to_end = g.permute(to_end, &[0, 2, 1, 3])?; // [B, C, H, cs]
            let to_end = g.reshape(to_end, &[b, c, h, chunk, 1])?;
            let b_decay = g.mul(bc, to_end)?;
            let states = g.matmul_t(xdt, b_decay, true, false)?; // [B, C, H, P, N]
                                                                 // 3. Across chunks: states entering each chunk = exp(segsum) over chunk totals.
            let zeros = g.full(&[b, 1, h, p, n], DType::F32, 0.0)?;
            let states = g.concat(&[zeros, states], 1)?; // [B, C+1, H, P, N]
            let states = g.permute(states, &[0, 2, 1, 3, 4])?;
            let states = g.reshape(states, &[b, h, c + 1, p * n])?;
            let totals = g.reshape(last, &[b, h, c])?;
            let totals = g.pad(totals, &[(0, 0), (0, 0), (1, 0)], 0.0)?;
            let across = segsum_exp(g, totals, c + 1)?; // [B, H, C+1, C+1]
            let entering = g.matmul(across, states)?; // [B, H, C+1, P·N]
            let entering = g.slice(entering, 2, 0, c, 1)?;
            let entering = g.reshape(entering, &[b, h, c, p, n])?;
            let entering = g.permute(entering, &[0, 2, 1, 3, 4])?; // [B, C, H, P, N]
                                                                   // 4. Read the entering states out: y_off = (C · s) ∘ exp(acum).
            let c_s = g.matmul_t(cc, entering, false, true)?; // [B, C, H, cs, P]
            let out_decay = g.exp(acum)?;
            let out_decay = g.permute(out_decay, &[0, 2, 1, 3])?;
            let out_decay = g.reshape(out_decay, &[b, c, h, chunk, 1])?;
            let y_off = g.mul(c_s, out_decay)?;
            let y = g.add(y_diag, y_off)?;
            let y = g.permute(y, &[0, 1, 3, 2, 4])?; // [B, C, cs, H, P]
            let mut y = g.reshape(y, &[b, lp, h, p])?;
            if let Some(d) = opts.d {
                let d = g.reshape(d, &[h, 1])?;
                let skip = g.mul(x_p, d)?;
                y = g.add(y, skip)?;
            }
            if pad > 0 {
                y = g.slice(y, 1, 0, l, 1)?;
            }
            Ok(y)
        })
    }
}

impl SsdExt for Graph {}

/// transformers' `exp(segment_sum(v))` over the last axis of v [..., T]: out[..., i, j] =
/// exp(Σ_{j < k ≤ i} v[k]) for j ≤ i (a masked cumulative sum, not a difference of
/// cumulative sums, which cancels badly), 0 above the diagonal.
fn segsum_exp(g: &mut Graph, v: NodeId, t: usize) -> Result<NodeId, IrError> {
    let dims = g.shape_of("ssd_scan", v)?.dims().to_vec();
    let mut col = dims.clone();
    col.push(1);
    let mut square = dims;
    square.push(t);
    let v = g.reshape(v, &col)?;
    let v = g.expand(v, &square)?; // [..., i, j] = v[i]
    let (below, on_or_below): (Vec<bool>, Vec<bool>) =
        (0..t * t).map(|k| (k / t > k % t, k / t >= k % t)).unzip();
    let below = g.constant(Tensor::from_bool([t, t], below)?)?;
    let on_or_below = g.constant(Tensor::from_bool([t, t], on_or_below)?)?;
    let zero = g.scalar(0.0)?;
    let masked = g.where_(below, v, zero)?;
    let sums = g.cumsum(masked, -2)?;
    let e = g.exp(sums)?;
    g.where_(on_or_below, e, zero)
}
