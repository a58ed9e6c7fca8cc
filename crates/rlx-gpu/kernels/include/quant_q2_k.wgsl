// Q2_K decoder: super-blocks of 256 elements in 84 bytes: 16 scale bytes (byte i: the 4-bit
// scale of elements 16·i .. 16·i + 16 in its low nibble, their 4-bit min in its high nibble), 64
// bytes of 2-bit values, f16 d at byte 80, f16 dmin at 82. Half h = e / 128 of the values uses
// bytes 16 + 32·h .., its group g = (e / 32) % 4 bits 2g, 2g + 1 of byte e % 32;
// x = (d · scale) · q − dmin · min. Blocks are 21 words, so fields sit on word boundaries.

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 84u;

fn decode(bb: u32, j: u32) -> Piece {
    let q = (bb + 16u + 32u * (j / 16u) + (j % 4u) * 8u) >> 2u;
    let shift = 2u * ((j / 4u) % 4u);
    let sc = byte_at(bb + j / 2u);
    let dl = f16_at(bb + 80u) * f32(sc & 15u);
    let ml = f16_at(bb + 82u) * f32(sc >> 4u);
    let q0 = vec4<f32>(bits4(w[q], shift, 3u));
    let q1 = vec4<f32>(bits4(w[q + 1u], shift, 3u));
    return Piece(dl * q0 - ml, dl * q1 - ml);
}
