// IQ4_NL decoder: blocks of 32 elements in 18 bytes, an f16 scale d, then 16 bytes of 4-bit
// indices laid out as Q4_0's (byte 2 + j: element j low nibble, j + 16 high); x = d · kv[q],
// with kv the 16 non-linear values (iq4_values in quant_common.wgsl).

const BLOCK_ELEMS: u32 = 32u;
const BLOCK_BYTES: u32 = 18u;

fn decode(bb: u32, j: u32) -> Piece {
    let q = q4_nibbles(bb + 2u, j);
    let d = f16_at(bb);
    return Piece(d * iq4_values(q.lo), d * iq4_values(q.hi));
}
