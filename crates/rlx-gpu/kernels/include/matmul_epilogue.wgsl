// The fused matmul epilogue: bias, then activation. Appended to every matmul kernel and to the
// split-K reduction (matmul_splitk.wgsl), each of which defines `bias_at(col)` and the ACT and
// HAS_BIAS placeholders.

// ACT_NONE … ACT_TANH: generated from Rust (src/catalog/consts_wgsl.rs: epilogue_acts).

const ACT: u32 = {{ACT}};
const HAS_BIAS: bool = {{HAS_BIAS}};

// c = act(acc + bias[col]): the bias add rounds first, as the unfused add would.
fn epilogue(acc: f32, col: u32) -> f32 {
    var v = acc;
    if (HAS_BIAS) {
        v = v + bias_at(col);
    }
    return activate(v);
}

// The ACT activation of v (v itself for ACT_NONE).
fn activate(v: f32) -> f32 {
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
