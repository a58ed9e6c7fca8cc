//! Recurrent layers with PyTorch's `nn.LSTM`, `nn.GRU` and `nn.RNN` semantics and weight
//! layout, unrolled over time into matmuls and elementwise ops.
//!
//! Per layer and direction: the input projection of every step is one matmul
//! ([T·B, I] × W_ihᵀ, plus the biases that can be folded), then each step is one matmul
//! h·W_hhᵀ and the gate arithmetic on [B, G·H]. The reverse direction walks the steps from the
//! last (slices of the projection, no copy of the input). Bidirectional outputs are joined on
//! the feature axis, and layer k + 1 reads layer k's output. The graph grows linearly with the
//! sequence length, so this suits sequences of tens to a few hundred steps.

use crate::layers::float_dtype;
use rlx_ir::{DType, Graph, IrError, NodeId, Shape, ShapeList};

/// The weights of one direction of one layer, as `NodeId`s, in PyTorch's layout and naming:
/// `w_ih` = `weight_ih_l{k}[_reverse]` [G·H, I_k], `w_hh` = `weight_hh_l{k}[_reverse]` [G·H, H],
/// `b_ih` / `b_hh` = `bias_ih_l{k}` / `bias_hh_l{k}` [G·H] (either may be absent: `bias=False`).
/// G is 4 for LSTM (gates i, f, g, o), 3 for GRU (r, z, n), 1 for RNN. I_0 is the input size,
/// I_k (k ≥ 1) is H times the number of directions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RnnWeights {
    pub w_ih: NodeId,
    pub w_hh: NodeId,
    pub b_ih: Option<NodeId>,
    pub b_hh: Option<NodeId>,
}

/// The stack's shape and layout: PyTorch's `num_layers`, `bidirectional` and `batch_first`.
/// Weight sets are passed in PyTorch's order: l0, l0_reverse (if bidirectional), l1, ….
/// Dropout between layers is a training feature and has no place here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RnnConfig {
    pub num_layers: usize,
    pub bidirectional: bool,
    /// x and `output` are [B, T, ·] instead of [T, B, ·] (h0, c0, h_n, c_n never change).
    pub batch_first: bool,
}

impl RnnConfig {
    /// One layer, one direction, time-major: the PyTorch defaults.
    pub fn new() -> RnnConfig {
        RnnConfig { num_layers: 1, bidirectional: false, batch_first: false }
    }

    fn directions(&self) -> usize {
        1 + usize::from(self.bidirectional)
    }
}

impl Default for RnnConfig {
    fn default() -> Self {
        RnnConfig::new()
    }
}

/// The nonlinearity of a plain [`Graph::rnn`] (PyTorch's `nonlinearity`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RnnActivation {
    Tanh,
    Relu,
}

/// What a recurrent builder returns, PyTorch's `(output, h_n)` or `(output, (h_n, c_n))`:
/// `output` [T, B, D·H] ([B, T, D·H] with `batch_first`), the last layer's hidden state at
/// every step (forward and reverse halves side by side); `h_n` [L·D, B, H], the final hidden
/// state of each layer and direction (the reverse direction's final state is at step 0);
/// `c_n` the same for an LSTM's cell state, `None` for GRU and RNN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RnnOutput {
    pub output: NodeId,
    pub h_n: NodeId,
    pub c_n: Option<NodeId>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cell {
    Lstm,
    Gru,
    Rnn(RnnActivation),
}

impl Cell {
    fn name(self) -> &'static str {
        match self {
            Cell::Lstm => "lstm",
            Cell::Gru => "gru",
            Cell::Rnn(RnnActivation::Tanh) => "rnn_tanh",
            Cell::Rnn(RnnActivation::Relu) => "rnn_relu",
        }
    }

    fn gates(self) -> usize {
        match self {
            Cell::Lstm => 4,
            Cell::Gru => 3,
            Cell::Rnn(_) => 1,
        }
    }
}

/// Sizes shared by every step of one direction.
#[derive(Clone, Copy)]
struct Dims {
    steps: usize,
    batch: usize,
    hidden: usize,
}

/// One direction's results: hidden state per step (time order), final h and c.
struct DirOut {
    seq: NodeId,
    h: NodeId,
    c: Option<NodeId>,
}

