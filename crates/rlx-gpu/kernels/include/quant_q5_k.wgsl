// Q5_K decoder: as Q4_K (quant_q4_k.wgsl) in 176 bytes, with 32 bytes of fifth bits at byte 16
// (bit s of byte l is the fifth bit of element l of sub-block s) and the nibbles at byte 48.

const BLOCK_ELEMS: u32 = 256u;
const BLOCK_BYTES: u32 = 176u;

fn decode(bb: u32, j: u32) -> Piece {
    let s = j / 4u;
    let l = (j % 4u) * 8u;
    let q = bb + 48u + (s / 2u) * 32u + l;
    let h = bb + 16u + l;
    let shift = (s % 2u) * 4u;
    let f = k_factors(bb, s);
    let q0 = nib4(bytes4(q), shift) | (bits4(bytes4(h), s, 1u) << vec4<u32>(4u));
    let q1 = nib4(bytes4(q + 4u), shift) | (bits4(bytes4(h + 4u), s, 1u) << vec4<u32>(4u));
    return Piece(f.x * vec4<f32>(q0) - f.y, f.x * vec4<f32>(q1) - f.y);
}
