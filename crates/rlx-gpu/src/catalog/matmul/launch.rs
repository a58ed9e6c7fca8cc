//! The matmul launch planner: a · b with any numpy batch broadcast as launches of the tiled
//! matmul, split where the kernel's two batch levels or the grid cannot hold it.

use super::MatmulParams;
use crate::grid::numel;
use crate::GpuError;

/// Most launches one matmul may split into (see [`matmul_launches`]).
const MAX_MATMUL_LAUNCHES: usize = 4096;

pub type MatmulLaunch = (MatmulParams, [u32; 3]);

/// Launches of the tiled matmul that compute a · b for contiguous `a`, `b` (transposes as in
/// [`MatmulParams::from_shapes`]) with any numpy batch broadcast, and the output shape.
///
/// One launch when the kernel's two batch levels can address the broadcast; otherwise the
/// leading batch dims that break it are walked here, one launch per index, each shifting its
/// addresses by element offsets (so no operand is ever expanded in memory).
pub fn matmul_launches(
    a: &[usize],
    b: &[usize],
    transpose_a: bool,
    transpose_b: bool,
) -> Result<(Vec<MatmulLaunch>, Vec<usize>), GpuError> {
    const K: &str = "matmul_tiled";
    let first = MatmulParams::from_shapes_any_batch(a, b, transpose_a, transpose_b);
    if !matches!(first, Err(GpuError::Shape { .. })) || a.len() < 2 || b.len() < 2 {
        return first.and_then(|(p, out, grid)| Ok((split_batches(p, grid)?, out)));
    }
    // Rank-align both operands with leading 1s (free for contiguous data).
    let rank = a.len().max(b.len());
    let pad = |x: &[usize]| {
        let mut v = vec![1; rank - x.len()];
        v.extend_from_slice(x);
        v
    };
    let (ap, bp) = (pad(a), pad(b));
    for what in [&ap, &bp] {
        numel(K, "operand element count", what)?;
    }
    let nb = rank - 2;
    if (0..nb).any(|d| ap[d] != bp[d] && ap[d] != 1 && bp[d] != 1) {
        return first.and_then(|(p, out, grid)| Ok((split_batches(p, grid)?, out)));
    }
    for prefix in 1..=nb {
        let Ok((sub, sub_out, grid)) =
            MatmulParams::from_shapes_any_batch(&ap[prefix..], &bp[prefix..], transpose_a, transpose_b)
        else {
            continue;
        };
        let lead: Vec<usize> = (0..prefix).map(|d| ap[d].max(bp[d])).collect();
        let mut out = lead.clone();
        out.extend_from_slice(&sub_out);
        numel(K, "output element count", &out)?;
        let count: usize = lead.iter().product();
        if count > MAX_MATMUL_LAUNCHES {
            return Err(GpuError::TooLarge {
                kernel: K,
                what: "launches for this batch broadcast",
                value: count as u64,
                limit: MAX_MATMUL_LAUNCHES as u64,
            });
        }
        // Element strides of the leading dims in a, b and the output (all fit u32: checked).
        let suffix = |x: &[usize]| x[prefix..].iter().product::<usize>();
        let (mut sa, mut sb, mut so) = (suffix(&ap), suffix(&bp), suffix(&out));
        let mut strides = vec![(0usize, 0usize, 0usize); prefix];
        for d in (0..prefix).rev() {
            strides[d] = (if ap[d] == 1 { 0 } else { sa }, if bp[d] == 1 { 0 } else { sb }, so);
            (sa, sb, so) = (sa * ap[d], sb * bp[d], so * lead[d]);
        }
        let mut launches = Vec::with_capacity(count);
        for idx in 0..count {
            let (mut rem, mut p) = (idx, sub);
            let (mut ao, mut bo, mut co) = (0, 0, 0);
            for d in (0..prefix).rev() {
                let i = rem % lead[d];
                rem /= lead[d];
                ao += i * strides[d].0;
                bo += i * strides[d].1;
                co += i * strides[d].2;
            }
            (p.a_offset, p.b_offset, p.c_offset) = (ao as u32, bo as u32, co as u32);
            launches.extend(split_batches(p, grid)?);
        }
        return Ok((launches, out));
    }
    first.and_then(|(p, out, grid)| Ok((split_batches(p, grid)?, out)))
}

/// Splits one launch whose batch count (grid z) is past the per-dimension workgroup limit into
/// launches of at most that many batches, moving the operand offsets instead of copying. Whole
/// outer batch levels go together when the inner level fits one launch; otherwise each outer
/// index is split over inner ranges (the launch then has a single level).
fn split_batches(p: MatmulParams, grid: [u32; 3]) -> Result<Vec<MatmulLaunch>, GpuError> {
    let max = crate::grid::MAX_GROUPS_PER_DIM;
    if p.batch <= max {
        return Ok(vec![(p, grid)]);
    }
    let inner = p.batch_inner.max(1);
    let outer = p.batch / inner;
    let mn = p.m * p.n; // ≤ the output element count, checked to fit u32
    let mut launches = Vec::new();
    let mut push = |q: MatmulParams| -> Result<(), GpuError> {
        if launches.len() >= MAX_MATMUL_LAUNCHES {
            return Err(GpuError::TooLarge {
                kernel: "matmul_tiled",
                what: "launches for this batch count",
                value: p.batch as u64,
                limit: (MAX_MATMUL_LAUNCHES as u64) * max as u64,
            });
        }
        launches.push((q, [grid[0], grid[1], q.batch]));
        Ok(())
    };
    if inner <= max {
        let per = max / inner;
        for o0 in (0..outer).step_by(per as usize) {
            let c = per.min(outer - o0);
            let mut q = p;
            q.batch = c * inner;
            q.a_offset += o0 * p.a_batch_outer;
            q.b_offset += o0 * p.b_batch_outer;
            q.c_offset += o0 * inner * mn;
            push(q)?;
        }
    } else {
        for o in 0..outer {
            for i0 in (0..inner).step_by(max as usize) {
                let c = max.min(inner - i0);
                let mut q = p;
                q.batch = c;
                q.batch_inner = c;
                q.a_offset += o * p.a_batch_outer + i0 * p.a_batch_inner;
                q.b_offset += o * p.b_batch_outer + i0 * p.b_batch_inner;
                q.c_offset += (o * inner + i0) * mn;
                push(q)?;
            }
        }
    }
    Ok(launches)
}
