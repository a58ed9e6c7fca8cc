// Attention for few query rows (a decode step): the keys are split into chunks of CH = 64,
// one workgroup per (chunk, query row), and each writes the partial result of its chunk; the
// combine kernel (attention_combine.wgsl) merges the chunks. With one query row per head the
// row-blocked kernels leave most of the GPU idle and walk every key in one workgroup; here the
// keys of a long cache are spread over many workgroups (flash-decoding).
//
// attention_common.wgsl (appended) has the bindings 0-5, the params,
// the mask kinds and the visibility rule; binding 6 holds the partials (read_write):
// per (row, chunk), [m, l, acc[0 .. dv]] at ((row · chunks) + chunk) · (2 + dv), where
// m = the max of the chunk's visible scores (−∞ when none), l = Σ exp(s − m) and
// acc = Σ exp(s − m) · v over the chunk's visible keys. The output binding is not written here.
//
// Workgroup (x: chunk, y: row = (b · Hq + h) · Sq + i, offset by bh_offset), CH threads:
// 1. q's row goes to shared memory (head dims up to 256); thread t scores key j0 + t when some
//    row can see it (key_range) and this row can (visible): scale, soft-cap, bias as the other
//    kernels;
// 2. tree reductions give m (NaN-propagating, as the reference) and l;
// 3. P·V in blocks of CH output columns: thread t sums over the chunk's keys for column t,
//    coalesced over the columns.
// Why 64 keys a workgroup and not 256 (as first written): a decode step has one query row per
// head, so the workgroup count is heads × chunks; with 256-key chunks Qwen2.5-0.5B's 14 heads
// over a 640-key cache made 42 workgroups for 132 SMs, and the step's attention took 28 µs a
// layer on the H200. Four times the chunks gives four times the workgroups for the same work
// each.
// A hidden key is skipped, never multiplied by 0, so a NaN in its k or v row stays out.
// Control flow is uniform: loop bounds depend on params and workgroup ids only.

const CH: u32 = 64u;

var<workgroup> q_s: array<f32, 256>;
var<workgroup> red: array<f32, CH>;
var<workgroup> p_s: array<f32, CH>;
var<workgroup> vis_s: array<u32, CH>;

@group(0) @binding(6) var<storage, read_write> part: array<f32>;

fn reduce_max(t: u32, v: f32) -> f32 {
    red[t] = v;
    workgroupBarrier();
    for (var s = CH / 2u; s > 0u; s >>= 1u) {
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
    for (var s = CH / 2u; s > 0u; s >>= 1u) {
        if (t < s) {
            red[t] = red[t] + red[t + s];
        }
        workgroupBarrier();
    }
    let l = red[0];
    workgroupBarrier();
    return l;
}

@compute @workgroup_size(64, 1, 1)
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

    for (var dd = t; dd < p.d; dd += CH) {
        q_s[dd] = q[q_base + dd];
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
            dot = fma(q_s[dd], k_load(k_row + dd).x, dot);
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

    let j0 = chunk * CH;
    for (var col = t; col < p.dv; col += CH) {
        var acc = 0.0;
        for (var kk = 0u; kk < CH; kk++) {
            if (vis_s[kk] != 0u) {
                acc = fma(p_s[kk], v_load(v_base + (j0 + kk) * p.v_ss + col).x, acc);
            }
        }
        part[base + 2u + col] = acc;
    }
}
