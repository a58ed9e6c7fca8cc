// Gated delta rule (GatedDeltaNet), the recurrence of fla's naive_recurrent_gated_delta_rule:
// q, k [B, L, H, K], v [B, L, H, V], g (log decay) and beta [B, L, H]; per (b, h) a state
// S [K, V] from zero, and for each step t:
//   S = exp(g_t) S;   S += k_t ⊗ (beta_t (v_t − Sᵀ k_t));   o_t = Sᵀ (scale q_t).
//
// Design: one workgroup of VB = 32 invocations per (b, h, block of VB columns of S). Column j
// of S only ever mixes with itself (Sᵀ k_t and Sᵀ q_t are per-column dots over K, the update is
// a per-column axpy), so an invocation owns one column: its K values live in shared memory
// laid out [K][VB] (invocation j reads word i·VB + j: consecutive invocations, consecutive
// banks) and every dot is a sequential loop over K in its own registers: no reduction across
// invocations, no subgroup operation, the same result on subgroups of 8 or 32. Per step the
// group stages k_t and q_t in shared memory (two barriers a step). K ≤ KMAX = 128 (16 KiB of
// state + 1 KiB of q, k: within lavapipe's 32 KiB); the lowering refuses a larger K by name.
//
// `mode` 0 writes o [B, L, H, V]; mode 1 writes the state after the last step [B, H, K, V].
// Bindings: q, k, v, g, beta (read), out (written).

// p: DeltaRuleParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

const VB: u32 = 32u;
const KMAX: u32 = 128u;

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> kk: array<f32>;
@group(0) @binding(2) var<storage, read> vv: array<f32>;
@group(0) @binding(3) var<storage, read> gg: array<f32>;
@group(0) @binding(4) var<storage, read> beta: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;

var<workgroup> s: array<f32, 4096>;
var<workgroup> kq: array<f32, 256>;

@compute @workgroup_size(32, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    // wid.x: column block; wid.y: b · H + h. Uniform per workgroup, so no barrier is skipped.
    let bh = wid.y;
    let b = bh / p.h;
    let hh = bh % p.h;
    let col = wid.x * VB + lid;
    let live = col < p.v;
    for (var i = 0u; i < p.k; i++) {
        s[i * VB + lid] = 0.0;
    }
    for (var t = 0u; t < p.l; t++) {
        let step = (b * p.l + t) * p.h + hh;
        workgroupBarrier();
        for (var i = lid; i < p.k; i += VB) {
            kq[i] = kk[step * p.k + i];
            kq[KMAX + i] = q[step * p.k + i] * p.scale;
        }
        workgroupBarrier();
        let alpha = exp(gg[step]);
        let bt = beta[step];
        let vj = select(0.0, vv[step * p.v + min(col, p.v - 1u)], live);
        var mem = 0.0;
        for (var i = 0u; i < p.k; i++) {
            let si = s[i * VB + lid] * alpha;
            s[i * VB + lid] = si;
            mem = fma(si, kq[i], mem);
        }
        let err = bt * (vj - mem);
        var o = 0.0;
        for (var i = 0u; i < p.k; i++) {
            let si = fma(kq[i], err, s[i * VB + lid]);
            s[i * VB + lid] = si;
            o = fma(si, kq[KMAX + i], o);
        }
        if (live && p.mode == 0u) {
            out[step * p.v + col] = o;
        }
    }
    if (live && p.mode == 1u) {
        for (var i = 0u; i < p.k; i++) {
            out[(bh * p.k + i) * p.v + col] = s[i * VB + lid];
        }
    }
}
