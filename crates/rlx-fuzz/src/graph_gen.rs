//! Decodes fuzz input into a sequence of `Graph` builder calls. Every op family of the IR is
//! reachable (shape ops, matmul, norms, attention, conv, pooling, quantized ops, random, state
//! writes, sampling, composites), plus raw [`Graph::push`] of ops with arbitrary attributes,
//! including the fused forms only passes create. Builder errors are expected and ignored: the
//! point is that no input makes a builder, inference or the verifier panic.

use crate::reader::{clamp_elems, Reader, MAX_DIM};
use rlx_ir::{
    ArgReduceOp, AttentionSpec, AttnLayout, BinaryOp, CompareOp, DType, EwProgram, EwStep, Graph, IrError,
    MaskKind, NodeId, NormKind, Op, QuantType, RandomDist, ReduceOp, RopeStyle, Shape, Tensor, TopKOutput,
    UnaryOp,
};
use rlx_nn::prelude::*;

/// Most builder calls one input makes (keeps an execution fast).
pub const MAX_CALLS: usize = 48;

/// Number of distinct builder calls [`call`] decodes.
const CALLS: usize = 40;

/// A graph built from `data`: the builder calls it decodes, then outputs chosen from the nodes
/// made. `None` when no node was made or the outputs were refused.
pub fn build(data: &[u8]) -> Option<Graph> {
    let mut r = Reader::new(data);
    let mut b = Builder { g: Graph::new("fuzz"), made: Vec::new(), names: 0 };
    for _ in 0..MAX_CALLS {
        if r.is_empty() {
            break;
        }
        // Errors are the builders' answer to bad input; only panics are bugs.
        if let Ok(ids) = b.call(&mut r) {
            b.made.extend(ids);
        }
    }
    let last = *b.made.last()?;
    let mut outputs = vec![last];
    for _ in 0..r.below(3) {
        outputs.push(b.operand(&mut r));
    }
    b.g.set_outputs(&outputs).ok()?;
    Some(b.g)
}

struct Builder {
    g: Graph,
    made: Vec<NodeId>,
    names: usize,
}

fn dtype(r: &mut Reader) -> DType {
    r.pick(&DType::ALL).unwrap_or(DType::F32)
}

fn quant(r: &mut Reader) -> QuantType {
    r.pick(&QuantType::ALL).unwrap_or(QuantType::Q8_0)
}

fn layout(r: &mut Reader) -> AttnLayout {
    if r.bool() {
        AttnLayout::Bshd
    } else {
        AttnLayout::Bhsd
    }
}

fn pair(r: &mut Reader) -> [usize; 2] {
    [r.size(), r.size()]
}

fn axes(r: &mut Reader) -> Vec<isize> {
    (0..r.below(4)).map(|_| r.axis()).collect()
}

fn opt_f32(r: &mut Reader) -> Option<f32> {
    r.bool().then(|| r.f32())
}

fn attention_spec(r: &mut Reader) -> AttentionSpec {
    let mask = match r.below(5) {
        0 => MaskKind::None,
        1 => MaskKind::Causal,
        2 => MaskKind::SlidingWindow(r.size()),
        3 => MaskKind::Padding,
        _ => MaskKind::Bias,
    };
    AttentionSpec { layout: layout(r), mask, scale: opt_f32(r), softcap: opt_f32(r), kv_lengths: r.bool() }
}

/// A fused elementwise program with arbitrary register references (checked by inference).
fn ew_program(r: &mut Reader) -> EwProgram {
    let steps = (0..r.below(6))
        .map(|_| match r.below(4) {
            0 => EwStep::Input(r.below(4)),
            1 => EwStep::Scalar(r.f32()),
            2 => EwStep::Unary(r.pick(&UnaryOp::ALL).unwrap_or(UnaryOp::Relu), r.below(6)),
            _ => EwStep::Binary(r.pick(&BinaryOp::ALL).unwrap_or(BinaryOp::Add), r.below(6), r.below(6)),
        })
        .collect();
    EwProgram { steps }
}

impl Builder {
    /// An operand: mostly a node made earlier, sometimes an id that does not exist.
    fn operand(&mut self, r: &mut Reader) -> NodeId {
        let b = r.u8();
        match self.made.get(usize::from(b) % self.made.len().max(1)) {
            Some(&id) if b != 255 => id,
            _ => NodeId(u32::from(r.u16())),
        }
    }

    fn opt_operand(&mut self, r: &mut Reader) -> Option<NodeId> {
        r.bool().then(|| self.operand(r))
    }

