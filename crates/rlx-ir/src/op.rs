//! The op vocabulary: plain enums saying *what* a node computes. How it is computed is each
//! backend's business. Attribute checks happen in the builder (see `builder.rs`); a node that is
//! in a graph has passed them.

use crate::{
    ArgReduceOp, AttentionSpec, AttnGradPart, AttnLayout, BinaryOp, CompareOp, DType, EwProgram, NormKind,
    PoolKind, QuantType, RandomDist, ReduceOp, RopeStyle, ScanOutput, Shape, Tensor, TopKOutput, UnaryOp,
};

/// Largest row length N that [`Op::Fft`] takes: a power of two whose N complex f32 values
/// (8·N bytes) fit one workgroup's shared memory on every GPU rlx targets (16 KiB, half of
/// lavapipe's 32 KiB, leaving room for the kernel prelude's own shared array). `Graph::fft`
/// builds longer transforms from transforms of at most this length.
pub const FFT_NATIVE_MAX: usize = 2048;

/// What a node computes. Inputs are listed per variant as "inputs: …".
///
/// [`OpKind`], its payload-free tag, is generated from this declaration (one variant per
/// variant here, same order and names), so adding an op here adds its kind everywhere; its
/// family ([`OpKind::family`]) must then be picked, or rlx-ir does not compile.
#[derive(Clone, Debug, PartialEq, strum::EnumDiscriminants)]
#[strum_discriminants(
    name(OpKind),
    vis(pub),
    doc = "Payload-free tag of an [`Op`], for capability sets and tables. Generated from `Op`.",
    derive(Hash, PartialOrd, Ord, strum::EnumIter, strum::IntoStaticStr),
    strum(serialize_all = "snake_case")
)]
pub enum Op {
    /// A value fed on every `run`. inputs: none.
    Input {
        /// Its name, unique among inputs, params and states.
        name: String,
    },
    /// A weight set once with `set_param`. inputs: none.
    Param {
        /// Its name, unique among inputs, params and states.
        name: String,
    },
    /// Data baked into the graph (a scalar is rank 0). inputs: none.
    Constant(Tensor),
    /// Device-resident state that outlives a run (a KV cache, a recurrent state): zeros at
    /// compile time, settable with `set_state`, and updated in place by [`Op::WriteRows`]; a
    /// run sees what the previous run of any executable sharing it left there. inputs: none.
    State {
        /// Its name, unique among inputs, params and states.
        name: String,
    },
    /// Writes `rows` into a [`Op::State`] at run-time offset `offset[0]` along `axis`, in
    /// place, and yields the updated state. inputs: state (a `State` node, read by nothing
    /// else), rows (the state's dtype and dims except `axis`, where it has at most as many),
    /// offset (I32 \[1\]). Rows that land at or past the state's extent along `axis`, or at a
    /// negative position, are dropped. The write persists after the run.
    WriteRows {
        /// The axis the rows are written along.
        axis: usize,
    },

    /// inputs: x
    Unary(UnaryOp),
    /// inputs: a, b (numpy broadcasting)
    Binary(BinaryOp),
    /// inputs: a, b (numpy broadcasting); output Bool
    Compare(CompareOp),
    /// inputs: cond (Bool), a, b (all broadcast together)
    Where,
    /// inputs: x
    Cast(DType),

    /// inputs: x. `axes` sorted, unique, in range. Output drops them (or keeps them as 1).
    Reduce {
        /// The reduction.
        op: ReduceOp,
        /// The axes reduced.
        axes: Vec<usize>,
        /// Keep the reduced axes as size 1.
        keepdim: bool,
    },
    /// inputs: x; output I32.
    ArgReduce {
        /// Arg-max or arg-min.
        op: ArgReduceOp,
        /// The axis searched.
        axis: usize,
        /// Keep the axis as size 1.
        keepdim: bool,
    },
    /// inputs: x; inclusive prefix sum along `axis`.
    Cumsum {
        /// The axis summed along.
        axis: usize,
    },
    /// inputs: x. Sorted: descending if `largest`, ascending otherwise; ties keep the lower index.
    #[strum_discriminants(strum(serialize = "topk"))]
    TopK {
        /// How many values.
        k: usize,
        /// The axis searched.
        axis: usize,
        /// The largest (else the smallest) k.
        largest: bool,
        /// Which of the two outputs this node is.
        output: TopKOutput,
    },

