// Writes rows into a state buffer in place, at an offset read at run time (a KV cache append).
//
// Bindings: 0 = rows (read), 1 = offset (read, i32 [1] or i32 [outer]), 2 = state (read_write).
// Params: WriteRowsParams.
//
// The state is seen as [outer, cap, inner] 32-bit words and the rows as [outer, n, inner]:
// state[(o·cap + offset + t)·inner + j] = rows[(o·n + t)·inner + j]. A row that would land at or
// past cap, or before 0, is dropped: the state is never written out of bounds. The offset of block
// o is offset[o · offset_stride]: stride 0 gives every block offset[0], stride 1 its own (one
// offset per sequence of a batched KV cache).
//
// Variant define NARROW: 0 writes the rows' words as they are; 1 (f16) and 2 (bf16) read f32 rows
// and write each state word from two of them, rounded (include/float_narrow.wgsl, appended):
// a KV cache held in f16 takes its new f32 keys without a cast launch before the write. Words
// are counted in the state's units either way (inner and numel are in words).

const WG: u32 = 256u;
const NARROW: u32 = {{NARROW}}u;

// p: WriteRowsParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

@group(0) @binding(0) var<storage, read> rows: array<u32>;
@group(0) @binding(1) var<storage, read> offset: array<i32>;
@group(0) @binding(2) var<storage, read_write> state: array<u32>;

// One invocation per output element; the entry point is include/flat_main.wgsl.
fn invocations() -> u32 {
    return p.numel;
}

fn element(i: u32) {
    let j = i % p.inner;
    let row = i / p.inner;
    let t = row % p.n;
    let o = row / p.n;
    let at = offset[o * p.offset_stride];
    // at + t in i32 could wrap for an offset near either end; work in the unsigned domain.
    var pos = 0u;
    if (at < 0) {
        let back = u32(-(at + 1)) + 1u; // |at|, also for i32::MIN
        if (t < back) {
            return;
        }
        pos = t - back;
    } else {
        if (u32(at) >= p.cap || t >= p.cap - u32(at)) {
            return;
        }
        pos = u32(at) + t;
    }
    if (pos >= p.cap) {
        return;
    }
    state[(o * p.cap + pos) * p.inner + j] = row_word(i);
}

// Word i of the rows as the state stores it.
fn row_word(i: u32) -> u32 {
    if (NARROW == 1u) {
        return f32_to_f16_bits(rows[2u * i]) | (f32_to_f16_bits(rows[2u * i + 1u]) << 16u);
    }
    if (NARROW == 2u) {
        return f32_to_bf16_bits(rows[2u * i]) | (f32_to_bf16_bits(rows[2u * i + 1u]) << 16u);
    }
    return rows[i];
}