    /// A leaf name: fresh most of the time, a repeat sometimes (duplicate names are errors).
    fn name(&mut self, r: &mut Reader, prefix: &str) -> String {
        let n = if r.below(8) == 0 { r.below(4) } else { self.names };
        self.names += 1;
        format!("{prefix}{n}")
    }

    /// Target dims for `x`'s reshape: its element count split at a divisor, or any dims.
    fn reshape_dims(&self, r: &mut Reader, x: NodeId) -> Vec<usize> {
        let n = self.g.ty(x).map(|t| t.shape.numel()).unwrap_or(0);
        match r.below(3) {
            0 => vec![n],
            1 => {
                let a = (1..=MAX_DIM).filter(|&d| n.is_multiple_of(d)).nth(r.below(8)).unwrap_or(1);
                vec![a, n / a.max(1)]
            }
            _ => r.dims(),
        }
    }

    /// A constant of `dims`: filled with one value, or with values from the input.
    fn constant(&mut self, r: &mut Reader) -> Result<NodeId, IrError> {
        let mut dims = r.dims();
        dims.truncate(2);
        clamp_elems(&mut dims);
        let n: usize = dims.iter().product();
        let dt = dtype(r);
        if r.bool() {
            let v = f64::from(r.f32());
            return self.g.full(&dims, dt, v);
        }
        let vals: Vec<f64> = (0..n).map(|_| f64::from(r.u8() as i8) / 4.0).collect();
        self.g.constant(Tensor::from_f64(dims, dt, &vals)?)
    }

