//! Human-readable text form of a graph: a `graph "name"` header, one line per node
//! (`%3 = matmul(%1, %2) transpose_b=true : f32[2, 3]`) and a final `outputs:` line.

use crate::{
    AttnLayout, EwStep, Graph, MaskKind, NormKind, Op, PoolKind, RopeStyle, Tensor, TensorData, TopKOutput,
};
use std::fmt::{self, Write};

/// Elements shown in a constant's preview.
const PREVIEW: usize = 4;

/// The text form of `g` (also what `Display for Graph` prints).
pub fn dump(g: &Graph) -> String {
    let mut s = format!("graph \"{}\"\n", g.name());
    for (i, n) in g.nodes().iter().enumerate() {
        let _ = write!(s, "%{i} = {}", n.op.name());
        match &n.op {
            Op::Input { name } | Op::Param { name } | Op::State { name } => {
                let _ = write!(s, " \"{name}\"");
            }
            Op::Constant(t) => {
                let _ = write!(s, " {}", preview(t));
            }
            _ => {
                let ins = n.inputs.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
                let _ = write!(s, "({ins})");
            }
        }
        let a = attrs(&n.op);
        if !a.is_empty() {
            s.push(' ');
            s.push_str(&a);
        }
        let _ = writeln!(s, " : {}", n.ty);
    }
    let outs = g.outputs().iter().map(|o| o.to_string()).collect::<Vec<_>>().join(", ");
    let _ = writeln!(s, "outputs: {outs}");
    s
}

impl fmt::Display for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&dump(self))
    }
}

/// `[1, 2, 3, 4, …]`: the first few elements of a constant.
fn preview(t: &Tensor) -> String {
    fn list<T: fmt::Debug>(v: &[T]) -> String {
        let mut parts = v.iter().take(PREVIEW).map(|x| format!("{x:?}")).collect::<Vec<_>>();
        if v.len() > PREVIEW {
            parts.push("…".into());
        }
        format!("[{}]", parts.join(", "))
    }
    match t.data() {
        TensorData::F32(v) => list(v),
        TensorData::F16(v) => list(&v.iter().map(|x| x.to_f32()).collect::<Vec<_>>()),
        TensorData::BF16(v) => list(&v.iter().map(|x| x.to_f32()).collect::<Vec<_>>()),
        TensorData::I32(v) => list(v),
        TensorData::U32(v) => list(v),
        TensorData::U8(v) => list(v),
        TensorData::Bool(v) => list(v),
    }
}

