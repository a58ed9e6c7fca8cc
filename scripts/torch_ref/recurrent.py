"""torch references for the recurrent layers (crates/rlx-parity/src/cases/recurrent.rs): LSTM,
GRU and RNN (tanh, relu) cases and the LSTM benchmark workload. Each case builds the torch
module (nn.LSTM / nn.GRU / nn.RNN) from the sizes of the dumped params, copies every parameter
by its PyTorch name (weight_ih_l0_reverse, ...) and runs it on the dumped x, h0 and c0. A bias
the case leaves out (bias_ih only or bias_hh only) is a zero parameter in torch. batch_first is
restated from the case table; everything else follows from the params present."""
import torch
from torch import nn

REFS = {}
TOL = {}
_MODULES = {}

# case name -> (module kind, batch_first)
CASES = {
    "lstm_1layer": ("lstm", False),
    "lstm_2layer_bidir_h0_c0": ("lstm", False),
    "lstm_batch_first_no_bias": ("lstm", True),
    "lstm_single_step": ("lstm", False),
    "gru_1layer_h0": ("gru", False),
    "gru_2layer_bidir_batch_first": ("gru", True),
    "gru_hh_bias_only": ("gru", False),
    "rnn_tanh_2layer": ("rnn_tanh", False),
    "rnn_tanh_bidir_h0": ("rnn_tanh", False),
    "rnn_relu_1layer": ("rnn_relu", False),
    "rnn_relu_2layer_bidir_batch_first_h0": ("rnn_relu", True),
    "rnn_relu_ih_bias_only": ("rnn_relu", False),
    "bench_lstm_2layer_bidir_h512_t128_b16": ("lstm", False),
}


def module(name, kind, batch_first, t):
    """The torch module of a case with the dumped parameters (built once per case and data)."""
    key = (name, id(t["weight_ih_l0"]))
    if key in _MODULES:
        return _MODULES[key]
    layers = sum(1 for k in t if k.startswith("weight_ih_l") and not k.endswith("_reverse"))
    bidir = "weight_ih_l0_reverse" in t
    hidden = t["weight_hh_l0"].shape[1]
    inp = t["weight_ih_l0"].shape[1]
    bias = "bias_ih_l0" in t or "bias_hh_l0" in t
    args = dict(num_layers=layers, bias=bias, batch_first=batch_first, bidirectional=bidir)
    if kind == "lstm":
        m = nn.LSTM(inp, hidden, **args)
    elif kind == "gru":
        m = nn.GRU(inp, hidden, **args)
    else:
        m = nn.RNN(inp, hidden, nonlinearity=kind.split("_")[1], **args)
    m = m.to(t["x"].device).eval()
    with torch.no_grad():
        for pname, p in m.named_parameters():
            if pname in t:
                p.copy_(t[pname])
            elif pname.startswith("bias_"):
                p.zero_()
            else:
                raise KeyError(f"{name}: no dumped parameter {pname}")
    _MODULES.clear()
    _MODULES[key] = m
    return m


def run(name, kind, batch_first, t):
    m = module(name, kind, batch_first, t)
    if kind == "lstm":
        state = (t["h0"], t["c0"]) if "h0" in t else None
        out, (h, c) = m(t["x"], state)
        return [out, h, c]
    out, h = m(t["x"], t.get("h0"))
    return [out, h]


for case, (kind, bf) in CASES.items():
    REFS[case] = lambda t, case=case, kind=kind, bf=bf: run(case, kind, bf, t)
