// Selective scan, phase 3 of 3 (design in ssm_scan_chunk.wgsl): one invocation per
// (b, d, chunk c) rescans its chunk from the state entering it (hend after phase 2) and writes
// y[b, d, t] = Σ_n C[g, n, t] h_t[n] for the chunk's steps. N is walked in blocks of NB states
// held in registers; the first block writes y, each later one adds its share (the same
// invocation, so in program order).
//
// Bindings: u, delta, A, Bm, C, carry (read), y (written).

@group(0) @binding(0) var<storage, read> u: array<f32>;
@group(0) @binding(1) var<storage, read> delta: array<f32>;
@group(0) @binding(2) var<storage, read> a: array<f32>;
@group(0) @binding(3) var<storage, read> bm: array<f32>;
@group(0) @binding(4) var<storage, read> cm: array<f32>;
@group(0) @binding(5) var<storage, read> carry: array<f32>;
@group(0) @binding(6) var<storage, read_write> y: array<f32>;
// p: ScanParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

// One invocation (its id below p.threads); the entry point is include/flat_main.wgsl.
fn element(id: u32) {
    let s = scan_chunk_of(id);
    let d = s.d;
    let x0 = s.x0;
    let bc0 = s.bc0;
    let t0 = s.t0;
    let t1 = s.t1;
    let in0 = s.state0;
    for (var n0 = 0u; n0 < p.n; n0 += NB) {
        var h: array<f32, 16>;
        var av: array<f32, 16>;
        for (var j = 0u; j < NB; j++) {
            let nj = min(n0 + j, p.n - 1u);
            let live = n0 + j < p.n;
            h[j] = select(0.0, carry[in0 + nj], live);
            av[j] = select(0.0, a[d * p.n + nj], live);
        }
        for (var tt = t0; tt < t1; tt += TILE) {
            // As in phase 1: TILE steps of u and δ at once, and TILE outputs written together.
            var dts: array<f32, 8>;
            var dus: array<f32, 8>;
            var ys: array<f32, 8>;
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
                var acc = 0.0;
                for (var j = 0u; j < NB; j++) {
                    let nj = min(n0 + j, p.n - 1u);
                    let live = n0 + j < p.n;
                    let bv = select(0.0, bm[bc0 + nj * p.l + t], live);
                    let cv = select(0.0, cm[bc0 + nj * p.l + t], live);
                    h[j] = exp(dts[i] * av[j]) * h[j] + dus[i] * bv;
                    acc = fma(cv, h[j], acc);
                }
                ys[i] = acc;
            }
            for (var i = 0u; i < TILE && tt + i < t1; i++) {
                if (n0 == 0u) {
                    y[x0 + tt + i] = ys[i];
                } else {
                    y[x0 + tt + i] += ys[i];
                }
            }
        }
    }
}
