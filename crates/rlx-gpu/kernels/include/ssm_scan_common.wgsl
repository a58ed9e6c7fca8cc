// What the three selective-scan kernels share (appended after each of them). See
// ssm_scan_chunk.wgsl for the design.

struct ScanParams {
    batch: u32,
    d: u32,
    l: u32,
    n: u32,
    groups: u32,
    chunk: u32,
    chunks: u32,
    softplus: u32,
    // Threads the launch needs: B · D · chunks (chunk and out kernels) or B · D · N (carry).
    threads: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

// States one invocation keeps in registers at a time; N is walked in blocks of NB.
const NB: u32 = 16u;
const WG: u32 = 64u;
// Steps whose u and δ an invocation loads together (8 f32: one 32-byte sector).
const TILE: u32 = 8u;

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
