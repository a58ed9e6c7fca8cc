// What the kernels on block-quantized weights share (matmul_quant_vec.wgsl,
// matmul_quant_tiled.wgsl, matmul_quant_coop.wgsl, quant_gather.wgsl): the params struct,
// byte access to the packed weight `w` and the piece type the decoders return. Appended to each
// kernel with quant_k_scales.wgsl, quant_minifloat.wgsl and one decoder file (quant_q8_0.wgsl,
// …), which defines `decode` (see decode8).
//
// The weight is U8 storage, one byte per element, bound as u32 words (little-endian): row r of
// [rows, row_bytes] starts at byte r · row_bytes, which need not be a word boundary (blocks of
// 34, 18, 22, 110 and 210 bytes), so multi-byte fields are assembled from two words (bytes4).
// f16 scales always sit at even offsets (blocks and rows start at even bytes), so each lies
// inside one word. The formats rlx adds (Q4_1, Q8_ASYM, FP8_*, NVFP4), Q5_1 (24), Q2_K (84) and
// IQ4_XS (136) have blocks of whole words, so their rows and fields start on word boundaries and
// their decoders read words directly.
// `last_word` is the last word holding bytes of the tensor: a 4-byte read never goes past it.

// p: QuantParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

// Eight decoded weights: elements 8·piece .. 8·piece + 8 of a row.
struct Piece {
    lo: vec4<f32>,
    hi: vec4<f32>,
}

// Elements 8·piece .. 8·piece + 8 of the row at byte `row`: piece `piece % per` of the block at
// byte row + (piece / per) · BLOCK_BYTES, where a block holds per = BLOCK_ELEMS / 8 pieces. The
// decoder file defines BLOCK_ELEMS, BLOCK_BYTES and `decode` (one piece of the block at a byte).
fn decode8(row: u32, piece: u32) -> Piece {
    let per = BLOCK_ELEMS / 8u;
    return decode(row + (piece / per) * BLOCK_BYTES, piece % per);
}

// Bytes o .. o + 4 of `w` as one little-endian word. Every byte asked for is inside the tensor.
fn bytes4(o: u32) -> u32 {
    let i = o >> 2u;
    let s = (o & 3u) * 8u;
    let lo = w[i];
    if (s == 0u) {
        return lo;
    }
    let hi = w[min(i + 1u, p.last_word)];
    return (lo >> s) | (hi << (32u - s));
}

// The f16 at the even byte offset o, widened exactly (f16_bits).
fn f16_at(o: u32) -> f32 {
    return f16_bits(u16_at(o));
}

// The u16 at the even byte offset o (inside one word, as f16 scales are).
fn u16_at(o: u32) -> u32 {
    return (w[o >> 2u] >> ((o & 2u) * 8u)) & 0xffffu;
}

// The byte at offset o.
fn byte_at(o: u32) -> u32 {
    return (w[o >> 2u] >> ((o & 3u) * 8u)) & 0xffu;
}

// The f16 whose bits are the low 16 of h, widened exactly (by hand: unpack2x16float would need
// the f16-in-f32 capability). Infinities and NaN stay what they are; subnormals become
// m · 2^-24.
fn f16_bits(h: u32) -> f32 {
    let sign = (h & 0x8000u) << 16u;
    let e = (h >> 10u) & 0x1fu;
    let m = h & 0x3ffu;
    if (e == 0x1fu) {
        return bitcast<f32>(sign | 0x7f800000u | (m << 13u));
    }
    if (e == 0u) {
        let v = f32(m) * 5.9604644775390625e-8;
        return select(v, -v, sign != 0u);
    }
    return bitcast<f32>(sign | ((e + 112u) << 23u) | (m << 13u));
}

// The four bytes of v as signed 8-bit values.
fn i8x4(v: u32) -> vec4<f32> {
    let s = bitcast<vec4<i32>>(vec4<u32>(v << 24u, v << 16u, v << 8u, v)) >> vec4<u32>(24u);
    return vec4<f32>(s);
}

// The four nibbles at bit `shift` (0 or 4) of each byte of v.
fn nib4(v: u32, shift: u32) -> vec4<u32> {
    let b = v >> shift;
    return vec4<u32>(b & 0xfu, (b >> 8u) & 0xfu, (b >> 16u) & 0xfu, (b >> 24u) & 0xfu);
}

// Eight 4-bit values, elements 8·j .. 8·j + 4 (lo) and .. 8·j + 8 (hi).
struct Nibbles {
    lo: vec4<u32>,
    hi: vec4<u32>,
}

// Piece j (0..4) of 32 four-bit values laid out as Q4_0's: 16 bytes at byte qs, byte i holding
// element i in its low nibble and element i + 16 in its high nibble. Q4_0, Q4_1, Q5_0, Q5_1,
// IQ4_NL and IQ4_XS's sub-blocks all store their low bits so.
fn q4_nibbles(qs: u32, j: u32) -> Nibbles {
    let o = qs + (j % 2u) * 8u;
    let shift = (j / 2u) * 4u;
    return Nibbles(nib4(bytes4(o), shift), nib4(bytes4(o + 4u), shift));
}

