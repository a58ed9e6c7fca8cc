// Q5_0 decoder: blocks of 32 elements in 22 bytes, an f16 scale d, a u32 qh of fifth bits (bit i
// for element i; bytes 2..6, not word-aligned), then 16 bytes of low nibbles laid out as
// Q4_0's (byte 6 + j: element j low, j + 16 high); x = (q − 16) · d.

const BLOCK_ELEMS: u32 = 32u;
const BLOCK_BYTES: u32 = 22u;

fn decode(bb: u32, j: u32) -> Piece {
    let q = q4_nibbles(bb + 6u, j);
    let qh = bytes4(bb + 2u);
    let d = f16_at(bb);
    let lo = vec4<i32>(q.lo | (bit_run4(qh, 8u * j) << vec4<u32>(4u))) - vec4<i32>(16);
    let hi = vec4<i32>(q.hi | (bit_run4(qh, 8u * j + 4u) << vec4<u32>(4u))) - vec4<i32>(16);
    return Piece(d * vec4<f32>(lo), d * vec4<f32>(hi));
}
