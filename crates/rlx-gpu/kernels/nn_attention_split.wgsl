// Attention for few query rows (a decode step): the keys are split into chunks of CH = 256,
// one workgroup per (chunk, query row), and each writes the partial result of its chunk; the
// combine kernel (nn_attention_combine.wgsl) merges the chunks. With one query row per head the
// row-blocked kernels leave most of the GPU idle and walk every key in one workgroup; here the
// keys of a long cache are spread over many workgroups (flash-decoding).
//
// Driver defines: PARAMS. attention_common.wgsl (appended) has the bindings 0-5, the params,
// the mask kinds and the visibility rule; binding 6 holds the partials (read_write):
// per (row, chunk), [m, l, acc[0 .. dv]] at ((row · chunks) + chunk) · (2 + dv), where
// m = the max of the chunk's visible scores (−∞ when none), l = Σ exp(s − m) and
// acc = Σ exp(s − m) · v over the chunk's visible keys. The output binding is not written here.
//
// Workgroup (x: chunk, y: row = (b · Hq + h) · Sq + i, offset by bh_offset), 256 threads:
// 1. q's row goes to shared memory (head dims up to 256); thread t scores key j0 + t when some
//    row can see it (key_range) and this row can (visible): scale, soft-cap, bias as the other
//    kernels;
// 2. tree reductions give m (NaN-propagating, as the reference) and l;
// 3. P·V in blocks of 64 output columns: thread t sums over keys t / 64, t / 64 + 4, … of
//    column t % 64, coalesced over the columns, and four partial sums are added.
// A hidden key is skipped, never multiplied by 0, so a NaN in its k or v row stays out.
// Control flow is uniform: loop bounds depend on params and workgroup ids only.

const CH: u32 = 256u;

var<workgroup> q_s: array<f32, 256>;
var<workgroup> red: array<f32, 256>;
var<workgroup> p_s: array<f32, 256>;
var<workgroup> vis_s: array<u32, 256>;
var<workgroup> acc_s: array<f32, 256>;

@group(0) @binding(6) var<storage, read_write> part: array<f32>;

fn reduce_max(t: u32, v: f32) -> f32 {
    red[t] = v;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s >>= 1u) {
        if (t < s) {
            red[t] = max_nan(red[t], red[t + s]);
        }
        workgroupBarrier();
    }
    let m = red[0];
    workgroupBarrier();
    return m;
}

fn reduce_sum(t: u32, v: f32) -> f32 {
    red[t] = v;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s >>= 1u) {
        if (t < s) {
            red[t] = red[t] + red[t + s];
        }
        workgroupBarrier();
    }
    let l = red[0];
    workgroupBarrier();
    return l;
}

@compute @workgroup_size(256, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let chunk = wid.x;
    let chunks = nwg.x;
    let row = wid.y + p.bh_offset;
    let i = row % p.sq;
    let bh = row / p.sq;
    let b = bh / p.hq;
    let h = bh % p.hq;
    let kh = h / p.group;
    let q_base = b * p.q_sb + i * p.q_ss + h * p.q_sh;
    let k_base = b * p.k_sb + kh * p.k_sh;
    let v_base = b * p.v_sb + kh * p.v_sh;
    let base = (row * chunks + chunk) * (2u + p.dv);

    if (t < p.d) {
        q_s[t] = q[q_base + t];
    }
    workgroupBarrier();

    let range = key_range(b, i, 1u);
    let j = chunk * CH + t;
    var vis = false;
    var s = 0.0;
    if (j >= range.x && j < range.y && visible(b, i, j)) {
        var dot = 0.0;
        let k_row = k_base + j * p.k_ss;
        for (var dd = 0u; dd < p.d; dd++) {
            dot = fma(q_s[dd], k[k_row + dd], dot);
        }
        s = scored(dot, b, h, i, j, true);
        vis = true;
    }
    let neg_inf = bitcast<f32>(NEG_INF_BITS);
    let m = reduce_max(t, select(neg_inf, s, vis));
    var pv = 0.0;
    if (vis && !is_neg_inf(m)) {
        pv = exp(s - m);
    }
    p_s[t] = pv;
    vis_s[t] = select(0u, 1u, vis);
    let l = reduce_sum(t, pv);
    if (t == 0u) {
        part[base] = m;
        part[base + 1u] = l;
    }

    let g = t / 64u;
    let lane = t % 64u;
    let j0 = chunk * CH;
    for (var c0 = 0u; c0 < p.dv; c0 += 64u) {
        let col = c0 + lane;
        var acc = 0.0;
        if (col < p.dv) {
            for (var kk = g; kk < CH; kk += 4u) {
                if (vis_s[kk] != 0u) {
                    acc = fma(p_s[kk], v[v_base + (j0 + kk) * p.v_ss + col], acc);
                }
            }
        }
        acc_s[t] = acc;
        workgroupBarrier();
        if (t < 64u && col < p.dv) {
            part[base + 2u + col] = acc_s[t] + acc_s[t + 64u] + acc_s[t + 128u] + acc_s[t + 192u];
        }
        workgroupBarrier();
    }
}