/// PyTorch's recurrent layers (`nn.LSTM`, `nn.GRU`, `nn.RNN`) unrolled over time into primitive ops.
pub trait RecurrentExt: AsMut<Graph> {
    /// PyTorch's `nn.LSTM` forward: x [T, B, I] ([B, T, I] with `batch_first`), `weights` one
    /// [`RnnWeights`] per layer and direction (gates i, f, g, o), optional h0 and c0
    /// [L·D, B, H] (zeros when absent). Per step: i = σ(·), f = σ(·), g = tanh(·), o = σ(·) of
    /// W_i·x + b_i + W_h·h + b_h, c' = f ⊙ c + i ⊙ g, h' = o ⊙ tanh(c'). Returns output, h_n and
    /// c_n ([`RnnOutput`]). Errors name `lstm`: T = 0, wrong ranks, a weight of the wrong shape
    /// (named as in PyTorch, with the shape expected and the shape given), a wrong weight count.
    fn lstm(
        &mut self,
        x: NodeId,
        config: RnnConfig,
        weights: &[RnnWeights],
        h0: Option<NodeId>,
        c0: Option<NodeId>,
    ) -> Result<RnnOutput, IrError> {
        recurrent(self.as_mut(), Cell::Lstm, x, config, weights, h0, c0)
    }

    /// PyTorch's `nn.GRU` forward (gates r, z, n): r = σ(W_ir x + b_ir + W_hr h + b_hr),
    /// z = σ(W_iz x + b_iz + W_hz h + b_hz), n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)),
    /// h' = (1 − z) ⊙ n + z ⊙ h. Shapes, h0 and errors as [`Graph::lstm`]; `c_n` is `None`.
    fn gru(
        &mut self,
        x: NodeId,
        config: RnnConfig,
        weights: &[RnnWeights],
        h0: Option<NodeId>,
    ) -> Result<RnnOutput, IrError> {
        recurrent(self.as_mut(), Cell::Gru, x, config, weights, h0, None)
    }

    /// PyTorch's `nn.RNN` forward: h' = act(W_ih x + b_ih + W_hh h + b_hh) with `act` tanh or
    /// relu. Shapes, h0 and errors as [`Graph::lstm`]; `c_n` is `None`.
    fn rnn(
        &mut self,
        x: NodeId,
        config: RnnConfig,
        weights: &[RnnWeights],
        h0: Option<NodeId>,
        activation: RnnActivation,
    ) -> Result<RnnOutput, IrError> {
        recurrent(self.as_mut(), Cell::Rnn(activation), x, config, weights, h0, None)
    }
}

impl RecurrentExt for Graph {}

fn recurrent(
    g: &mut Graph,
    cell: Cell,
    x: NodeId,
    config: RnnConfig,
    weights: &[RnnWeights],
    h0: Option<NodeId>,
    c0: Option<NodeId>,
) -> Result<RnnOutput, IrError> {
    let op = cell.name();
    g.atomically(|g| {
        let xt = g.ty_for(op, x)?.clone();
        let attr = |a: &'static str, reason: String| IrError::Attribute {
            op,
            attr: a,
            shape: xt.shape.clone(),
            reason,
        };
        let &[a, b, input] = xt.shape.dims() else {
            return Err(attr(
                "input rank",
                "x must be [seq, batch, input] ([batch, seq, input] with batch_first); add a batch \
                 dim of 1 with reshape"
                    .into(),
            ));
        };
        let (steps, batch) = if config.batch_first { (b, a) } else { (a, b) };
        if steps == 0 {
            return Err(attr(
                "sequence length",
                "the sequence is empty (T = 0); pass at least one step".into(),
            ));
        }
        float_dtype(op, xt.dtype)?;
        if config.num_layers == 0 {
            return Err(attr("num_layers", "num_layers must be ≥ 1".into()));
        }
        let dirs = config.directions();
        let sets = config.num_layers.saturating_mul(dirs);
        if weights.len() != sets {
            return Err(IrError::Arity {
                op,
                expected: format!(
                    "{sets} weight sets ({} layers × {dirs} directions, in PyTorch's order l0{}, l1, …)",
                    config.num_layers,
                    if dirs == 2 { ", l0_reverse" } else { "" }
                ),
                got: weights.len(),
            });
        }
        let hidden = hidden_size(g, cell, &weights[0])?;
        for (i, w) in weights.iter().enumerate() {
            let in_size = if i < dirs { input } else { dirs * hidden };
            check_weights(g, cell, w, i / dirs, i % dirs == 1, in_size, hidden, xt.dtype)?;
        }
        let state = [sets, batch, hidden];
        check_state(g, op, "h0", h0, &state)?;
        // Only lstm() passes a c0.
        check_state(g, op, "c0", c0, &state)?;
        let dims = Dims { steps, batch, hidden };
        let mut seq = if config.batch_first { g.permute(x, &[1, 0, 2])? } else { x };
        let (mut hs, mut cs) = (Vec::with_capacity(sets), Vec::with_capacity(sets));
        for layer in 0..config.num_layers {
            let mut outs = Vec::with_capacity(dirs);
            for dir in 0..dirs {
                let idx = layer * dirs + dir;
                let h_init = initial_state(g, h0, idx, dims, xt.dtype)?;
                let c_init = match cell {
                    Cell::Lstm => Some(initial_state(g, c0, idx, dims, xt.dtype)?),
                    _ => None,
                };
                let r = direction(g, cell, seq, &weights[idx], dir == 1, h_init, c_init, dims)?;
                outs.push(r.seq);
                hs.push(g.reshape(r.h, &[1, batch, hidden])?);
                if let Some(c) = r.c {
                    cs.push(g.reshape(c, &[1, batch, hidden])?);
                }
            }
            seq = if outs.len() == 1 { outs[0] } else { g.concat(&outs, 2)? };
        }
        let output = if config.batch_first { g.permute(seq, &[1, 0, 2])? } else { seq };
        let h_n = g.concat(&hs, 0)?;
        let c_n = if cs.is_empty() { None } else { Some(g.concat(&cs, 0)?) };
        Ok(RnnOutput { output, h_n, c_n })
    })
}

