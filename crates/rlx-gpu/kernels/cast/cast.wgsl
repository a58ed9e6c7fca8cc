// Casts from or to the packed dtypes: f16 and bf16 (two to a 32-bit word) and u8 (four to a
// word), from and to every stored dtype (f32, i32, u32, Bool as a 0/1 word, and each other).
// Casts between 32-bit dtypes are unary.wgsl's.
//
// Variant defines: FROM and TO (D_* constants below).
// Bindings: 0 = x (read), 1 = out (read_write). Params: CastParams.
//
// Layout: element i of a 2-byte dtype is bits 16·(i % 2) .. of word i / 2, of a 1-byte dtype
// bits 8·(i % 4) .. of word i / 4 (rlx-gpu's convert.rs: native order on little-endian hosts).
// Each invocation writes one whole output word, packing the 1, 2 or 4 elements it holds: WGSL
// has no 8- or 16-bit stores, and two invocations writing halves of one word would race. Past
// the last element the word's remaining lanes are written as zero.
//
// Why f16 is converted with integer arithmetic, not `f16` values or pack2x16float: the result
// must be rlx-cpu's bit for bit (round to nearest even, subnormals kept, NaN quiet with its top
// payload bits), and WGSL leaves the rounding of pack2x16float and of f32 → f16 conversion to
// the implementation, and lets devices flush subnormals. Shifts and compares on u32 words give
// the same bits everywhere, and need no shader-f16 support.
//
// Rules (rlx-cpu's, see its cast):
// - f16 and bf16 widen to f32 exactly; every float source is then an f32 word;
// - to f16 / bf16: round to nearest, ties to even, once; overflow gives ±inf; NaN stays NaN
//   (quiet, sign and top payload bits kept, as the `half` crate does);
// - integer → f16 / bf16 is rounded once from the integer (never through f32, whose rounding
//   would make a second, wrong tie for bf16);
// - float → integer truncates toward zero and saturates (u8 to 0..=255); NaN → 0;
// - integer → integer saturates (negative → 0 for u32 and u8);
// - → Bool is `x != 0` (NaN is nonzero, −0 is zero); Bool → anything is 0 or 1.

// D_F32 … D_BOOL: generated from Rust (src/catalog/consts_wgsl.rs: cast_dtypes).

const FROM: u32 = {{FROM}};
const TO: u32 = {{TO}};
const WG: u32 = 256u;

// p: CastParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;

// Bits per element of dtype `d` in storage.
fn bits_of(d: u32) -> u32 {
    if (d == D_F16 || d == D_BF16) {
        return 16u;
    }
    if (d == D_U8) {
        return 8u;
    }
    return 32u;
}

fn is_float(d: u32) -> bool {
    return d == D_F32 || d == D_F16 || d == D_BF16;
}

// Element i of x, zero-extended to a word.
fn load(i: u32) -> u32 {
    let bits = bits_of(FROM);
    if (bits == 32u) {
        return x[i];
    }
    let per = 32u / bits;
    let lane = i % per;
    return (x[i / per] >> (lane * bits)) & ((1u << bits) - 1u);
}

// ---- floats ----

// f16_to_f32_bits is in the prelude (the matrix-vector kernel reads f16 weights with it too).

fn bf16_to_f32_bits(b: u32) -> u32 {
    if ((b & 0x7fffu) > 0x7f80u) {
        return (b | 0x0040u) << 16u;
    }
    return b << 16u;
}

// shift_round, f32_to_f16_bits and f32_to_bf16_bits are in include/float_narrow.wgsl (the
// narrowing state write uses them too).

// ---- the conversion of one element ----

// x's element (raw bits) as f32 bits; FROM is a float dtype.
fn widen_float(raw: u32) -> u32 {
    if (FROM == D_F16) {
        return f16_to_f32_bits(raw);
    }
    if (FROM == D_BF16) {
        return bf16_to_f32_bits(raw);
    }
    return raw;
}

fn from_float(w: u32) -> u32 {
    if (TO == D_F32) {
        return w;
    } else if (TO == D_F16) {
        return f32_to_f16_bits(w);
    } else if (TO == D_BF16) {
        return f32_to_bf16_bits(w);
    } else if (TO == D_I32) {
        return f32_to_i32(w);
    } else if (TO == D_U32) {
        return f32_to_u32(w);
    } else if (TO == D_U8) {
        return f32_to_u8(w);
    }
    return select(0u, 1u, (w & 0x7fffffffu) != 0u);
}

// An integer of magnitude `mag` (negative when `neg`; ≤ 2^31 then) converted to TO.
fn from_int(neg: bool, mag: u32) -> u32 {
    if (TO == D_F32) {
        let f = u32_to_f32(mag);
        return bitcast<u32>(select(f, -f, neg));
    } else if (TO == D_F16) {
        let sign = select(0u, 0x8000u, neg);
        // Below 65520 the magnitude is exact in f32 and f32_to_f16_bits rounds once; at or above
        // it the result is infinite either way.
        return sign | f32_to_f16_bits(bitcast<u32>(f32(min(mag, 65520u))));
    } else if (TO == D_BF16) {
        let sign = select(0u, 0x8000u, neg);
        // Rounded once to bf16's 8 significant bits; the f32 holding it is exact, so its top
        // half is the bf16.
        return sign | (bitcast<u32>(u32_round_to_f32(mag, 8u)) >> 16u);
    } else if (TO == D_I32) {
        return select(min(mag, 0x7fffffffu), 0u - mag, neg);
    } else if (TO == D_U32) {
        return select(mag, 0u, neg);
    } else if (TO == D_U8) {
        return select(min(mag, 255u), 0u, neg);
    }
    return select(0u, 1u, mag != 0u);
}

fn convert(raw: u32) -> u32 {
    if (is_float(FROM)) {
        return from_float(widen_float(raw));
    }
    if (FROM == D_I32) {
        let neg = (raw & 0x80000000u) != 0u;
        return from_int(neg, select(raw, 0u - raw, neg));
    }
    if (FROM == D_BOOL) {
        return from_int(false, select(0u, 1u, raw != 0u));
    }
    // u32 and u8 are magnitudes already.
    return from_int(false, raw);
}

// One invocation per item; the entry point is include/flat_main.wgsl.
fn invocations() -> u32 {
    return p.words;
}

fn element(w: u32) {
    let bits = bits_of(TO);
    let per = 32u / bits;
    let mask = 0xffffffffu >> (32u - bits);
    var word = 0u;
    for (var k = 0u; k < per; k++) {
        let i = w * per + k;
        if (i < p.numel) {
            word |= (convert(load(i)) & mask) << (k * bits);
        }
    }
    out[w] = word;
}