/// The op's attributes as `key=value` pairs (defaults of boolean flags omitted).
fn attrs(op: &Op) -> String {
    let mut a: Vec<String> = Vec::new();
    match op {
        Op::Cast(d) => a.push(format!("to={d}")),
        Op::Reduce { axes, keepdim, .. } => a.push(format!("axes={axes:?} keepdim={keepdim}")),
        Op::ArgReduce { axis, keepdim, .. } => a.push(format!("axis={axis} keepdim={keepdim}")),
        Op::Cumsum { axis } | Op::Concat { axis } | Op::Gather { axis } | Op::WriteRows { axis } => {
            a.push(format!("axis={axis}"))
        }
        Op::ScatterAdd { axis, len } => a.push(format!("axis={axis} len={len}")),
        Op::TopK { k, axis, largest, output } => {
            let out = match output {
                TopKOutput::Values => "values",
                TopKOutput::Indices => "indices",
            };
            a.push(format!("k={k} axis={axis} largest={largest} output={out}"));
        }
        Op::SelectiveScan { delta_softplus, output } => {
            a.push(format!("delta_softplus={delta_softplus} output={}", output.name()))
        }
        Op::GatedDeltaRule { scale, output } => a.push(format!("scale={scale:?} output={}", output.name())),
        Op::Reshape(s) | Op::Expand(s) => a.push(format!("shape={s}")),
        Op::Permute(p) => a.push(format!("perm={p:?}")),
        Op::Slice { axis, start, end, step } => {
            a.push(format!("axis={axis} start={start} end={end} step={step}"))
        }
        Op::Pad { pads, value } => a.push(format!("pads={pads:?} value={value:?}")),
        Op::Reverse { axes } => a.push(format!("axes={axes:?}")),
        Op::MatMul { transpose_a, transpose_b } => transposes(&mut a, *transpose_a, *transpose_b),
        Op::QuantMatMul { quant } | Op::QuantGather { quant } | Op::QuantGroupedMatMul { quant } => {
            a.push(format!("quant={quant}"))
        }
        Op::FusedMatMul { transpose_a, transpose_b, bias, activation } => {
            transposes(&mut a, *transpose_a, *transpose_b);
            if *bias {
                a.push("bias=true".into());
            }
            if let Some(u) = activation {
                a.push(format!("activation={}", u.name()));
            }
        }
        Op::LayerNorm { eps } | Op::RmsNorm { eps } => a.push(format!("eps={eps:?}")),
        Op::AddNorm { norm, eps } => {
            let n = match norm {
                NormKind::LayerNorm => "layer_norm",
                NormKind::RmsNorm => "rms_norm",
            };
            a.push(format!("norm={n} eps={eps:?}"));
        }
        Op::Attention(spec) | Op::AttentionGrad { spec, .. } => {
            if let Op::AttentionGrad { part, .. } = op {
                a.push(format!("part={}", part.name()));
            }
            a.push(format!("layout={} mask={}", layout(spec.layout), mask(spec.mask)));
            if let Some(s) = spec.scale {
                a.push(format!("scale={s:?}"));
            }
            if let Some(c) = spec.softcap {
                a.push(format!("softcap={c:?}"));
            }
            if spec.kv_lengths {
                a.push("kv_lengths=true".into());
            }
        }
        Op::Rope { style, layout: l, rotary_dims } => {
            let st = match style {
                RopeStyle::NeoX => "neox",
                RopeStyle::GptJ => "gptj",
            };
            a.push(format!("style={st} layout={} rotary_dims={rotary_dims}", layout(*l)));
        }
        Op::Conv2d { stride, padding, dilation, groups } => {
            a.push(format!("stride={stride:?} padding={padding:?} dilation={dilation:?} groups={groups}"))
        }
        Op::Pool2d { kind, kernel, stride, padding } => {
            let k = match kind {
                PoolKind::Max => "max",
                PoolKind::Avg => "avg",
            };
            a.push(format!("kind={k} kernel={kernel:?} stride={stride:?} padding={padding:?}"));
        }
        Op::Fft { inverse } => a.push(format!("inverse={inverse}")),
        Op::Random { dist, shape } => a.push(format!("dist={} shape={shape}", dist.name())),
        Op::Custom(call) => a.push(format!("name={}", call.op().name())),
        Op::FusedElementwise(p) => {
            let steps = p
                .steps
                .iter()
                .map(|s| match s {
                    EwStep::Input(i) => format!("in{i}"),
                    EwStep::Scalar(x) => format!("{x:?}"),
                    EwStep::Unary(u, r) => format!("{}(r{r})", u.name()),
                    EwStep::Binary(b, x, y) => format!("{}(r{x}, r{y})", b.name()),
                    EwStep::Where(c, x, y) => format!("where(r{c}, r{x}, r{y})"),
                })
                .collect::<Vec<_>>();
            a.push(format!("program=[{}]", steps.join(", ")));
        }
        _ => {}
    }
    a.join(" ")
}

fn transposes(a: &mut Vec<String>, ta: bool, tb: bool) {
    if ta {
        a.push("transpose_a=true".into());
    }
    if tb {
        a.push("transpose_b=true".into());
    }
}

fn layout(l: AttnLayout) -> &'static str {
    match l {
        AttnLayout::Bshd => "bshd",
        AttnLayout::Bhsd => "bhsd",
    }
}

fn mask(m: MaskKind) -> String {
    match m {
        MaskKind::None => "none".into(),
        MaskKind::Causal => "causal".into(),
        MaskKind::SlidingWindow(w) => format!("sliding_window({w})"),
        MaskKind::Padding => "padding".into(),
        MaskKind::Bias => "bias".into(),
    }
}
