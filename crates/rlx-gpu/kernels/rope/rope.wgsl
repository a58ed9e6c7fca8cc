// Rotary position embedding on a contiguous f32 [B, S, H, D] or [B, H, S, D] tensor.
//
// Bindings: 0 = x, 1 = cos, 2 = sin (read; cos and sin [S, rot/2]),
// 3 = out (read_write). Params: RopeParams.
//
// One thread per element. Element e has head dim dd = e % D and row e / D, whose position s
// follows from the layout. The first `rot` dims rotate in pairs (x1, x2) by angle i:
// out1 = x1·cos − x2·sin, out2 = x2·cos + x1·sin, where the pair is (i, i + rot/2) for NeoX
// and (2i, 2i + 1) for GPT-J; every thread writes its own half of its pair. Dims from `rot`
// on pass through.

const WG: u32 = 256u;

// p: RopeParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> cos_t: array<f32>;
@group(0) @binding(2) var<storage, read> sin_t: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

// One invocation per item; the entry point is include/flat_main.wgsl.
fn invocations() -> u32 {
    return p.numel;
}

fn element(e: u32) {
    let dd = e % p.d;
    let xv = x[e];
    if (dd >= p.rot) {
        out[e] = xv;
        return;
    }
    let row = e / p.d;
    var pos = row % p.s;
    if (p.bhsd == 0u) {
        pos = (row / p.h) % p.s;
    }
    let half = p.rot / 2u;
    var i = 0u;
    var partner = 0u;
    var first = false;
    if (p.gptj == 0u) {
        first = dd < half;
        i = select(dd - half, dd, first);
        partner = select(e - half, e + half, first);
    } else {
        first = dd % 2u == 0u;
        i = dd / 2u;
        partner = select(e - 1u, e + 1u, first);
    }
    let cs = cos_t[pos * half + i];
    let sn = sin_t[pos * half + i];
    let xp = x[partner];
    out[e] = select(xv * cs + xp * sn, xv * cs - xp * sn, first);
}