/// H from `weight_hh_l0` [G·H, H].
fn hidden_size(g: &Graph, cell: Cell, w: &RnnWeights) -> Result<usize, IrError> {
    let op = cell.name();
    let s = g.shape_of(op, w.w_hh)?;
    let gates = cell.gates();
    match *s.dims() {
        [rows, h] if h >= 1 && rows == gates * h => Ok(h),
        _ => Err(IrError::Attribute {
            op,
            attr: "weight_hh_l0",
            shape: s.clone(),
            reason: format!(
                "weight_hh_l0 must be [{gates}·hidden, hidden] with hidden ≥ 1 (the gates stacked \
                 as in PyTorch); got {s}"
            ),
        }),
    }
}

/// Every weight of one direction against the shape PyTorch gives it.
#[allow(clippy::too_many_arguments)]
fn check_weights(
    g: &Graph,
    cell: Cell,
    w: &RnnWeights,
    layer: usize,
    reverse: bool,
    in_size: usize,
    hidden: usize,
    dtype: DType,
) -> Result<(), IrError> {
    let op = cell.name();
    let rows = cell.gates() * hidden;
    let suffix = if reverse { "_reverse" } else { "" };
    let mut wanted =
        vec![("weight_ih", w.w_ih, vec![rows, in_size]), ("weight_hh", w.w_hh, vec![rows, hidden])];
    wanted.extend(w.b_ih.map(|b| ("bias_ih", b, vec![rows])));
    wanted.extend(w.b_hh.map(|b| ("bias_hh", b, vec![rows])));
    for (operand, (name, id, want)) in wanted.into_iter().enumerate() {
        let t = g.ty_for(op, id)?;
        if t.shape.dims() != want.as_slice() {
            let want = Shape::new(&want);
            return Err(IrError::ShapeMismatch {
                op,
                shapes: ShapeList(vec![want.clone(), t.shape.clone()]),
                reason: format!(
                    "{name}_l{layer}{suffix} must be {want} ({} gates × hidden {hidden}{}) but is {}",
                    cell.gates(),
                    if name == "weight_ih" { format!(", × input {in_size}") } else { String::new() },
                    t.shape
                ),
            });
        }
        if t.dtype != dtype {
            return Err(IrError::DType {
                op,
                operand: operand + 1,
                got: t.dtype,
                expected: format!("{dtype}, the dtype of x ({name}_l{layer}{suffix})"),
            });
        }
    }
    Ok(())
}

/// h0 or c0 must be [L·D, B, H] when given.
fn check_state(
    g: &Graph,
    op: &'static str,
    what: &'static str,
    s: Option<NodeId>,
    want: &[usize; 3],
) -> Result<(), IrError> {
    let Some(s) = s else { return Ok(()) };
    let got = g.shape_of(op, s)?;
    if got.dims() != want {
        let want = Shape::new(want);
        return Err(IrError::ShapeMismatch {
            op,
            shapes: ShapeList(vec![want.clone(), got]),
            reason: format!("{what} must be [num_layers · directions, batch, hidden] = {want}"),
        });
    }
    Ok(())
}

/// Slot `idx` of h0/c0 as [B, H], or zeros.
fn initial_state(
    g: &mut Graph,
    s: Option<NodeId>,
    idx: usize,
    d: Dims,
    dtype: DType,
) -> Result<NodeId, IrError> {
    match s {
        Some(s) => {
            let one = g.narrow(s, 0, idx, 1)?;
            g.reshape(one, &[d.batch, d.hidden])
        }
        None => g.full(&[d.batch, d.hidden], dtype, 0.0),
    }
}

