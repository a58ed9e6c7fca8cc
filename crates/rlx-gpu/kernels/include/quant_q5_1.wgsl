// Q5_1 decoder: blocks of 32 elements in 24 bytes, an f16 scale d, an f16 minimum m, a u32 qh of
// fifth bits (bit i for element i), then 16 bytes of low nibbles laid out as Q4_0's (byte 8 + j:
// element j low, j + 16 high); x = q · d + m. Blocks are 6 words, so fields sit on word
// boundaries.

const BLOCK_ELEMS: u32 = 32u;
const BLOCK_BYTES: u32 = 24u;

fn decode(bb: u32, j: u32) -> Piece {
    let q = (bb + 8u + (j % 2u) * 8u) >> 2u;
    let shift = (j / 2u) * 4u;
    let d = f16_at(bb);
    let m = f16_at(bb + 2u);
    let qh = w[(bb + 4u) >> 2u];
    let q0 = nib4(w[q], shift) | (bit_run4(qh, 8u * j) << vec4<u32>(4u));
    let q1 = nib4(w[q + 1u], shift) | (bit_run4(qh, 8u * j + 4u) << vec4<u32>(4u));
    return Piece(vec4<f32>(q0) * d + m, vec4<f32>(q1) * d + m);
}
