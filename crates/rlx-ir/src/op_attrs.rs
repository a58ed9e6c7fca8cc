//! The attributes ops carry: the elementwise, comparison and reduction functions, attention's
//! spec and mask, layouts, and the fused elementwise program. [`crate::Op`] holds them.

/// Elementwise functions of one operand. Output dtype = input dtype (floats only, except `Neg`
/// and `Abs`, which also take I32).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// GELU, erf form: x·Φ(x).
    Gelu,
    /// GELU, tanh approximation.
    GeluTanh,
    /// x·σ(x).
    Silu,
    /// max(x, 0).
    Relu,
    /// 1 / (1 + e^−x).
    Sigmoid,
    /// Hyperbolic tangent.
    Tanh,
    /// e^x.
    Exp,
    /// Natural logarithm.
    Log,
    /// Square root.
    Sqrt,
    /// 1 / √x.
    Rsqrt,
    /// −x.
    Neg,
    /// |x|.
    Abs,
    /// Sine (radians).
    Sin,
    /// Cosine (radians).
    Cos,
    /// 1 / x.
    Recip,
    /// x².
    Square,
}

impl UnaryOp {
    /// Every variant, in declaration order.
    pub const ALL: [UnaryOp; 16] = [
        UnaryOp::Gelu,
        UnaryOp::GeluTanh,
        UnaryOp::Silu,
        UnaryOp::Relu,
        UnaryOp::Sigmoid,
        UnaryOp::Tanh,
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Neg,
        UnaryOp::Abs,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Recip,
        UnaryOp::Square,
    ];

    /// The snake_case name dumps and messages use.
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Gelu => "gelu",
            UnaryOp::GeluTanh => "gelu_tanh",
            UnaryOp::Silu => "silu",
            UnaryOp::Relu => "relu",
            UnaryOp::Sigmoid => "sigmoid",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Rsqrt => "rsqrt",
            UnaryOp::Neg => "neg",
            UnaryOp::Abs => "abs",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Recip => "recip",
            UnaryOp::Square => "square",
        }
    }
}

/// Elementwise functions of two operands with numpy broadcasting. Both operands share a dtype;
/// output has it too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// a + b.
    Add,
    /// a − b.
    Sub,
    /// a · b.
    Mul,
    /// a / b (integer division truncates toward zero).
    Div,
    /// a^b.
    Pow,
    /// max(a, b); NaN if either is NaN.
    Maximum,
    /// min(a, b); NaN if either is NaN.
    Minimum,
}

impl BinaryOp {
    /// Every variant, in declaration order.
    pub const ALL: [BinaryOp; 7] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Pow,
        BinaryOp::Maximum,
        BinaryOp::Minimum,
    ];

    /// The snake_case name dumps and messages use.
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Pow => "pow",
            BinaryOp::Maximum => "maximum",
            BinaryOp::Minimum => "minimum",
        }
    }
}

/// Comparisons with numpy broadcasting; output is Bool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompareOp {
    /// a == b.
    Eq,
    /// a != b.
    Ne,
    /// a < b.
    Lt,
    /// a ≤ b.
    Le,
    /// a > b.
    Gt,
    /// a ≥ b.
    Ge,
}

impl CompareOp {
    /// Every variant, in declaration order.
    pub const ALL: [CompareOp; 6] =
        [CompareOp::Eq, CompareOp::Ne, CompareOp::Lt, CompareOp::Le, CompareOp::Gt, CompareOp::Ge];

    /// The snake_case name dumps and messages use.
    pub fn name(self) -> &'static str {
        match self {
            CompareOp::Eq => "eq",
            CompareOp::Ne => "ne",
            CompareOp::Lt => "lt",
            CompareOp::Le => "le",
            CompareOp::Gt => "gt",
            CompareOp::Ge => "ge",
        }
    }
}

/// Reductions over a set of axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Sum.
    Sum,
    /// Arithmetic mean.
    Mean,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
    /// Product.
    Prod,
}

impl ReduceOp {
    /// The snake_case name dumps and messages use.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Mean => "mean",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::Prod => "prod",
        }
    }
}

/// Index-of-extreme reductions over one axis; output is I32. Ties give the first index.
/// NaN counts as the extreme (like PyTorch), so a row with NaN gives the first NaN's index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArgReduceOp {
    /// Index of the largest value.
    ArgMax,
    /// Index of the smallest value.
    ArgMin,
}

/// Which part of attention's gradient an [`Op::AttentionGrad`](crate::Op::AttentionGrad)
/// node computes. The backward of one attention is a `Stats` node and one node per gradient
/// asked for, all sharing the forward's spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttnGradPart {
    /// F32 [B, Hq, Sq, 2]: per query row, the log-sum-exp of its visible scores (−∞ for a row
    /// that sees no key) and Σ dy·o, the row term of the softmax backward.
    Stats,
    /// The gradient of q, in q's shape.
    Q,
    /// The gradient of k, in k's shape (summed over the query heads of each kv head).
    K,
    /// The gradient of v, in v's shape (summed likewise).
    V,
}

