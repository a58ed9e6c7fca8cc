// IQ4_XS decoder: super-blocks of 256 elements in 136 bytes: f16 d, u16 scales_h, 4 bytes
// scales_l, 128 bytes of 4-bit indices. Sub-block s (32 elements, 0..8) has the 6-bit scale
// ls = (scales_l[s / 2] >> 4·(s % 2)) & 15 | ((scales_h >> 2s) & 3) << 4 and its indices at
// bytes 8 + 16·s .., laid out as Q4_0's; x = (d · (ls − 32)) · kv[q] (iq4_values in
// quant_common.wgsl). Blocks are 34 words, so fields sit on word boundaries.

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 136u;

fn decode(bb: u32, j: u32) -> Piece {
    let s = j / 4u;
    let q = q4_nibbles(bb + 8u + 16u * s, j % 4u);
    let low = (byte_at(bb + 4u + s / 2u) >> (4u * (s % 2u))) & 15u;
    let high = (u16_at(bb + 2u) >> (2u * s)) & 3u;
    let dl = f16_at(bb) * f32(i32(low | (high << 4u)) - 32);
    return Piece(dl * iq4_values(q.lo), dl * iq4_values(q.hi));
}
