// Reduction over any set of axes (sum, mean, prod, max, min) on f32, i32 or u32 words: up to
// one workgroup per output element, or per chunk of one output's reduced set when the lowering
// splits a long reduction into passes.
//
// Variant defines: OP (one of the OP_* constants below), T (T_F32, T_I32 or T_U32).
// Bindings: 0 = x (read), 1 = out (read_write). Params: ReduceParams.
//
// Work item ("row") g reduces output o = g / chunks over the reduced elements whose linear
// index r lies in [c·chunk, min((c + 1)·chunk, count)), c = g % chunks. Output o's coordinates
// over kept_shape give the base offset Σ k·kept_strides; r's coordinates over red_shape add
// Σ q·red_strides (both row-major), so no copy of x is made whatever the axes.
// A row gets p.row_threads threads (a power of two ≤ 256 chosen by the lowering to fit the
// chunk), so a workgroup packs 256 / row_threads rows: short reductions do not leave most of a
// workgroup idle. The row's threads stride over the chunk (at most 16 elements each), then a
// shared-memory tree over the row's slots combines the partials pairwise: f32 sums stay
// within a few ulp · log n of the exact sum. The result goes to out[g]. MEAN divides the sum
// by p.divisor (the full reduced count; earlier passes of a split mean run as SUM).
//
// f32 products: the rounding errors of a product do not shrink with a tree (each of the n − 1
// multiplications adds one), so an f32 product of n factors drifts by ~√n ulp. Each partial
// product therefore carries its relative error r: for p = h·y the exact rounding error e, and
// r grows by e / p. The result is h + h·r, whose error is second order. e comes from two
// error-free transformations, because neither survives every driver:
// - fma(h, y, −p): exact where fma is fused (NVIDIA), 0 where it is not (lavapipe lowers it to
//   a multiply and an add);
// - Dekker's product (operands split into 12-bit halves whose products are exact): exact on
//   lavapipe, but NVIDIA's compiler reassociates the splitting away (the H200 drifted like a
//   plain product, 4.9e-5 over 100003 factors).
// The fma's error is used where it is not 0, else Dekker's. Either failing only zeroes the
// correction, never makes it wrong.
// f32 sums start from −0.0, the IEEE additive identity (rlx-cpu's too: the sum of nothing or
// of −0.0s is −0.0).
//
// NaN: max and min return NaN when any element is NaN (PyTorch); sum and prod propagate it
// arithmetically. Integers wrap (i32 and u32 share the bits of + and ×). Rows past
// p.n_groups (the tail of the last workgroup or of a 2-D grid) reduce nothing, but their
// threads still reach every barrier.

// OP_SUM … OP_MIN: generated from Rust (src/catalog/consts_wgsl.rs: reduce_ops).

const OP: u32 = {{OP}};
const T: u32 = {{T}};
const WG: u32 = 256u;

// p: ReduceParams (declared from its Rust struct by rlx-gpu: src/catalog/params_wgsl.rs).

@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;

var<workgroup> partial: array<u32, 256>;
// Relative error of each f32 partial product (unused by the other variants).
var<workgroup> partial_err: array<f32, 256>;

const F32_PROD: bool = T == T_F32 && OP == OP_PROD;

// The neutral element of OP, as a word.
fn identity() -> u32 {
    if (T == T_F32) {
        if (OP == OP_PROD) {
            return 0x3f800000u; // 1.0
        } else if (OP == OP_MAX) {
            return 0xff800000u; // -inf
        } else if (OP == OP_MIN) {
            return 0x7f800000u; // +inf
        }
        return 0x80000000u; // -0.0
    }
    if (OP == OP_PROD) {
        return 1u;
    } else if (OP == OP_MAX) {
        return select(0u, 0x80000000u, T == T_I32);
    } else if (OP == OP_MIN) {
        return select(0xffffffffu, 0x7fffffffu, T == T_I32);
    }
    return 0u;
}

fn is_finite_nonzero(v: f32) -> bool {
    let m = bitcast<u32>(v) & 0x7fffffffu;
    return m != 0u && m < 0x7f800000u;
}

// a = hi + lo with hi holding the top 12 significant bits (Veltkamp), so that products of
// halves are exact in f32.
fn split(a: f32) -> vec2<f32> {
    let c = 4097.0 * a;
    let hi = c - (c - a);
    return vec2<f32>(hi, a - hi);
}

