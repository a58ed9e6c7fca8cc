// f32 → f16 and f32 → bf16 bits by integer arithmetic, rounding to nearest even as rlx-cpu
// does (subnormals kept, NaN quiet with its top payload bits): WGSL leaves the rounding of
// pack2x16float and of f32 → f16 conversion to the implementation. Used by cast.wgsl and by the
// narrowing state write (write_rows.wgsl), which rlx-gpu append it to.

// Round to nearest even of the word `m` shifted right by `shift` (1 ≤ shift ≤ 31).
fn shift_round(m: u32, shift: u32) -> u32 {
    let q = m >> shift;
    let rem = m & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    return q + select(0u, 1u, rem > half || (rem == half && (q & 1u) == 1u));
}

fn f32_to_f16_bits(w: u32) -> u32 {
    let sign = (w >> 16u) & 0x8000u;
    let a = w & 0x7fffffffu;
    if (a > 0x7f800000u) {
        return sign | 0x7e00u | ((a >> 13u) & 0x3ffu);
    }
    // 65520 (0x477ff000) is the tie between f16's largest finite value and 2^16: it and
    // everything above it round to infinity.
    if (a >= 0x477ff000u) {
        return sign | 0x7c00u;
    }
    if (a >= 0x38800000u) {
        // Normal in f16 (≥ 2^-14): rebias the exponent (127 → 15) and round 13 bits off. A
        // carry out of the significand bumps the exponent, which is what rounding up means.
        return sign | shift_round(a - 0x38000000u, 13u);
    }
    // Below 2^-25 (half the smallest subnormal; 2^-25 itself is a tie, rounded to even 0).
    if (a <= 0x33000000u) {
        return sign;
    }
    // Subnormal in f16: the value in units of 2^-24 is (1.m) · 2^(e - 127 + 24), i.e. the
    // 24-bit significand shifted right by 126 - e (14..24 for e in 102..112).
    let e = a >> 23u;
    let sig = (a & 0x7fffffu) | 0x800000u;
    return sign | shift_round(sig, 126u - e);
}

fn f32_to_bf16_bits(w: u32) -> u32 {
    if ((w & 0x7fffffffu) > 0x7f800000u) {
        return (w >> 16u) | 0x0040u;
    }
    // Same exponent range: round 16 bits off; a carry into the exponent is correct rounding
    // (up to infinity from just below f32::MAX's bf16 tie).
    return shift_round(w, 16u);
}