impl AttnGradPart {
    /// Lower-case name, as dumps and kernel names spell it.
    pub fn name(self) -> &'static str {
        match self {
            AttnGradPart::Stats => "stats",
            AttnGradPart::Q => "q",
            AttnGradPart::K => "k",
            AttnGradPart::V => "v",
        }
    }
}

/// Which output of a top-k a node is. A top-k is two nodes sharing attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TopKOutput {
    /// The k values, in the node's dtype.
    Values,
    /// I32 indices along the axis.
    Indices,
}

/// Distribution of an [`Op::Random`](crate::Op::Random) draw. See [`Op::Random`](crate::Op::Random) for the exact bit recipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RandomDist {
    /// Uniform on [0, 1): the top 24 bits of a Philox word times 2⁻²⁴ (exact in f32).
    Uniform,
    /// Standard normal (mean 0, variance 1) by the Box–Muller transform.
    Normal,
}

impl RandomDist {
    /// Every variant, in declaration order.
    pub const ALL: [RandomDist; 2] = [RandomDist::Uniform, RandomDist::Normal];

    /// The snake_case name dumps and messages use.
    pub fn name(self) -> &'static str {
        match self {
            RandomDist::Uniform => "uniform",
            RandomDist::Normal => "normal",
        }
    }
}

/// Memory layout of attention and RoPE operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttnLayout {
    /// [batch, seq, heads, head_dim]
    Bshd,
    /// [batch, heads, seq, head_dim]
    Bhsd,
}

/// Masking of an attention op. With `Sk ≥ Sq` (a KV cache), query row `i` sits at absolute
/// position `i + (Sk − Sq)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MaskKind {
    /// Every key visible to every query.
    None,
    /// Key `j` is visible to query `i` iff `j ≤ i + (Sk − Sq)`.
    Causal,
    /// Causal and also `j > i + (Sk − Sq) − window`: at most `window` keys, the newest included.
    SlidingWindow(usize),
    /// A fourth input of shape [B, Sk] (Bool, I32 or F32); nonzero means "attend".
    /// A row with no visible key gives zeros.
    Padding,
    /// A fourth input, F32, broadcastable to [B, H, Sq, Sk], added to the scaled scores.
    Bias,
}

/// Attributes of scaled dot-product attention. Inputs: q, k, v (and the mask tensor for
/// `Padding`/`Bias`). Q has Hq heads, K and V have Hkv heads with Hq % Hkv == 0 (grouped-query
/// attention). Output has q's layout with v's head dim.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttentionSpec {
    /// The layout of q, k, v and the output.
    pub layout: AttnLayout,
    /// Which keys each query sees.
    pub mask: MaskKind,
    /// Multiplies q·k; `None` means 1/sqrt(head_dim).
    pub scale: Option<f32>,
    /// Logit soft-cap: scores become `cap · tanh(scores / cap)` (after scale, before mask).
    pub softcap: Option<f32>,
    /// A last input, I32 \[B\], holds each sequence's number of valid keys `len` (read at run
    /// time): keys `j ≥ len` are invisible and never read, and query row `i` sits at position
    /// `i + (len − Sq)` for the causal masks (rows at negative positions see nothing and give
    /// zeros). `len` is clamped to [0, Sk]. With a KV cache of capacity Sk this is what makes
    /// attention work follow the valid length, not the capacity.
    pub kv_lengths: bool,
}

impl AttentionSpec {
    /// Attention of `layout` with `mask`: scale 1/sqrt(head_dim), no soft-cap, no kv lengths.
    /// The setters below change one attribute each:
    /// `AttentionSpec::new(AttnLayout::Bhsd, MaskKind::Causal).scale(0.125).softcap(30.0)`.
    pub fn new(layout: AttnLayout, mask: MaskKind) -> Self {
        AttentionSpec { layout, mask, scale: None, softcap: None, kv_lengths: false }
    }

    /// Multiply q·k by `scale` instead of 1/sqrt(head_dim).
    pub fn scale(mut self, scale: f32) -> Self {
        self.scale = Some(scale);
        self
    }

    /// Soft-cap the scores at `cap` (`cap · tanh(scores / cap)`).
    pub fn softcap(mut self, cap: f32) -> Self {
        self.softcap = Some(cap);
        self
    }

