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
{{PARAMS}} p: ScanParams;

@compute @workgroup_size(64, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let id = linear_id(wid, groups, WG, lid);
    if (id >= p.threads) {
        return;
    }
    let d = id % p.d;
    let c = (id / p.d) % p.chunks;
    let b = id / (p.d * p.chunks);
    let g = d / (p.d / p.groups);
    let x0 = (b * p.d + d) * p.l;
    let bc0 = (b * p.groups + g) * p.n * p.l;
    let t0 = c * p.chunk;
    let t1 = min(t0 + p.chunk, p.l);
    let in0 = ((b * p.d + d) * p.chunks + c) * p.n;
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
