// A fused elementwise program (rlx-opt's FusedElementwise): one invocation per output element
// runs the whole program in registers, so a chain of f32 ops reads its inputs once and writes
// once instead of launching per op.
//
// Bindings: 0–6 = inputs (read; the slots past the node's inputs bind its first input again),
// 7 = out (read_write, contiguous f32). Params: FusedParams.
//
// Registers: the inputs (register k = input k, read at (i / div) % modulus, its index pair:
// a scalar, a row, a column or the whole tensor; a Bool input is read as 1.0 or 0.0), then the
// scalars, then one per op. Each op word is kind | op << 2 | a << 8 | b << 16 | c << 24 with
// the kind a KIND_* constant: unary (include/ew_math.wgsl's unary_f32 on r[a]), binary
// (binary_f32 on r[a], r[b]) or where (r[a] != 0 ? r[b] : r[c]). The program is the same for
// every invocation, so the op dispatch never diverges. Results are those of the separate
// kernels: each op rounds to f32 as theirs do.

// KIND_UNARY … KIND_WHERE, OP_*: generated from Rust (src/catalog/consts_wgsl.rs).

const WG: u32 = 256u;
// Registers: seven inputs and twelve program words (FUSED_MAX_INPUTS, FUSED_MAX_WORDS).
const REGS: u32 = 19u;

// p: FusedParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

@group(0) @binding(0) var<storage, read> in0: array<u32>;
@group(0) @binding(1) var<storage, read> in1: array<u32>;
@group(0) @binding(2) var<storage, read> in2: array<u32>;
@group(0) @binding(3) var<storage, read> in3: array<u32>;
@group(0) @binding(4) var<storage, read> in4: array<u32>;
@group(0) @binding(5) var<storage, read> in5: array<u32>;
@group(0) @binding(6) var<storage, read> in6: array<u32>;
@group(0) @binding(7) var<storage, read_write> out: array<u32>;

// Word j of input k.
fn load(k: u32, j: u32) -> u32 {
    switch k {
        case 0u: {
            return in0[j];
        }
        case 1u: {
            return in1[j];
        }
        case 2u: {
            return in2[j];
        }
        case 3u: {
            return in3[j];
        }
        case 4u: {
            return in4[j];
        }
        case 5u: {
            return in5[j];
        }
        default: {
            return in6[j];
        }
    }
}

// Word w of the program (scalars, then ops).
fn code(w: u32) -> u32 {
    return p.code[w >> 2u][w & 3u];
}

// One invocation per output element; the entry point is include/flat_main.wgsl.
fn invocations() -> u32 {
    return p.numel;
}

fn element(i: u32) {
    var r: array<f32, REGS>;
    let n_in = p.counts & 0xffu;
    let n_sc = (p.counts >> 8u) & 0xffu;
    let bools = p.counts >> 16u;
    for (var k = 0u; k < n_in; k++) {
        let pair = p.index[k >> 1u];
        let odd = (k & 1u) == 1u;
        let div = select(pair.x, pair.z, odd);
        let modulus = select(pair.y, pair.w, odd);
        var j = i;
        if (div != 1u) {
            j = j / div;
        }
        if (modulus != p.numel) {
            j = j % modulus;
        }
        let w = load(k, j);
        r[k] = select(bitcast<f32>(w), f32(w), ((bools >> k) & 1u) == 1u);
    }
    for (var s = 0u; s < n_sc; s++) {
        r[n_in + s] = bitcast<f32>(code(s));
    }
    let base = n_in + n_sc;
    for (var s = 0u; s < p.n_ops; s++) {
        let w = code(n_sc + s);
        let kind = w & 3u;
        let op = (w >> 2u) & 63u;
        let a = r[(w >> 8u) & 0xffu];
        var v = 0.0;
        if (kind == KIND_UNARY) {
            v = unary_f32(op, a);
        } else if (kind == KIND_BINARY) {
            v = binary_f32(op, a, r[(w >> 16u) & 0xffu]);
        } else {
            v = select(r[(w >> 24u) & 0xffu], r[(w >> 16u) & 0xffu], a != 0.0);
        }
        r[base + s] = v;
    }
    out[i] = bitcast<u32>(r[p.out_reg]);
}