/// One direction of one layer over `seq` [T, B, I]: [T, B, H] and the final states.
#[allow(clippy::too_many_arguments)]
fn direction(
    g: &mut Graph,
    cell: Cell,
    seq: NodeId,
    w: &RnnWeights,
    reverse: bool,
    h_init: NodeId,
    c_init: Option<NodeId>,
    d: Dims,
) -> Result<DirOut, IrError> {
    let Dims { steps, batch, hidden } = d;
    let rows = cell.gates() * hidden;
    let input = g.shape_of(cell.name(), seq)?.dims()[2];
    let tb = steps.checked_mul(batch).ok_or_else(|| IrError::Attribute {
        op: cell.name(),
        attr: "batch",
        shape: Shape::new(&[steps, batch, input]),
        reason: "steps × batch overflows".into(),
    })?;
    let flat = g.reshape(seq, &[tb, input])?;
    let proj = g.matmul_t(flat, w.w_ih, false, true)?;
    // The GRU's b_hn sits inside r ⊙ (…), so only b_ih folds into its projection.
    let hh_bias = if cell == Cell::Gru { w.b_hh } else { None };
    let folded = match (w.b_ih, w.b_hh, cell) {
        (Some(bi), Some(bh), Cell::Lstm | Cell::Rnn(_)) => Some(g.add(bi, bh)?),
        (Some(bi), _, _) => Some(bi),
        (None, Some(bh), Cell::Lstm | Cell::Rnn(_)) => Some(bh),
        (None, _, _) => None,
    };
    let proj = match folded {
        Some(b) => g.add(proj, b)?,
        None => proj,
    };
    let proj = g.reshape(proj, &[steps, batch, rows])?;
    let one = g.full(&[], g.ty_for(cell.name(), seq)?.dtype, 1.0)?;
    let (mut h, mut c) = (h_init, c_init);
    let mut per_step = vec![h_init; steps];
    for s in 0..steps {
        let t = if reverse { steps - 1 - s } else { s };
        let xt = g.narrow(proj, 0, t, 1)?;
        let xt = g.reshape(xt, &[batch, rows])?;
        let mut hh = g.matmul_t(h, w.w_hh, false, true)?;
        if let Some(b) = hh_bias {
            hh = g.add(hh, b)?;
        }
        match (cell, c) {
            (Cell::Lstm, Some(c_prev)) => {
                let gates = g.add(xt, hh)?;
                let i = gate(g, gates, 0, hidden, Graph::sigmoid)?;
                let f = gate(g, gates, 1, hidden, Graph::sigmoid)?;
                let gg = gate(g, gates, 2, hidden, Graph::tanh)?;
                let o = gate(g, gates, 3, hidden, Graph::sigmoid)?;
                let fc = g.mul(f, c_prev)?;
                let ig = g.mul(i, gg)?;
                let c_new = g.add(fc, ig)?;
                let tc = g.tanh(c_new)?;
                h = g.mul(o, tc)?;
                c = Some(c_new);
            }
            (Cell::Gru, _) => {
                let xr = g.narrow(xt, 1, 0, hidden)?;
                let hr = g.narrow(hh, 1, 0, hidden)?;
                let r = g.add(xr, hr)?;
                let r = g.sigmoid(r)?;
                let xz = g.narrow(xt, 1, hidden, hidden)?;
                let hz = g.narrow(hh, 1, hidden, hidden)?;
                let z = g.add(xz, hz)?;
                let z = g.sigmoid(z)?;
                let xn = g.narrow(xt, 1, 2 * hidden, hidden)?;
                let hn = g.narrow(hh, 1, 2 * hidden, hidden)?;
                let rn = g.mul(r, hn)?;
                let n = g.add(xn, rn)?;
                let n = g.tanh(n)?;
                let keep = g.sub(one, z)?;
                let a = g.mul(keep, n)?;
                let b = g.mul(z, h)?;
                h = g.add(a, b)?;
            }
            (Cell::Rnn(act), _) => {
                let pre = g.add(xt, hh)?;
                h = match act {
                    RnnActivation::Tanh => g.tanh(pre)?,
                    RnnActivation::Relu => g.relu(pre)?,
                };
            }
            (Cell::Lstm, None) => {
                return Err(IrError::Arity { op: "lstm", expected: "a cell state".into(), got: 0 })
            }
        }
        per_step[t] = g.reshape(h, &[1, batch, hidden])?;
    }
    let seq = if steps == 1 { per_step[0] } else { g.concat(&per_step, 0)? };
    Ok(DirOut { seq, h, c })
}

/// Gate `k` ([B, H] at columns k·H…) of `gates` [B, G·H], through `act`.
fn gate(
    g: &mut Graph,
    gates: NodeId,
    k: usize,
    hidden: usize,
    act: fn(&mut Graph, NodeId) -> Result<NodeId, IrError>,
) -> Result<NodeId, IrError> {
    let part = g.narrow(gates, 1, k * hidden, hidden)?;
    act(g, part)
}