// Bits first .. first + 4 of v, one per lane (first ≤ 28): Q5_0 / Q5_1's fifth bits.
fn bit_run4(v: u32, first: u32) -> vec4<u32> {
    return (vec4<u32>(v >> first) >> vec4<u32>(0u, 1u, 2u, 3u)) & vec4<u32>(1u);
}

// Bit pairs (or single bits) at bit `shift` of each byte of v, masked by `mask`.
fn bits4(v: u32, shift: u32, mask: u32) -> vec4<u32> {
    let b = v >> shift;
    return vec4<u32>(b & mask, (b >> 8u) & mask, (b >> 16u) & mask, (b >> 24u) & mask);
}

// IQ4_NL / IQ4_XS's 16 non-linear values (ggml's kvalues_iq4nl: −127, −104, −83, −65, −49, −35,
// −22, −10, 1, 13, 25, 38, 53, 69, 89, 113) as signed bytes, four to a word: IQ4_KV0 holds
// entries 0..4 (entry 0 in the low byte), IQ4_KV1 4..8 and so on. Words rather than an array so
// a lookup stays in registers (a dynamically indexed array goes to local memory).
const IQ4_KV0: u32 = 0xbfad9881u;
const IQ4_KV1: u32 = 0xf6eaddcfu;
const IQ4_KV2: u32 = 0x26190d01u;
const IQ4_KV3: u32 = 0x71594535u;

// The table values of four 4-bit indices.
fn iq4_values(q: vec4<u32>) -> vec4<f32> {
    let b2 = (q & vec4<u32>(4u)) != vec4<u32>(0u);
    let b3 = (q & vec4<u32>(8u)) != vec4<u32>(0u);
    let lo = select(vec4<u32>(IQ4_KV0), vec4<u32>(IQ4_KV1), b2);
    let hi = select(vec4<u32>(IQ4_KV2), vec4<u32>(IQ4_KV3), b2);
    let word = select(lo, hi, b3);
    let byte = word >> ((q & vec4<u32>(3u)) * 8u);
    return vec4<f32>(bitcast<vec4<i32>>(byte << vec4<u32>(24u)) >> vec4<u32>(24u));
}

// The codebook formats (IQ2_XXS … IQ1_M; their grids are in quant_grid_*.wgsl, each entry 16
// bits of codes, two entries per word, as rlx_ir::quant_grids describes).

// Entry e of a grid word array, as its 16 bits.
fn grid_entry(word: u32, e: u32) -> u32 {
    return (word >> (16u * (e & 1u))) & 0xffffu;
}

// ggml's ksigns: the 7-bit sign index i and an eighth bit that makes the minus signs even.
fn ksigns(i: u32) -> u32 {
    let s = i & 0x7fu;
    return s | ((countOneBits(s) & 1u) << 7u);
}

// ±1 for bits 0..4 (lo) and 4..8 (hi) of `signs`: −1 where the bit is set.
fn sign_lo(signs: u32) -> vec4<f32> {
    let bits = (vec4<u32>(signs) >> vec4<u32>(0u, 1u, 2u, 3u)) & vec4<u32>(1u);
    return vec4<f32>(1.0) - 2.0 * vec4<f32>(bits);
}

fn sign_hi(signs: u32) -> vec4<f32> {
    return sign_lo(signs >> 4u);
}

// The four 2-bit codes at bit `first` of a grid entry (values 0..4 of an IQ1/IQ2 entry at 0,
// 4..8 at 8).
fn codes2(entry: u32, first: u32) -> vec4<u32> {
    return (vec4<u32>(entry >> first) >> vec4<u32>(0u, 2u, 4u, 6u)) & vec4<u32>(3u);
}

// The four 3-bit codes of an IQ3 entry.
fn codes3(entry: u32) -> vec4<u32> {
    return (vec4<u32>(entry) >> vec4<u32>(0u, 3u, 6u, 9u)) & vec4<u32>(7u);
}

// IQ2 values of 2-bit codes: 8, 25, 43.
fn iq2_values(c: vec4<u32>) -> vec4<f32> {
    return vec4<f32>(vec4<u32>(8u) + 17u * c + (c >> vec4<u32>(1u)));
}

// An IQ2 piece: the 8 values of `entry`, times db, signed by `signs`.
fn iq2_piece(entry: u32, db: f32, signs: u32) -> Piece {
    let lo = db * iq2_values(codes2(entry, 0u)) * sign_lo(signs);
    let hi = db * iq2_values(codes2(entry, 8u)) * sign_hi(signs);
    return Piece(lo, hi);
}

// An IQ1 piece: dl · (v + delta) for the 8 values v (−1, 0, 1) of `entry`.
fn iq1_piece(entry: u32, dl: f32, delta: f32) -> Piece {
    let lo = vec4<f32>(codes2(entry, 0u)) - vec4<f32>(1.0);
    let hi = vec4<f32>(codes2(entry, 8u)) - vec4<f32>(1.0);
    return Piece(dl * (lo + delta), dl * (hi + delta));
}
