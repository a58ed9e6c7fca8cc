//! User-defined ops in the table: the k-nearest-neighbour op of the README, defined with the
//! public `CustomOp` API (shape rule, CPU reference, WGSL kernel) and checked like any built-in
//! op on every device.

use crate::Case;
use rlx_ir::{CustomOp, DType, Tensor, TensorType};
use std::sync::Arc;

/// The most neighbours the kernel keeps (its private arrays have this size).
pub const KNN_MAX_K: usize = 16;

const KNN_WGSL: &str = r#"
// One invocation per query: the k nearest points by squared L2 distance, kept sorted by an
// insertion into private arrays; ties go to the lower point index.
struct Params { queries: u32, points: u32, dim: u32, k: u32 }
{{PARAMS}} p: Params;
@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> pts: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<i32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let row = gid.x;
    if (row >= p.queries) { return; }
    var best_d: array<f32, 16>;
    var best_i: array<i32, 16>;
    var have = 0u;
    for (var j = 0u; j < p.points; j++) {
        var d = 0.0;
        for (var c = 0u; c < p.dim; c++) {
            let t = q[row * p.dim + c] - pts[j * p.dim + c];
            d += t * t;
        }
        if (have == p.k && !(d < best_d[p.k - 1u])) { continue; }
        // Shift the worse entries right and insert (strict <: an equal distance stays behind
        // the lower index that came first).
        var at = min(have, p.k - 1u);
        while (at > 0u && d < best_d[at - 1u]) {
            best_d[at] = best_d[at - 1u];
            best_i[at] = best_i[at - 1u];
            at -= 1u;
        }
        best_d[at] = d;
        best_i[at] = i32(j);
        have = min(have + 1u, p.k);
    }
    for (var i = 0u; i < p.k; i++) { out[row * p.k + i] = best_i[i]; }
}
"#;

/// `knn(queries [Q, D], points [P, D]) -> I32 [Q, k]`: for each query, the indices of its `k`
/// nearest points by squared Euclidean distance, nearest first, ties to the lower index.
/// `k` must be in 1..=[`KNN_MAX_K`] and at most P.
pub fn knn_op(k: usize) -> Result<Arc<CustomOp>, String> {
    if k == 0 || k > KNN_MAX_K {
        return Err(format!("knn: k = {k}; use 1..={KNN_MAX_K}"));
    }
    CustomOp::builder("knn")
        .shape(move |ins: &[&TensorType]| {
            let [q, p] = ins else {
                return Err(format!("takes queries and points, got {} operands", ins.len()));
            };
            if q.dtype != DType::F32 || p.dtype != DType::F32 {
                return Err(format!("queries and points must be f32, got {} and {}", q.dtype, p.dtype));
            }
            match (q.shape.dims(), p.shape.dims()) {
                ([nq, d], [np, d2]) if d == d2 && *np >= k => Ok(TensorType::new(vec![*nq, k], DType::I32)),
                ([_, _], [np, _]) if *np < k => Err(format!("{np} points are fewer than k = {k}")),
                _ => Err("queries [Q, D] and points [P, D] must share D".into()),
            }
        })
        .cpu(move |ins: &[&Tensor], out: &TensorType| {
            let (q, p) = (ins[0].to_f32_vec(), ins[1].to_f32_vec());
            let d = ins[0].dims()[1];
            let np = ins[1].dims()[0];
            let mut ids = Vec::with_capacity(out.shape.numel());
            for row in q.chunks(d.max(1)).take(ins[0].dims()[0]) {
                // The kernel's sum: f32, in dimension order.
                let dist = |j: usize| (0..d).fold(0.0f32, |s, c| s + (row[c] - p[j * d + c]).powi(2));
                let mut order: Vec<(f32, usize)> = (0..np).map(|j| (dist(j), j)).collect();
                order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                ids.extend(order.iter().take(k).map(|&(_, j)| j as i32));
            }
            Tensor::from_i32(out.shape.clone(), ids).map_err(|e| e.to_string())
        })
        .wgsl(KNN_WGSL, [64, 1, 1], 16, move |ins: &[&TensorType], _out: &TensorType| {
            let (q, p) = (ins[0].shape.dims(), ins[1].shape.dims());
            let words = vec![q[0] as u32, p[0] as u32, q[1] as u32, k as u32];
            Ok((words, [(q[0] as u32).div_ceil(64), 1, 1]))
        })
        .build()
}

pub(super) fn cases(out: &mut Vec<Case>) {
    // Integer coordinates: every distance is exact in f32 on every device, and ties (which the
    // small range makes common) must go to the lower index everywhere.
    for (tag, q, p, d, k) in
        [("q5_p9_d3_k4", 5, 9, 3, 4), ("q70_p33_d7_k16", 70, 33, 7, 16), ("q1_p3_d1_k2", 1, 3, 1, 2)]
    {
        out.push(Case::new(format!("custom_knn_{tag}"), move |c| {
            let op = knn_op(k).map_err(|reason| rlx_ir::IrError::Custom {
                op: "knn".into(),
                shapes: vec![].into(),
                reason,
            })?;
            let queries = c.input_f32_ints("queries", &[q, d], -4, 4)?;
            let pv = c.ints(p * d, -4, 4).into_iter().map(|x| x as f32).collect();
            let points = c.param_tensor("points", Tensor::from_f32(&[p, d][..], pv)?)?;
            Ok(vec![c.custom(&op, &[queries, points])?])
        }));
    }
}
