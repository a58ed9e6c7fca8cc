//! Recurrent layers unrolled over time: LSTM, GRU and RNN (tanh and relu) in PyTorch's weight
//! layout, one and two layers, one and two directions, time- and batch-major, with and
//! without biases and initial states. Sequences are short (the graph grows with T) and sizes
//! are not multiples of anything. Every output is checked: output, h_n and (LSTM) c_n. Params
//! carry PyTorch's names (`weight_ih_l0_reverse`, …) so the torch reference copies them by
//! name into `nn.LSTM`/`nn.GRU`/`nn.RNN`.

use crate::{Case, CaseCtx};
use rlx_ir::{IrError, NodeId};
use rlx_nn::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Lstm,
    Gru,
    RnnTanh,
    RnnRelu,
}

impl Kind {
    fn gates(self) -> usize {
        match self {
            Kind::Lstm => 4,
            Kind::Gru => 3,
            Kind::RnnTanh | Kind::RnnRelu => 1,
        }
    }

    fn family(self) -> &'static str {
        match self {
            Kind::Lstm => "lstm",
            Kind::Gru => "gru",
            Kind::RnnTanh => "rnn_tanh",
            Kind::RnnRelu => "rnn_relu",
        }
    }
}

/// One recurrent case.
#[derive(Clone, Copy, Debug)]
struct Rec {
    kind: Kind,
    steps: usize,
    batch: usize,
    input: usize,
    hidden: usize,
    layers: usize,
    bidirectional: bool,
    batch_first: bool,
    /// (bias_ih, bias_hh) present.
    bias: (bool, bool),
    /// h0 (and c0 for LSTM) given.
    initial: bool,
}

const BASE: Rec = Rec {
    kind: Kind::Lstm,
    steps: 5,
    batch: 3,
    input: 7,
    hidden: 6,
    layers: 1,
    bidirectional: false,
    batch_first: false,
    bias: (true, true),
    initial: false,
};

pub(super) fn cases(out: &mut Vec<Case>) {
    use Kind::*;
    let two_bidir = Rec { steps: 4, batch: 2, input: 5, hidden: 4, layers: 2, bidirectional: true, ..BASE };
    let table: [(&str, Rec); 12] = [
        ("1layer", BASE),
        ("2layer_bidir_h0_c0", Rec { initial: true, ..two_bidir }),
        ("batch_first_no_bias", Rec { batch_first: true, bias: (false, false), steps: 3, hidden: 5, ..BASE }),
        ("single_step", Rec { steps: 1, initial: true, ..BASE }),
        ("1layer_h0", Rec { kind: Gru, batch: 2, input: 6, hidden: 5, initial: true, ..BASE }),
        ("2layer_bidir_batch_first", Rec { kind: Gru, batch_first: true, ..two_bidir }),
        // Only bias_hh: its n part must stay inside r ⊙ (W_hn h + b_hn).
        ("hh_bias_only", Rec { kind: Gru, bias: (false, true), steps: 4, ..BASE }),
        ("2layer", Rec { kind: RnnTanh, steps: 6, input: 4, hidden: 5, layers: 2, ..BASE }),
        (
            "bidir_h0",
            Rec { kind: RnnTanh, steps: 4, batch: 2, input: 3, bidirectional: true, initial: true, ..BASE },
        ),
        ("1layer", Rec { kind: RnnRelu, input: 4, hidden: 5, ..BASE }),
        ("2layer_bidir_batch_first_h0", Rec { kind: RnnRelu, initial: true, batch_first: true, ..two_bidir }),
        ("ih_bias_only", Rec { kind: RnnRelu, bias: (true, false), steps: 3, ..BASE }),
    ];
    for (tag, r) in table {
        out.push(Case::new(format!("{}_{tag}", r.kind.family()), move |c| build(c, &r)));
    }
}

/// The heaviest realistic workload: a 2-layer bidirectional LSTM, hidden 512, over 128 steps
/// at batch 16 (a speech or OCR encoder).
pub(super) fn bench_cases(out: &mut Vec<Case>) {
    let r = Rec {
        kind: Kind::Lstm,
        steps: 128,
        batch: 16,
        input: 512,
        hidden: 512,
        layers: 2,
        bidirectional: true,
        batch_first: false,
        bias: (true, true),
        initial: false,
    };
    out.push(Case::new("bench_lstm_2layer_bidir_h512_t128_b16", move |c| build(c, &r)));
}

fn build(c: &mut CaseCtx, r: &Rec) -> Result<Vec<NodeId>, IrError> {
    let x_dims = if r.batch_first { [r.batch, r.steps, r.input] } else { [r.steps, r.batch, r.input] };
    let x = c.input_f32("x", &x_dims, -1.0, 1.0)?;
    let dirs = 1 + usize::from(r.bidirectional);
    // PyTorch's init range, U(−1/√H, 1/√H).
    let k = 1.0 / (r.hidden as f32).sqrt();
    let rows = r.kind.gates() * r.hidden;
    let mut weights = Vec::with_capacity(r.layers * dirs);
    for layer in 0..r.layers {
        for dir in 0..dirs {
            let sfx = format!("l{layer}{}", if dir == 1 { "_reverse" } else { "" });
            let in_size = if layer == 0 { r.input } else { dirs * r.hidden };
            let w_ih = c.param_f32(&format!("weight_ih_{sfx}"), &[rows, in_size], -k, k)?;
            let w_hh = c.param_f32(&format!("weight_hh_{sfx}"), &[rows, r.hidden], -k, k)?;
            let b_ih =
                if r.bias.0 { Some(c.param_f32(&format!("bias_ih_{sfx}"), &[rows], -k, k)?) } else { None };
            let b_hh =
                if r.bias.1 { Some(c.param_f32(&format!("bias_hh_{sfx}"), &[rows], -k, k)?) } else { None };
            weights.push(RnnWeights { w_ih, w_hh, b_ih, b_hh });
        }
    }
    let state = [r.layers * dirs, r.batch, r.hidden];
    let h0 = if r.initial { Some(c.input_f32("h0", &state, -0.5, 0.5)?) } else { None };
    let config =
        RnnConfig { num_layers: r.layers, bidirectional: r.bidirectional, batch_first: r.batch_first };
    let y = match r.kind {
        Kind::Lstm => {
            let c0 = if r.initial { Some(c.input_f32("c0", &state, -0.5, 0.5)?) } else { None };
            c.lstm(x, config, &weights, h0, c0)?
        }
        Kind::Gru => c.gru(x, config, &weights, h0)?,
        Kind::RnnTanh => c.rnn(x, config, &weights, h0, RnnActivation::Tanh)?,
        Kind::RnnRelu => c.rnn(x, config, &weights, h0, RnnActivation::Relu)?,
    };
    let mut outs = vec![y.output, y.h_n];
    outs.extend(y.c_n);
    Ok(outs)
}
