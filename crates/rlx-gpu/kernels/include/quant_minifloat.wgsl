// The small floats of the fp8 and nvfp4 block formats (rlx_ir::minifloat is the reference),
// decoded exactly to f32. Appended to every quant kernel with quant_common.wgsl.

// e4m3 ("e4m3fn": bias 7, no infinities, S.1111.111 NaN) code c (low 8 bits).
fn e4m3(c: u32) -> f32 {
    let sign = (c & 0x80u) << 24u;
    let e = (c >> 3u) & 0xfu;
    let m = c & 7u;
    if ((c & 0x7fu) == 0x7fu) {
        return bitcast<f32>(sign | 0x7fc00000u);
    }
    if (e == 0u) {
        let v = f32(m) * 0.001953125; // m · 2^-9
        return select(v, -v, sign != 0u);
    }
    return bitcast<f32>(sign | ((e + 120u) << 23u) | (m << 20u));
}

// The four e4m3 codes of word v, lowest byte first.
fn e4m3x4(v: u32) -> vec4<f32> {
    return vec4<f32>(e4m3(v & 0xffu), e4m3((v >> 8u) & 0xffu), e4m3((v >> 16u) & 0xffu), e4m3(v >> 24u));
}

// The four e5m2 codes of word v, lowest byte first: an e5m2 code is the top byte of an f16.
fn e5m2x4(v: u32) -> vec4<f32> {
    return vec4<f32>(
        f16_bits((v & 0xffu) << 8u),
        f16_bits(((v >> 8u) & 0xffu) << 8u),
        f16_bits(((v >> 16u) & 0xffu) << 8u),
        f16_bits((v >> 24u) << 8u),
    );
}

// Piece j (8 codes) of an FP8_E4M3 or FP8_E5M2 block at byte bb (32 elements in 36 bytes, 9
// words: an f32 scale s, then 32 codes): x = s · e5m2(q) when `e5m2`, else s · e4m3(q).
fn fp8_piece(bb: u32, j: u32, e5m2: bool) -> Piece {
    let bw = bb >> 2u;
    let q = bw + 1u + j * 2u;
    let s = bitcast<f32>(w[bw]);
    if (e5m2) {
        return Piece(s * e5m2x4(w[q]), s * e5m2x4(w[q + 1u]));
    }
    return Piece(s * e4m3x4(w[q]), s * e4m3x4(w[q + 1u]));
}

// e2m1 codes (low 4 bits of each lane): sign bit 3, exponent bits 2..1 (bias 1), mantissa bit
// 0; ±{0, 0.5, 1, 1.5, 2, 3, 4, 6}. Exponent 0 is m · 2^-1, else (2 + m) · 2^(e - 2).
fn e2m1x4(c: vec4<u32>) -> vec4<f32> {
    let e = (c >> vec4<u32>(1u)) & vec4<u32>(3u);
    let m = c & vec4<u32>(1u);
    let base = select(vec4<u32>(2u) + m, m, e == vec4<u32>(0u));
    let v = ldexp(vec4<f32>(base), vec4<i32>(max(e, vec4<u32>(1u))) - vec4<i32>(2));
    return select(v, -v, (c & vec4<u32>(8u)) != vec4<u32>(0u));
}