    /// One builder call; the ids of the nodes it returns.
    fn call(&mut self, r: &mut Reader) -> Result<Vec<NodeId>, IrError> {
        let one = |x: Result<NodeId, IrError>| x.map(|x| vec![x]);
        match r.below(CALLS) {
            0 => {
                let name = self.name(r, "x");
                let dims = r.dims();
                one(self.g.input(&name, &dims, dtype(r)))
            }
            1 => {
                let name = self.name(r, "w");
                let dims = r.dims();
                one(self.g.param(&name, &dims, dtype(r)))
            }
            2 => one(self.constant(r)),
            3 => {
                let x = self.operand(r);
                one(self.g.unary(r.pick(&UnaryOp::ALL).unwrap_or(UnaryOp::Neg), x))
            }
            4 => {
                let (a, b) = (self.operand(r), self.operand(r));
                one(self.g.binary(r.pick(&BinaryOp::ALL).unwrap_or(BinaryOp::Add), a, b))
            }
            5 => {
                let (a, b) = (self.operand(r), self.operand(r));
                one(self.g.compare(r.pick(&CompareOp::ALL).unwrap_or(CompareOp::Eq), a, b))
            }
            6 => {
                let (c, a, b) = (self.operand(r), self.operand(r), self.operand(r));
                one(self.g.where_(c, a, b))
            }
            7 => {
                let x = self.operand(r);
                one(self.g.cast(x, dtype(r)))
            }
            8 => {
                let x = self.operand(r);
                let op =
                    [ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod][r.below(5)];
                let axes = axes(r);
                one(self.g.reduce(op, x, &axes, r.bool()))
            }
            9 => {
                let x = self.operand(r);
                let (axis, keep) = (r.axis(), r.bool());
                one(if r.bool() { self.g.argmax(x, axis, keep) } else { self.g.argmin(x, axis, keep) })
            }
            10 => {
                let x = self.operand(r);
                one(self.g.cumsum(x, r.axis()))
            }
            11 => {
                let x = self.operand(r);
                let (k, axis, largest) = (r.size(), r.axis(), r.bool());
                self.g.topk(x, k, axis, largest).map(|(v, i)| vec![v, i])
            }
            12 => {
                let x = self.operand(r);
                let dims = self.reshape_dims(r, x);
                one(self.g.reshape(x, &dims))
            }
            13 => {
                let x = self.operand(r);
                let perm: Vec<usize> = (0..r.below(5)).map(|_| r.below(5)).collect();
                one(if r.bool() { self.g.permute(x, &perm) } else { self.g.transpose(x, r.axis(), r.axis()) })
            }
            14 => {
                let x = self.operand(r);
                let (axis, start, end, step) = (r.axis(), r.size(), r.size(), r.size());
                one(if r.bool() {
                    self.g.slice(x, axis, start, end, step)
                } else {
                    self.g.narrow(x, axis, start, end)
                })
            }
            15 => {
                let xs: Vec<NodeId> = (0..r.below(4)).map(|_| self.operand(r)).collect();
                one(self.g.concat(&xs, r.axis()))
            }
            16 => {
                let x = self.operand(r);
                let dims = r.dims();
                one(self.g.expand(x, &dims))
            }
            17 => {
                let (d, i) = (self.operand(r), self.operand(r));
                one(match r.below(3) {
                    0 => self.g.gather(d, i, r.axis()),
                    1 => self.g.index_select(d, r.axis(), i),
                    _ => self.g.embedding(d, i),
                })
            }
            18 => {
                let x = self.operand(r);
                let pads: Vec<(usize, usize)> = (0..r.below(5)).map(|_| (r.below(4), r.below(4))).collect();
                one(self.g.pad(x, &pads, f64::from(r.f32())))
            }
            19 => {
                let x = self.operand(r);
                let axes = axes(r);
                one(self.g.reverse(x, &axes))
            }
            20 => {
                let (a, b) = (self.operand(r), self.operand(r));
                one(self.g.matmul_t(a, b, r.bool(), r.bool()))
            }
            21 => {
                let x = self.operand(r);
                let (gamma, beta) = (self.opt_operand(r), self.opt_operand(r));
                let (axis, eps) = (r.axis(), r.f32());
                one(if r.bool() {
                    self.g.layer_norm(x, gamma, beta, axis, eps)
                } else {
                    self.g.rms_norm(x, gamma, axis, eps)
                })
            }
            22 => {
                let x = self.operand(r);
                let axis = r.axis();
                one(if r.bool() { self.g.softmax(x, axis) } else { self.g.log_softmax(x, axis) })
            }
            23 => {
                let (q, k, v) = (self.operand(r), self.operand(r), self.operand(r));
                let mask = self.opt_operand(r);
                let spec = attention_spec(r);
                one(if r.bool() {
                    let lengths = self.operand(r);
                    self.g.attention_with_lengths(q, k, v, mask, lengths, spec)
                } else {
                    self.g.attention(q, k, v, mask, spec)
                })
            }
            24 => {
                let (x, cos, sin) = (self.operand(r), self.operand(r), self.operand(r));
                let style = if r.bool() { RopeStyle::NeoX } else { RopeStyle::GptJ };
                one(self.g.rope(x, cos, sin, style, layout(r), r.size()))
            }
            25 => {
                let (x, w, bias) = (self.operand(r), self.operand(r), self.opt_operand(r));
                one(self.g.conv2d(x, w, bias, pair(r), pair(r), pair(r), r.size()))
            }
            26 => {
                let x = self.operand(r);
                let (k, s, p) = (pair(r), pair(r), pair(r));
                one(match r.below(3) {
                    0 => self.g.max_pool2d(x, k, s, p),
                    1 => self.g.avg_pool2d(x, k, s, p),
                    _ => self.g.upsample_nearest2x(x),
                })
            }
            27 => {
                let (a, b) = (self.operand(r), self.operand(r));
                one(if r.bool() {
                    self.g.quant_matmul(a, b, quant(r))
                } else {
                    self.g.quant_gather(a, b, quant(r))
                })
            }
            28 => {
                let (x, w, ids) = (self.operand(r), self.operand(r), self.operand(r));
                one(self.g.grouped_matmul(x, w, ids))
            }
            29 => {
                let key = if r.bool() {
                    let name = self.name(r, "key");
                    self.g.rng_key(&name)?
                } else {
                    self.operand(r)
                };
                let dist = if r.bool() { RandomDist::Uniform } else { RandomDist::Normal };
                let dims = r.dims();
                self.g.random(key, dist, &dims).map(|x| vec![key, x])
            }
            30 => {
                let name = self.name(r, "s");
                let dims = r.dims();
                let state = self.g.state(&name, &dims, dtype(r))?;
                let (rows, offset) = (self.operand(r), self.operand(r));
                self.g.write_rows(state, rows, offset, r.axis()).map(|w| vec![w])
            }
            31 => {
                let (x, w, bias) = (self.operand(r), self.operand(r), self.opt_operand(r));
                one(if r.bool() { self.g.linear(x, w, bias) } else { self.g.fma(x, w, bias.unwrap_or(x)) })
            }
            32 => {
                let x = self.operand(r);
                let (gamma, beta) = (self.opt_operand(r), self.opt_operand(r));
                one(match r.below(3) {
                    0 => self.g.group_norm(x, r.size(), gamma, beta, r.f32()),
                    1 => self.g.layer_norm2d(x, gamma, beta, r.f32()),
                    _ => {
                        let (mean, var) = (self.operand(r), self.operand(r));
                        self.g.batch_norm(x, mean, var, gamma, beta, r.f32())
                    }
                })
            }
            33 => {
                let (x, w, bias) = (self.operand(r), self.operand(r), self.opt_operand(r));
                let (s, p, d, groups) = (r.size(), r.size(), r.size(), r.size());
                one(match r.below(3) {
                    0 => self.g.conv1d(x, w, bias, s, p, d, groups),
                    1 => self.g.max_pool1d(x, s, p, d),
                    _ => self.g.avg_pool1d(x, s, p, d),
                })
            }
            34 => {
                let (x, router, gate_up, down) =
                    (self.operand(r), self.operand(r), self.operand(r), self.operand(r));
                one(self.g.moe_swiglu(x, router, gate_up, down, r.size(), r.bool()))
            }
            35 => {
                let (logits, key, prev) = (self.operand(r), self.operand(r), self.opt_operand(r));
                let spec = SamplingSpec {
                    temperature: r.f32(),
                    top_k: r.bool().then(|| r.size()),
                    top_p: r.f32(),
                    repetition_penalty: r.f32(),
                };
                one(self.g.sample_tokens(logits, key, &spec, prev))
            }
            // Spectral ops: native radix-2, four-step and Bluestein builds by row length. irfft's
            // output length stays ≤ 2·MAX_DIM like the decoded dims (its twiddle tables have n
            // rows).
            37 => {
                let x = self.operand(r);
                one(match r.below(3) {
                    0 => self.g.fft(x, r.bool()),
                    1 => self.g.rfft(x),
                    _ => {
                        let n = r.bool().then(|| r.below(2 * MAX_DIM + 1));
                        self.g.irfft(x, n)
                    }
                })
            }
            // LoRA matmul and two-operand einsum (through dot_general).
            38 => {
                let (x, w, a, b) = (self.operand(r), self.operand(r), self.operand(r), self.operand(r));
                if r.bool() {
                    return one(self.g.lora_matmul(x, w, a, b, r.f32()));
                }
                const SPECS: [&str; 6] =
                    ["ij,jk->ik", "bij,bjk->bik", "ij,kj->ik", "bhqd,bhkd->bhqk", "ij,ij->i", "i,j"];
                let spec = r.pick(&SPECS).unwrap_or("ij,jk->ik");
                one(self.g.einsum(spec, &[x, w]))
            }
            _ => self.raw_push(r).map(|x| vec![x]),
        }
    }

