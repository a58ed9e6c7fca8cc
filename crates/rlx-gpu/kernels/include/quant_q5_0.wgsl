// Q5_0 decoder: blocks of 32 elements in 22 bytes, an f16 scale d, a u32 qh of fifth bits (bit i
// for element i; bytes 2..6, not word-aligned), then 16 bytes of low nibbles laid out as
// Q4_0's (byte 6 + j: element j low, j + 16 high); x = (q − 16) · d.

const BLOCK_ELEMS: u32 = 32u;
const BLOCK_BYTES: u32 = 22u;

fn decode(bb: u32, j: u32) -> Piece {
    let q = bb + 6u + (j % 2u) * 8u;
    let shift = (j / 2u) * 4u;
    let d = f16_at(bb);
    let qh = bytes4(bb + 2u);
    let q0 = nib4(bytes4(q), shift) | (bit_run4(qh, 8u * j) << vec4<u32>(4u));
    let q1 = nib4(bytes4(q + 4u), shift) | (bit_run4(qh, 8u * j + 4u) << vec4<u32>(4u));
    let lo = vec4<f32>(vec4<i32>(q0) - vec4<i32>(16));
    let hi = vec4<f32>(vec4<i32>(q1) - vec4<i32>(16));
    return Piece(d * lo, d * hi);
}
