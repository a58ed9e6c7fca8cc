// The 6-bit scale and min of sub-block s (0..8) of a Q4_K / Q5_K super-block at byte bb: 12
// bytes at bb + 4. Bytes 0..4 hold scales 0..4 in their low 6 bits, bytes 4..8 mins 0..4; for
// s ≥ 4 the low 4 bits come from the nibbles of byte 8 + s − 4 (scale low, min high) and the
// top 2 bits from the top of bytes s − 4 (scale) and s (min). Returns (d · scale, dmin · min).
fn k_factors(bb: u32, s: u32) -> vec2<f32> {
    let w0 = bytes4(bb + 4u);
    let w1 = bytes4(bb + 8u);
    let t = (s % 4u) * 8u;
    var sc: u32;
    var mn: u32;
    if (s < 4u) {
        sc = (w0 >> t) & 63u;
        mn = (w1 >> t) & 63u;
    } else {
        let w2 = bytes4(bb + 12u);
        sc = ((w2 >> t) & 15u) | (((w0 >> (t + 6u)) & 3u) << 4u);
        mn = ((w2 >> (t + 4u)) & 15u) | (((w1 >> (t + 6u)) & 3u) << 4u);
    }
    return vec2<f32>(f16_at(bb) * f32(sc), f16_at(bb + 2u) * f32(mn));
}