    /// inputs: x. Same element count; a view, never a copy, where the backend allows.
    Reshape(Shape),
    /// inputs: x. `out.dims[i] = x.dims[perm[i]]`.
    Permute(Vec<usize>),
    /// inputs: x. Elements `start, start+step, …` below `end` along `axis` (step ≥ 1).
    Slice {
        /// The axis sliced.
        axis: usize,
        /// The first index taken.
        start: usize,
        /// One past the last index considered.
        end: usize,
        /// The stride between taken indices (≥ 1).
        step: usize,
    },
    /// inputs: 1 or more tensors equal in every dim but `axis`.
    Concat {
        /// The axis joined along.
        axis: usize,
    },
    /// inputs: x; numpy broadcast to the target shape.
    Expand(Shape),
    /// inputs: data, indices (I32, any rank). Out = data.dims[..axis] ++ indices.dims ++
    /// data.dims[axis+1..] (numpy `take`; embedding lookup is axis 0). An out-of-range index
    /// gives zeros (a NaN-style "no value"), never a crash.
    Gather {
        /// The axis of `data` the indices select along.
        axis: usize,
    },
    /// inputs: ids (I32, any rank), src (F32, F16 or BF16) whose dims at `axis..axis +
    /// ids.rank` are the ids' dims. The transpose of [`Op::Gather`]: out =
    /// `src.dims[..axis] ++ [len] ++ src.dims[axis + ids.rank..]`, and with p, q the
    /// coordinates before and after the ids' dims and the ids flattened to i = 0..n,
    /// `out[p, v, q] = Σ_{i : ids[i] == v} src[p, i, q]`.
    ///
    /// **Determinism contract:** each sum starts from +0.0 and adds its terms in increasing
    /// i, in f32 (f16 and bf16 sources are widened, the result rounded once to src's dtype),
    /// on every backend: the result is bit-identical run to run. An id outside [0, len)
    /// contributes nothing (the gather gives a zero row for it). The gradient of a gather (an
    /// embedding lookup) with respect to its table.
    ScatterAdd {
        /// The axis of the output the ids index (where src holds the ids' dims).
        axis: usize,
        /// The output's size along `axis` (the gathered table's length, V).
        len: usize,
    },
    /// inputs: x. `pads[i] = (before, after)` for each dim, filled with `value`.
    Pad {
        /// (before, after) per dim.
        pads: Vec<(usize, usize)>,
        /// The fill value.
        value: f64,
    },
    /// inputs: x; flips each listed axis.
    Reverse {
        /// The axes flipped.
        axes: Vec<usize>,
    },

    /// inputs: a, b. a: [..., M, K] (or [..., K, M] when `transpose_a`), b: [..., K, N] (or
    /// [..., N, K] when `transpose_b`); batch dims broadcast; both rank ≥ 2.
    #[strum_discriminants(strum(serialize = "matmul"))]
    MatMul {
        /// `a` holds its last two dims swapped.
        transpose_a: bool,
        /// `b` holds its last two dims swapped.
        transpose_b: bool,
    },