    /// Whether [`Op::AttentionGrad`](crate::Op::AttentionGrad) takes this spec: every mask
    /// kind but a bias (whose gradient is the [B, Hq, Sq, Sk] score gradient itself, so
    /// nothing is saved by never storing it) and no run-time kv lengths (a KV cache is not
    /// trained through).
    pub fn flash_grad(&self) -> bool {
        self.mask != MaskKind::Bias && !self.kv_lengths
    }

    /// Whether a last I32 \[B\] input holds each sequence's count of valid keys.
    pub fn kv_lengths(mut self, on: bool) -> Self {
        self.kv_lengths = on;
        self
    }
}

/// How RoPE pairs dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RopeStyle {
    /// Rotate halves: pairs (d, d + rot/2).
    NeoX,
    /// Interleaved: pairs (2d, 2d + 1).
    GptJ,
}

/// Pooling kind for `Pool2d`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PoolKind {
    /// Maximum over the window (padding never wins).
    Max,
    /// Average with padded positions counted (PyTorch's default `count_include_pad=True`).
    Avg,
}

/// Norm fused after a residual add (`AddNorm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NormKind {
    /// [`Op::LayerNorm`](crate::Op::LayerNorm) (gamma and beta).
    LayerNorm,
    /// [`Op::RmsNorm`](crate::Op::RmsNorm) (gamma only).
    RmsNorm,
}

/// One step of a fused elementwise program. Registers are step indices; each step may read only
/// earlier registers. The last step is the output.
#[derive(Clone, Debug, PartialEq)]
pub enum EwStep {
    /// The n-th input of the fused node, broadcast to the output shape.
    Input(usize),
    /// An f32 constant.
    Scalar(f32),
    /// The op on one earlier register.
    Unary(UnaryOp, usize),
    /// The op on two earlier registers (left, right).
    Binary(BinaryOp, usize, usize),
    /// `cond ? a : b` (registers cond, a, b). The cond register must be an [`EwStep::Input`]
    /// of a Bool input (the only thing a Bool input may feed), so the fused node selects as
    /// `Op::Where` does; every other register is f32.
    Where(usize, usize, usize),
}

/// A fused chain of f32 elementwise ops (created by rlx-opt's fusion, never by users). Its
/// inputs are F32, or Bool where a [`EwStep::Where`] reads them as its condition.
#[derive(Clone, Debug, PartialEq)]
pub struct EwProgram {
    /// The steps, in order; the last one is the output.
    pub steps: Vec<EwStep>,
}

impl EwProgram {
    /// Checks the program against its inputs' dtypes (F32, or Bool): it has steps, every
    /// input index exists, every register read comes from an earlier step, a Bool input is
    /// read only as a [`EwStep::Where`] condition and every condition is one. The error says
    /// which step breaks which rule.
    pub fn check(&self, inputs: &[crate::DType]) -> Result<(), String> {
        use crate::DType;
        if self.steps.is_empty() {
            return Err("the program has no steps".into());
        }
        // Whether register r holds a Bool input.
        let is_bool = |r: usize| match self.steps.get(r) {
            Some(EwStep::Input(n)) => inputs.get(*n) == Some(&DType::Bool),
            _ => false,
        };
        for (i, step) in self.steps.iter().enumerate() {
            let reads: Vec<usize> = match *step {
                EwStep::Input(n) => {
                    match inputs.get(n) {
                        None => {
                            return Err(format!("step {i} ({step:?}) reads input {n} of {}", inputs.len()))
                        }
                        Some(DType::F32 | DType::Bool) => {}
                        Some(d) => return Err(format!("input {n} is {d}; fused inputs are F32 or Bool")),
                    }
                    Vec::new()
                }
                EwStep::Scalar(_) => Vec::new(),
                EwStep::Unary(_, r) => vec![r],
                EwStep::Binary(_, a, b) => vec![a, b],
                EwStep::Where(c, a, b) => {
                    if c < i && !is_bool(c) {
                        return Err(format!(
                            "step {i} ({step:?}): a where's condition must be a Bool input's register"
                        ));
                    }
                    vec![c, a, b]
                }
            };
            if let Some(&r) = reads.iter().find(|&&r| r >= i) {
                return Err(format!("step {i} ({step:?}) reads register {r}, not computed before it"));
            }
            let value_reads = match *step {
                EwStep::Where(_, a, b) => vec![a, b],
                _ => reads,
            };
            if let Some(&r) = value_reads.iter().find(|&&r| is_bool(r)) {
                return Err(format!(
                    "step {i} ({step:?}) computes on register {r}, a Bool input (only a where's \
                     condition may read one)"
                ));
            }
        }
        if self.steps.last().is_some_and(|s| matches!(s, EwStep::Input(_))) && is_bool(self.steps.len() - 1) {
            return Err("the output is a Bool input; the fused output is F32".into());
        }
        Ok(())
    }
}
