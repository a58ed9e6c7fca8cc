// What the attention kernels (attention.wgsl, attention_split.wgsl, attention_coop.wgsl and the
// backward ones) share: the mask kinds, the params, the bindings and the visibility rule.
// rlx-gpu appends this file to each of them, so their own line numbers stay those of their
// files.
//
// Bindings: 0 = q (elements of type QKV: f32, or vec4<f32> for the coop kernel's wide loads),
// 1 = k and 2 = v (declared by attention_kv_f32.wgsl or attention_kv_f16.wgsl, appended too,
// with their k_load and v_load), 3 = mask (read; 32-bit words: the [B, Sk] padding mask as
// Bool/I32/F32 words, or the F32 bias; any buffer when the mask kind reads none), 4 = out
// (read_write), 5 = kv lengths (read; I32 [B] when has_lens, any buffer otherwise). Params:
// AttentionParams (rlx-gpu's catalog::attention::AttentionParams).
//
// With kv lengths, batch b has len = clamp(lens[b], 0, sk) valid keys and query row i sits at
// position i + len − sq; without, len = sk. Positions are compared as (position + sq), so that a
// row at a negative position (len < sq) wraps nothing: it sees no key.

// MASK_NONE … MASK_BIAS: generated from Rust (src/catalog/consts_wgsl.rs: mask_kinds).

const NEG_INF_BITS: u32 = 0xff800000u;

// p: AttentionParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

@group(0) @binding(0) var<storage, read> q: array<{{QKV}}>;
@group(0) @binding(3) var<storage, read> mask: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read> lens: array<i32>;

fn is_neg_inf(v: f32) -> bool {
    return bitcast<u32>(v) == NEG_INF_BITS;
}

// The number of valid keys of batch b.
fn kv_len(b: u32) -> u32 {
    if (p.has_lens == 0u) {
        return p.sk;
    }
    return min(u32(max(lens[b], 0)), p.sk);
}

// Whether query row i (a live row) of batch b may see key j.
fn visible(b: u32, i: u32, j: u32) -> bool {
    let len = kv_len(b);
    if (j >= len || !position_ok(i, j, len)) {
        return false;
    }
    if (p.mask_kind == MASK_PADDING) {
        let w = mask[b * p.m_sb + j * p.m_sj];
        // A float word is nonzero unless it is ±0; NaN counts as nonzero, as in the reference.
        let bits = select(w, w & 0x7fffffffu, p.mask_float != 0u);
        return bits != 0u;
    }
    return true;
}

// Whether row i's position admits key j (of `len` valid keys) under a causal or sliding-window
// mask; any other mask kind admits every key.
fn position_ok(i: u32, j: u32, len: u32) -> bool {
    // (position of row i) + sq, and j + sq: no negative numbers.
    let pos_sq = i + len;
    let j_sq = j + p.sq;
    if (p.mask_kind == MASK_CAUSAL) {
        return j_sq <= pos_sq;
    }
    if (p.mask_kind == MASK_SLIDING) {
        // pos − j < window, written so that nothing wraps for a huge window.
        return j_sq <= pos_sq && pos_sq - j_sq < p.window;
    }
    return true;
}

// Keys [x, y) that some row of the query block q0 .. q0 + bq of batch b may see: the valid
// ones, cut further by a causal or sliding-window mask. The grid has one block per bq rows, so
// q0 < sq.
fn key_range(b: u32, q0: u32, bq: u32) -> vec2<u32> {
    let len = kv_len(b);
    var lo = 0u;
    var hi = len;
    if (p.mask_kind == MASK_CAUSAL || p.mask_kind == MASK_SLIDING) {
        // Last row's position + 1 = last_row + 1 + len − sq, and 0 when that is negative.
        let end_sq = min(q0 + bq, p.sq) + len;
        hi = select(0u, min(len, end_sq - p.sq), end_sq > p.sq);
        // First row's position + 1, when positive.
        let first_sq = q0 + 1u + len;
        if (p.mask_kind == MASK_SLIDING && first_sq > p.sq && first_sq - p.sq > p.window) {
            lo = first_sq - p.sq - p.window;
        }
    }
    return vec2<u32>(lo, max(lo, hi));
}

// The score q·k of query row i (head h, batch b) and key j as the softmax sees it: scaled,
// soft-capped (cap·tanh(s/cap)), plus the bias when the mask kind is a bias and the key is
// visible (`vis`).
fn scored(s: f32, b: u32, h: u32, i: u32, j: u32, vis: bool) -> f32 {
    var sc = s * p.scale;
    if (p.softcap > 0.0) {
        sc = p.softcap * tanh_acc(sc / p.softcap);
    }
    if (p.mask_kind == MASK_BIAS && vis) {
        sc += bitcast<f32>(mask[b * p.m_sb + h * p.m_sh + i * p.m_si + j * p.m_sj]);
    }
    return sc;
}