// Relative rounding error (h·y − p) / p of the f32 product p = h·y, exact up to f32 rounding
// of the error itself. 0 outside the range where the splitting cannot overflow or underflow
// (and for zero, infinite or NaN p, where no correction applies).
fn product_error(h: f32, y: f32, p: f32) -> f32 {
    let safe = is_finite_nonzero(p) && abs(p) > 1e-30 && abs(h) < 1e30 && abs(y) < 1e30;
    if (!safe) {
        return 0.0;
    }
    let fused = fma(h, y, -p);
    if (fused != 0.0) {
        return fused / p;
    }
    let a = split(h);
    let b = split(y);
    let e = ((a.x * b.x - p) + a.x * b.y + a.y * b.x) + a.y * b.y;
    return e / p;
}

fn combine(u: u32, v: u32) -> u32 {
    if (T == T_F32) {
        let x = bitcast<f32>(u);
        let y = bitcast<f32>(v);
        if (OP == OP_SUM || OP == OP_MEAN) {
            return bitcast<u32>(x + y);
        } else if (OP == OP_PROD) {
            return bitcast<u32>(x * y);
        }
        if (is_nan_bits(u)) {
            return u;
        }
        if (is_nan_bits(v)) {
            return v;
        }
        if (OP == OP_MAX) {
            return bitcast<u32>(max(x, y));
        }
        return bitcast<u32>(min(x, y));
    }
    if (OP == OP_SUM) {
        return u + v;
    } else if (OP == OP_PROD) {
        return u * v;
    }
    if (T == T_I32) {
        if (OP == OP_MAX) {
            return bitcast<u32>(max(bitcast<i32>(u), bitcast<i32>(v)));
        }
        return bitcast<u32>(min(bitcast<i32>(u), bitcast<i32>(v)));
    }
    if (OP == OP_MAX) {
        return max(u, v);
    }
    return min(u, v);
}

// One thread of a line; the entry point is include/line_main.wgsl.
fn run_line(lid: u32, tl: u32, g: u32) {
    let tpr = p.row_threads;
    let live = g < p.n_groups;
    let o = g / p.chunks;
    let start = (g % p.chunks) * p.chunk;
    let end = select(start, min(start + p.chunk, p.count), live);

    var rem = o;
    var base = 0u;
    for (var d = p.kept_rank; d > 0u; d--) {
        let n = p.kept_shape[d - 1u];
        base += (rem % n) * p.kept_strides[d - 1u];
        rem = rem / n;
    }

    var acc = identity();
    var err = 0.0;
    for (var r = start + tl; r < end; r += tpr) {
        var q = r;
        var off = base;
        for (var d = p.red_rank; d > 0u; d--) {
            let n = p.red_shape[d - 1u];
            off += (q % n) * p.red_strides[d - 1u];
            q = q / n;
        }
        let v = x[off];
        let next = combine(acc, v);
        if (F32_PROD) {
            err += product_error(bitcast<f32>(acc), bitcast<f32>(v), bitcast<f32>(next));
        }
        acc = next;
    }
    partial[lid] = acc;
    partial_err[lid] = err;
    workgroupBarrier();
    // p.row_threads is the same for every thread, so the barriers stay uniform.
    for (var s = tpr / 2u; s > 0u; s >>= 1u) {
        if (tl < s) {
            let u = partial[lid];
            let v = partial[lid + s];
            let next = combine(u, v);
            if (F32_PROD) {
                let e = product_error(bitcast<f32>(u), bitcast<f32>(v), bitcast<f32>(next));
                partial_err[lid] = partial_err[lid] + partial_err[lid + s] + e;
            }
            partial[lid] = next;
        }
        workgroupBarrier();
    }
    if (live && tl == 0u) {
        var result = partial[lid];
        if (OP == OP_MEAN) {
            result = bitcast<u32>(bitcast<f32>(result) / p.divisor);
        }
        if (F32_PROD) {
            let h = bitcast<f32>(result);
            if (is_finite_nonzero(h)) {
                result = bitcast<u32>(h + h * partial_err[lid]);
            }
        }
        out[g] = result;
    }
}
