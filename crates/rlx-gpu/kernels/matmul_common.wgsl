// What both f32 matmul kernels (matmul_tiled.wgsl, matmul_reg.wgsl) share: the epilogue
// constants and function, the params struct, the bindings and the batch addressing. Appended to
// each kernel source by rlx-gpu (catalog/nn.rs), so the kernels keep their own line numbers;
// WGSL allows module-scope declarations in any order. Placeholders are the kernels' (see
// matmul_tiled.wgsl).

const ACT_NONE: u32 = 0u;
const ACT_GELU: u32 = 1u;
const ACT_GELU_TANH: u32 = 2u;
const ACT_RELU: u32 = 3u;
const ACT_SILU: u32 = 4u;
const ACT_SIGMOID: u32 = 5u;
const ACT_TANH: u32 = 6u;

const ACT: u32 = {{ACT}};
const HAS_BIAS: bool = {{HAS_BIAS}};

struct MatmulParams {
    m: u32,
    n: u32,
    k: u32,
    batch: u32,
    batch_inner: u32,
    a_stride_m: u32,
    a_stride_k: u32,
    b_stride_k: u32,
    b_stride_n: u32,
    a_batch_outer: u32,
    a_batch_inner: u32,
    b_batch_outer: u32,
    b_batch_inner: u32,
    a_offset: u32,
    b_offset: u32,
    c_offset: u32,
}

// f32 for the f32 rungs; vec4<f32> for the tensor-core rung, which loads 16 bytes at a time.
@group(0) @binding(0) var<storage, read> a: array<{{AB_ELEM}}>;
@group(0) @binding(1) var<storage, read> b: array<{{AB_ELEM}}>;
{{BIAS_DECL}}
@group(0) @binding({{C_BINDING}}) var<storage, read_write> c: array<f32>;
{{PARAMS}} p: MatmulParams;

fn bias_at(col: u32) -> f32 {
    {{BIAS_AT}}
}

// c = act(acc + bias[col]): the bias add rounds first, as the unfused add would.
fn epilogue(acc: f32, col: u32) -> f32 {
    var v = acc;
    if (HAS_BIAS) {
        v = v + bias_at(col);
    }
    if (ACT == ACT_GELU) {
        return gelu_erf(v);
    } else if (ACT == ACT_GELU_TANH) {
        return gelu_tanh(v);
    } else if (ACT == ACT_RELU) {
        return relu(v);
    } else if (ACT == ACT_SILU) {
        return silu(v);
    } else if (ACT == ACT_SIGMOID) {
        return sigmoid(v);
    } else if (ACT == ACT_TANH) {
        return tanh_acc(v);
    }
    return v;
}

// Where batch z's A, B and C start: z splits as (outer, inner) = (z / batch_inner,
// z % batch_inner), each operand with a stride per level (0 where it is broadcast); C is
// contiguous [batch, M, N].
fn batch_bases(z: u32) -> vec3<u32> {
    let outer = z / p.batch_inner;
    let inner = z % p.batch_inner;
    let a_base = p.a_offset + outer * p.a_batch_outer + inner * p.a_batch_inner;
    let b_base = p.b_offset + outer * p.b_batch_outer + inner * p.b_batch_inner;
    return vec3<u32>(a_base, b_base, p.c_offset + z * p.m * p.n);
}
