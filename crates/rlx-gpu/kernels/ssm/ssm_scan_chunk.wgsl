// Selective scan (Mamba-1), phase 1 of 3: each chunk of the sequence scanned from a zero state.
//
// The op: u, delta [B, D, L], A [D, N], Bm and C [B, G, N, L] (channel d reads group
// d / (D / G)); δ = softplus(delta) or delta; per (b, d, n) from h = 0:
//   h_t = exp(δ_t A[d, n]) h_{t-1} + δ_t Bm[n, t] u_t,   y_t = Σ_n C[n, t] h_t.
//
// Design (three launches, chunked along L so that a long sequence runs in parallel):
// 1. ssm_scan_chunk (this file): one invocation per (b, d, chunk c). It scans its chunk from a
//    zero state and writes the chunk's end state hend[b, d, c, :] and Σ δ over the chunk
//    (dtsum[b, d, c]). The chunk's decay product exp(A Σ δ) is all the carry needs: h over a
//    chunk is exp(A Σδ) · h_start + (the zero-start scan), because the recurrence is linear.
// 2. ssm_scan_carry: one invocation per (b, d, n) walks the chunks in order and replaces each
//    hend[c] by the state entering chunk c (carry_0 = 0, carry_{c+1} = exp(A Σδ_c) carry_c +
//    hend_c), and writes the state after the last chunk (the op's last-state output).
// 3. ssm_scan_out: one invocation per (b, d, c) rescans its chunk from its carry and writes y.
//    The sum over n stays in the invocation (its NB states are registers), so no shared memory
//    and no subgroup operation is needed: the kernels behave the same with subgroups of 8
//    (lavapipe) or 32 (H200), and take no shared memory.
// Each invocation holds NB = 16 states in registers (Mamba's N) and walks larger N in blocks
// of NB: phase 3 adds each block's share of y into the output it wrote for the block before.
// Workgroups of 64 invocations are 64 consecutive channels of one (b, c): they read the same
// Bm[:, t] and C[:, t] (one broadcast load per group) and A rows side by side. u and δ are
// [B, D, L], so neighbouring invocations read addresses L apart: each loads TILE = 8 steps of
// its channel back to back (a full 32-byte sector) before computing them. Work is
// O(B·D·L·N) twice (phases 1 and 3); phase 2 is O(B·D·N·L/chunk).
//
// Bindings: u, delta, A, Bm (read), hend [B, D, chunks, N] and dtsum [B, D, chunks] (written).

@group(0) @binding(0) var<storage, read> u: array<f32>;
@group(0) @binding(1) var<storage, read> delta: array<f32>;
@group(0) @binding(2) var<storage, read> a: array<f32>;
@group(0) @binding(3) var<storage, read> bm: array<f32>;
@group(0) @binding(4) var<storage, read_write> hend: array<f32>;
@group(0) @binding(5) var<storage, read_write> dtsum: array<f32>;
// p: ScanParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

// One invocation (its id below p.threads); the entry point is include/flat_main.wgsl.
fn element(id: u32) {
    let s = scan_chunk_of(id);
    let d = s.d;
    let x0 = s.x0;
    let bc0 = s.bc0;
    let t0 = s.t0;
    let t1 = s.t1;
    let out0 = s.state0;
    var sum = 0.0;
    for (var n0 = 0u; n0 < p.n; n0 += NB) {
        var h: array<f32, 16>;
        var av: array<f32, 16>;
        for (var j = 0u; j < NB; j++) {
            h[j] = 0.0;
            // States past N get A = 0 and Bm = 0: they stay 0 and are never written.
            av[j] = select(0.0, a[d * p.n + min(n0 + j, p.n - 1u)], n0 + j < p.n);
        }
        for (var tt = t0; tt < t1; tt += TILE) {
            // TILE steps of u and δ read back to back: each invocation uses a whole 32-byte
            // sector of its channel at once instead of relying on it staying cached.
            var dts: array<f32, 8>;
            var dus: array<f32, 8>;
            // Constant trip counts (guarded), so that the tile arrays stay in registers.
            for (var i = 0u; i < TILE; i++) {
                let t = min(tt + i, t1 - 1u);
                dts[i] = step_dt(delta[x0 + t]);
                dus[i] = dts[i] * u[x0 + t];
            }
            for (var i = 0u; i < TILE; i++) {
                let t = tt + i;
                if (t >= t1) {
                    break;
                }
                for (var j = 0u; j < NB; j++) {
                    let nj = min(n0 + j, p.n - 1u);
                    let bv = select(0.0, bm[bc0 + nj * p.l + t], n0 + j < p.n);
                    h[j] = exp(dts[i] * av[j]) * h[j] + dus[i] * bv;
                }
                if (n0 == 0u) {
                    sum += dts[i];
                }
            }
        }
        for (var j = 0u; j < NB && n0 + j < p.n; j++) {
            hend[out0 + n0 + j] = h[j];
        }
    }
    // N ≥ 1 whenever this kernel runs (an empty A is a fill), so the first block summed δ.
    dtsum[s.bdc] = sum;
}