    /// inputs: x (F32, F16 or BF16, [..., K]), w (U8 [N, K / block_elems · block_bytes]: each of
    /// the N rows is K elements of `quant` blocks back to back, GGUF's layout of a [N, K] linear
    /// weight). Output F32 [..., N] = x · dequant(w)ᵀ. The weight stays packed: backends decode
    /// its blocks where they compute.
    #[strum_discriminants(strum(serialize = "quant_matmul"))]
    QuantMatMul {
        /// The block format of `w`.
        quant: QuantType,
    },
    /// inputs: table (U8 [V, K / block_elems · block_bytes], rows of `quant` blocks), ids (I32,
    /// any shape). Output F32 [ids.shape..., K]: the decoded rows (an embedding lookup). An id
    /// outside [0, V) gives a row of zeros, as `Gather` does.
    QuantGather {
        /// The block format of `table`.
        quant: QuantType,
    },
    /// inputs: x ([T, S, K], S = 1 or k), w ([E, N, K]: E matrices laid out like `nn.Linear`
    /// weights, out × in, x's dtype), ids (I32 [T, k]). Output [T, k, N] in x's dtype:
    /// `out[t, j, :] = w[ids[t, j]] · x[t, j or 0, :]` (x's slot j when S = k, its one slot
    /// broadcast to every j when S = 1). A mixture-of-experts layer's experts: each token's k
    /// chosen experts, picked on the device. An id outside [0, E) gives a row of zeros (as
    /// `Gather` does), never a read out of bounds.
    #[strum_discriminants(strum(serialize = "grouped_matmul"))]
    GroupedMatMul,
    /// inputs: x ([T, S, K], S = 1 or k; F32, F16 or BF16), w (U8 [E, N, K / block_elems ·
    /// block_bytes]: each expert's N rows of K elements of `quant` blocks, GGUF's layout of an
    /// expert stack), ids (I32 [T, k]). Output F32 [T, k, N] = [`Op::GroupedMatMul`] on
    /// dequant(w). The stack stays packed: backends decode only the chosen experts' rows, where
    /// they compute. An id outside [0, E) gives a row of zeros.
    #[strum_discriminants(strum(serialize = "quant_grouped_matmul"))]
    QuantGroupedMatMul {
        /// The block format of `w`.
        quant: QuantType,
    },
    /// inputs: u [B, D, L], delta [B, D, L], a [D, N], b and c [B, G, N, L] (F32, G divides D).
    /// Mamba-1's selective scan ([`crate::ssm`] has the formula); output y [B, D, L] or the
    /// last state [B, D, N] ([`ScanOutput`]).
    SelectiveScan {
        /// Apply softplus to delta first (Mamba's `delta_softplus`).
        delta_softplus: bool,
        /// The outputs or the last state.
        output: ScanOutput,
    },
    /// inputs: q [B, L, H, K], k [B, L, H, K], v [B, L, H, V], g and beta [B, L, H] (F32).
    /// The gated delta rule of GatedDeltaNet ([`crate::ssm`] has the formula); output o
    /// [B, L, H, V] or the last state [B, H, K, V] ([`ScanOutput`]).
    GatedDeltaRule {
        /// Multiplies q (usually 1/√K).
        scale: f32,
        /// The outputs or the last state.
        output: ScanOutput,
    },

    /// inputs: x (F32 `[..., N, 2]`): rows of N complex values, each stored as (real, imag)
    /// in a trailing axis of 2. Output F32 `[..., N, 2]`: the discrete Fourier transform of
    /// every row along axis −2, `X[k] = Σₙ x[n]·e^{∓2πi·nk/N}` (− forward, + inverse), scaled
    /// as PyTorch's `norm="backward"`: forward unscaled, inverse × 1/N. N is a power of two up
    /// to [`FFT_NATIVE_MAX`]: the size one GPU workgroup transforms in shared memory.
    /// `Graph::fft` takes any N, building larger powers of two (four-step) and other lengths
    /// (Bluestein) from this op. Equals `torch.view_as_real(torch.fft.fft(view_as_complex(x),
    /// dim=-1))` (or `ifft`). A NaN in a row spreads to the outputs of that row that read it
    /// (in general all of them); other rows are untouched.
    Fft {
        /// The inverse transform (scaled by 1/N).
        inverse: bool,
    },

    /// inputs: x, gamma, beta (gamma and beta: [last dim]). Normalises over the last axis.
    LayerNorm {
        /// Added to the variance.
        eps: f32,
    },
    /// inputs: x, gamma ([last dim]). Normalises over the last axis.
    RmsNorm {
        /// Added to the mean square.
        eps: f32,
    },
    /// inputs: x; over the last axis.
    Softmax,
    /// inputs: x; over the last axis.
    LogSoftmax,

    /// inputs: q, k, v [, mask]. See [`AttentionSpec`].
    Attention(AttentionSpec),
    /// The gradient of an `Attention` of `spec` without its [B, Hq, Sq, Sk] matrix (flash
    /// attention's backward: the probabilities are recomputed tile by tile from q, k and the
    /// row statistics). inputs: the forward's q, k, v; then for [`AttnGradPart::Stats`] the
    /// forward's output o and its gradient dy, for the other parts dy and the `Stats` node;
    /// then the mask where the spec has one. `spec` passes [`AttentionSpec::flash_grad`].
    AttentionGrad {
        /// The forward attention's spec.
        spec: AttentionSpec,
        /// Which part of the gradient this node is.
        part: AttnGradPart,
    },
    /// inputs: x (\[B,S,H,D\] or \[B,H,S,D\] per `layout`), cos, sin (both [S, rotary_dims/2]).
    /// Rotates the first `rotary_dims` of D; the rest pass through.
    Rope {
        /// Which dims pair up.
        style: RopeStyle,
        /// The layout of x.
        layout: AttnLayout,
        /// How many of D rotate (even).
        rotary_dims: usize,
    },

