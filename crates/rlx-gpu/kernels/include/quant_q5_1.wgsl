// Q5_1 decoder: blocks of 32 elements in 24 bytes, an f16 scale d, an f16 minimum m, a u32 qh of
// fifth bits (bit i for element i), then 16 bytes of low nibbles laid out as Q4_0's (byte 8 + j:
// element j low, j + 16 high); x = q · d + m. Blocks are 6 words, so fields sit on word
// boundaries.

const BLOCK_ELEMS: u32 = 32u;
const BLOCK_BYTES: u32 = 24u;

fn decode(bb: u32, j: u32) -> Piece {
    let q = q4_nibbles(bb + 8u, j);
    let qh = w[(bb + 4u) >> 2u];
    let d = f16_at(bb);
    let m = f16_at(bb + 2u);
    let lo = vec4<f32>(q.lo | (bit_run4(qh, 8u * j) << vec4<u32>(4u)));
    let hi = vec4<f32>(q.hi | (bit_run4(qh, 8u * j + 4u) << vec4<u32>(4u)));
    return Piece(lo * d + m, hi * d + m);
}
