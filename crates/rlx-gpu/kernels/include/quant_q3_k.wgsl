// Q3_K decoder: super-blocks of 256 elements in 110 bytes: 32 bytes hmask, 64 bytes of low 2-bit
// values laid out as Q2_K's (bytes 32..96), 12 bytes of sixteen 6-bit scales (bytes 96..108), f16
// d at byte 108. Element e takes low bits 2g.. (g = (e / 32) % 4) of byte 32 + 32·(e / 128) +
// e % 32 and its third bit from bit e / 32 of hmask[e % 32]: q = low where that bit is set, low − 4
// where clear. Scale i (elements 16·i ..): low 4 bits from the low (i < 8) or high nibble of
// scale byte i % 8, top 2 bits from bits 2·(i / 4) of scale byte 8 + i % 4, stored + 32;
// x = (d · (s − 32)) · q.

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 110u;

fn decode(bb: u32, j: u32) -> Piece {
    let l = (j % 4u) * 8u;
    let q = bb + 32u + 32u * (j / 16u) + l;
    let shift = 2u * ((j / 4u) % 4u);
    let i = j / 2u;
    let low = (byte_at(bb + 96u + i % 8u) >> (4u * (i / 8u))) & 15u;
    let high = (byte_at(bb + 104u + i % 4u) >> (2u * (i / 4u))) & 3u;
    let dl = f16_at(bb + 108u) * f32(i32(low | (high << 4u)) - 32);
    let g = j / 4u;
    let q0 = vec4<i32>(bits4(bytes4(q), shift, 3u) + 4u * bits4(bytes4(bb + l), g, 1u)) - vec4<i32>(4);
    let q1 = vec4<i32>(bits4(bytes4(q + 4u), shift, 3u) + 4u * bits4(bytes4(bb + l + 4u), g, 1u)) - vec4<i32>(4);
    return Piece(dl * vec4<f32>(q0), dl * vec4<f32>(q1));
}
