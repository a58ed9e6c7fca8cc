// What the three selective-scan kernels share (appended after each of them). See
// ssm_scan_chunk.wgsl for the design.

// p: ScanParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

// States one invocation keeps in registers at a time; N is walked in blocks of NB.
const NB: u32 = 16u;
const WG: u32 = 64u;
// Steps whose u and δ an invocation loads together (8 f32: one 32-byte sector).
const TILE: u32 = 8u;

// The three kernels run one invocation per id below p.threads (their entry point is
// flat_main.wgsl): the kernel's `element`.
fn invocations() -> u32 {
    return p.threads;
}

// Where the chunk of invocation `id` of phases 1 and 3 (one per (b, d, chunk c)) lies.
struct ScanChunk {
    // The channel.
    d: u32,
    // Start of its u and δ rows [B, D, L].
    x0: u32,
    // Start of its group's Bm and C [B, G, N, L].
    bc0: u32,
    // Its steps t0..t1.
    t0: u32,
    t1: u32,
    // Start of its states in hend / carry [B, D, chunks, N].
    state0: u32,
    // Its index in dtsum [B, D, chunks].
    bdc: u32,
}

fn scan_chunk_of(id: u32) -> ScanChunk {
    let d = id % p.d;
    let c = (id / p.d) % p.chunks;
    let b = id / (p.d * p.chunks);
    let g = d / (p.d / p.groups);
    let x0 = (b * p.d + d) * p.l;
    let bc0 = (b * p.groups + g) * p.n * p.l;
    let t0 = c * p.chunk;
    let t1 = min(t0 + p.chunk, p.l);
    let bdc = (b * p.d + d) * p.chunks + c;
    return ScanChunk(d, x0, bc0, t0, t1, bdc * p.n, bdc);
}

// PyTorch's softplus (threshold 20), with log1p done stably: log(1 + e) · e / ((1 + e) − 1)
// is exact to a few ulps where 1 + e rounds (Goldberg's trick), and e itself where 1 + e == 1.
fn softplus_f(x: f32) -> f32 {
    if (x > 20.0) {
        return x;
    }
    let e = exp(x);
    let u = 1.0 + e;
    if (u == 1.0) {
        return e;
    }
    return log(u) * (e / (u - 1.0));
}

fn step_dt(raw: f32) -> f32 {
    return select(raw, softplus_f(raw), p.softplus != 0u);
}