    /// [`Graph::push`] of an op with attributes straight from the input, including the fused
    /// forms users never build: inference must refuse every bad attribute.
    fn raw_push(&mut self, r: &mut Reader) -> Result<NodeId, IrError> {
        let op = match r.below(12) {
            0 => Op::Slice { axis: r.size(), start: r.size(), end: r.size(), step: r.size() },
            1 => Op::Pad { pads: (0..r.below(5)).map(|_| (r.size(), r.size())).collect(), value: 0.0 },
            2 => Op::Reshape(Shape(r.dims())),
            3 => Op::Expand(Shape((0..r.below(5)).map(|_| r.size()).collect())),
            4 => Op::TopK {
                k: r.size(),
                axis: r.size(),
                largest: r.bool(),
                output: if r.bool() { TopKOutput::Values } else { TopKOutput::Indices },
            },
            5 => Op::Reduce {
                op: ReduceOp::Sum,
                axes: (0..r.below(4)).map(|_| r.size()).collect(),
                keepdim: r.bool(),
            },
            6 => Op::ArgReduce { op: ArgReduceOp::ArgMax, axis: r.size(), keepdim: r.bool() },
            7 => Op::FusedMatMul {
                transpose_a: r.bool(),
                transpose_b: r.bool(),
                bias: r.bool(),
                activation: r.bool().then(|| r.pick(&UnaryOp::ALL).unwrap_or(UnaryOp::Gelu)),
            },
            8 => Op::AddNorm {
                norm: if r.bool() { NormKind::LayerNorm } else { NormKind::RmsNorm },
                eps: r.f32(),
            },
            9 => Op::FusedElementwise(ew_program(r)),
            10 => Op::Random {
                dist: RandomDist::Uniform,
                shape: Shape((0..r.below(5)).map(|_| r.size()).collect()),
            },
            _ => Op::Permute((0..r.below(5)).map(|_| r.size()).collect()),
        };
        let inputs: Vec<NodeId> = (0..r.below(5)).map(|_| self.operand(r)).collect();
        self.g.push(op, &inputs)
    }
}