    /// inputs: x [N, C, H, W], w [O, C/groups, KH, KW] [, bias \[O\]].
    Conv2d {
        /// (H, W) strides.
        stride: [usize; 2],
        /// (H, W) zero padding on both sides.
        padding: [usize; 2],
        /// (H, W) dilations.
        dilation: [usize; 2],
        /// Channel groups (C and O divisible by it).
        groups: usize,
    },
    /// inputs: x [N, C, H, W].
    Pool2d {
        /// Max or average.
        kind: PoolKind,
        /// (H, W) window.
        kernel: [usize; 2],
        /// (H, W) strides.
        stride: [usize; 2],
        /// (H, W) padding on both sides.
        padding: [usize; 2],
    },
    /// inputs: x [N, C, H, W] → [N, C, 2H, 2W], nearest neighbour.
    Upsample2x,

    /// inputs: key (U32 \[2\] = `[seed, offset]`, normally an `Input` so that every run, e.g. every
    /// decode step, can pass a new offset without recompiling). Output: F32 of `shape`, counter-
    /// based random numbers that every backend computes bit for bit alike (uniform) or within
    /// f32 rounding of the math library (normal).
    ///
    /// The recipe. Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy
    /// as 1, 2, 3", SC 2011): multipliers `0xD2511F53`, `0xCD9E8D57`, Weyl key increments
    /// `0x9E3779B9`, `0xBB67AE85`, 10 rounds. Element `i` (row-major flat index) belongs to
    /// block `b = i / 4`, lane `l = i % 4`; the block's four words are
    /// `philox4x32_10(counter = [b mod 2³², b / 2³², offset, 0], key = [seed, 0])`. So element
    /// `i` depends only on `(seed, offset, i)`, not on the shape, the device or the thread
    /// layout, and the streams of two offsets never overlap.
    /// - `Uniform`: `(word[l] >> 8) · 2⁻²⁴`, in [0, 1), exact in f32.
    /// - `Normal`: lanes pair up, (0, 1) and (2, 3). With the pair's words `a`, `c`:
    ///   `u1 = ((a >> 8) + 1) · 2⁻²⁴` in (0, 1], `u2 = (c >> 8) · 2⁻²⁴`, `r = sqrt(−2 ln u1)`,
    ///   `θ = 2π · u2`; the even lane is `r · cos θ`, the odd lane `r · sin θ`, computed in f32.
    ///   The bits feeding it are identical everywhere, but `ln`, `cos` and `sin` are the device's
    ///   own (Vulkan bounds their error, it does not make them exact), so GPU and CPU normals may
    ///   differ in the last ulp or so; the parity table holds them to 1e-5 relative. Only
    ///   `Uniform` is promised bit for bit.
    Random {
        /// Uniform or normal.
        dist: RandomDist,
        /// The output's shape.
        shape: Shape,
    },

    // ---- fused forms, created by rlx-opt, never by users ----
    /// inputs: a, b [, bias \[N\]] then `activation` on the result (if any).
    #[strum_discriminants(strum(serialize = "fused_matmul"))]
    FusedMatMul {
        /// As [`Op::MatMul`].
        transpose_a: bool,
        /// As [`Op::MatMul`].
        transpose_b: bool,
        /// A third input, \[N\], is added.
        bias: bool,
        /// Applied last, if any.
        activation: Option<UnaryOp>,
    },
    /// inputs: x, residual, gamma [, beta for LayerNorm]: norm(x + residual) over the last axis.
    AddNorm {
        /// LayerNorm or RMSNorm.
        norm: NormKind,
        /// As the norm's own.
        eps: f32,
    },
    /// inputs: n f32 tensors broadcast to the output shape.
    FusedElementwise(EwProgram),

    // ---- user-defined ----
    /// inputs: whatever the op's shape rule accepts. A user-defined op ([`crate::CustomOp`]):
    /// its shape rule gives the output type, its CPU reference the CPU's values and its WGSL
    /// kernel the GPUs'. Built with [`crate::Graph::custom`].
    Custom(crate::CustomCall),
}
