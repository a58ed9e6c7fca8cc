//! Comparing a device's outputs with the CPU reference.
//!
//! Float outputs: ‖out − ref‖₂ / ‖ref‖₂ over the positions where both are finite; the absolute
//! ‖out − ref‖₂ when ‖ref‖ = 0. A NaN or an infinity on one side must be the same on the other
//! side, else the error is infinite. Integer and bool outputs must be equal element for element.
//! A dtype or shape that differs fails outright. [`Metric::PerElement`] bounds every finite
//! element instead (|out − ref| / |ref|, absolute where ref = 0): for outputs whose small values
//! matter as much as their large ones (activation tails), which a norm would hide.
//! [`Metric::Exact`] requires every float element equal (casts).

use rlx_ir::{DType, Tensor, TensorData};

/// How one output compared.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputCheck {
    /// Position in the graph's outputs.
    pub index: usize,
    /// The reference's type, e.g. `f32[2, 3]`.
    pub ty: String,
    /// The reference's element count.
    pub numel: usize,
    /// True for integer and bool outputs (compared exactly; `err` is the mismatch count).
    pub exact: bool,
    /// Relative error (floats) or number of differing elements (exact outputs). Infinite for a
    /// NaN/infinity mismatch or a missing output, a shape or a dtype that differs.
    pub err: f64,
    pub passed: bool,
    /// What went wrong beyond the number, e.g. the first NaN that differs.
    pub note: Option<String>,
}

/// How float outputs are measured against their bound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Metric {
    /// ‖out − ref‖₂ / ‖ref‖₂ over the finite elements (DESIGN.md "Numerics").
    #[default]
    Norm,
    /// The largest |out − ref| / |ref| over the finite elements (|out − ref| where ref = 0).
    PerElement,
    /// Every float element equal to the reference's, sign of zero included (for casts, which
    /// are rounding rules): the error is the count of differing elements. Any NaN matches any
    /// NaN: payloads are not part of rlx's numerics.
    Exact,
}

/// Compares every output of `got` with `reference`; floats within `tol` by [`Metric::Norm`].
/// One check per reference output, plus one for surplus outputs.
pub fn compare_outputs(reference: &[Tensor], got: &[Tensor], tol: f64) -> Vec<OutputCheck> {
    compare_outputs_by(reference, got, tol, Metric::Norm)
}

/// [`compare_outputs`] with the float error measured by `metric`.
pub fn compare_outputs_by(
    reference: &[Tensor],
    got: &[Tensor],
    tol: f64,
    metric: Metric,
) -> Vec<OutputCheck> {
    let mut checks: Vec<OutputCheck> = reference
        .iter()
        .enumerate()
        .map(|(index, r)| match got.get(index) {
            Some(g) => compare_one(index, r, g, tol, metric),
            None => failed(index, r, "the device returned no such output".into()),
        })
        .collect();
    if got.len() > reference.len() {
        checks.push(OutputCheck {
            index: reference.len(),
            ty: "none".into(),
            numel: 0,
            exact: true,
            err: f64::INFINITY,
            passed: false,
            note: Some(format!(
                "{} outputs from the device, {} from the reference",
                got.len(),
                reference.len()
            )),
        });
    }
    checks
}

fn ty_of(t: &Tensor) -> String {
    format!("{}{}", t.dtype(), t.shape())
}

fn failed(index: usize, r: &Tensor, note: String) -> OutputCheck {
    OutputCheck {
        index,
        ty: ty_of(r),
        numel: r.numel(),
        exact: !r.dtype().is_float(),
        err: f64::INFINITY,
        passed: false,
        note: Some(note),
    }
}

fn compare_one(index: usize, r: &Tensor, g: &Tensor, tol: f64, metric: Metric) -> OutputCheck {
    if r.dtype() != g.dtype() || r.shape() != g.shape() {
        return failed(index, r, format!("device gave {}", ty_of(g)));
    }
    match (r.data(), g.data()) {
        _ if r.dtype().is_float() && metric == Metric::Exact => exact_check(index, r, g),
        (TensorData::F32(_) | TensorData::F16(_) | TensorData::BF16(_), _) => {
            let (err, note) = float_error(&r.data().to_f64_vec(), &g.data().to_f64_vec(), metric);
            // `err <= tol` is false for NaN, so a NaN error fails too.
            let passed = err <= tol;
            OutputCheck { index, ty: ty_of(r), numel: r.numel(), exact: false, err, passed, note }
        }
        _ => exact_check(index, r, g),
    }
}

fn exact_check(index: usize, r: &Tensor, g: &Tensor) -> OutputCheck {
    // Every dtype widens to f64 exactly, so comparing the widened values is exact; for floats
    // the sign tells −0 from +0, and NaN matches NaN.
    let (rv, gv) = (r.data().to_f64_vec(), g.data().to_f64_vec());
    let same = |a: f64, b: f64| {
        (a.is_nan() && b.is_nan()) || (a == b && a.is_sign_negative() == b.is_sign_negative())
    };
    let differing: Vec<usize> = (0..rv.len()).filter(|&i| !same(rv[i], gv[i])).collect();
    let note = differing.first().map(|&i| {
        let dt = r.dtype();
        format!(
            "{} of {} differ; first at flat index {i}: device {} vs reference {}",
            differing.len(),
            rv.len(),
            show(dt, gv[i]),
            show(dt, rv[i])
        )
    });
    OutputCheck {
        index,
        ty: ty_of(r),
        numel: r.numel(),
        exact: true,
        err: differing.len() as f64,
        passed: differing.is_empty(),
        note,
    }
}

fn show(dtype: DType, v: f64) -> String {
    match dtype {
        DType::Bool => (v != 0.0).to_string(),
        d if d.is_float() => format!("{v:e}"),
        _ => format!("{v}"),
    }
}

/// ‖g − r‖ / ‖r‖ over the finite pairs (absolute when ‖r‖ = 0), and a note on the first
/// non-finite mismatch, which makes the error infinite.
fn float_error(r: &[f64], g: &[f64], metric: Metric) -> (f64, Option<String>) {
    let (mut num, mut den) = (0.0f64, 0.0f64);
    // Per element: the largest error and where it is.
    let mut worst: (f64, usize) = (0.0, 0);
    let mut bad: Option<(usize, usize)> = None; // (first index, count)
    for (i, (&rv, &gv)) in r.iter().zip(g).enumerate() {
        if rv.is_finite() && gv.is_finite() {
            num += (gv - rv) * (gv - rv);
            den += rv * rv;
            let e = if rv == 0.0 { (gv - rv).abs() } else { ((gv - rv) / rv).abs() };
            if e > worst.0 {
                worst = (e, i);
            }
            continue;
        }
        // Both NaN, or the same infinity, match.
        let same = (rv.is_nan() && gv.is_nan()) || rv == gv;
        if !same {
            bad = Some(match bad {
                Some((first, n)) => (first, n + 1),
                None => (i, 1),
            });
        }
    }
    if let Some((i, n)) = bad {
        let note = format!(
            "{n} non-finite mismatch(es); first at flat index {i}: device {} vs reference {}",
            g[i], r[i]
        );
        return (f64::INFINITY, Some(note));
    }
    match metric {
        // Exact outputs never get here (see `compare_one`); the norm is a safe answer.
        Metric::Norm | Metric::Exact => (if den == 0.0 { num.sqrt() } else { (num / den).sqrt() }, None),
        Metric::PerElement => {
            let (e, i) = worst;
            let note =
                (e > 0.0).then(|| format!("worst at flat index {i}: device {} vs reference {}", g[i], r[i]));
            (e, note)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32t(v: Vec<f32>) -> Tensor {
        let n = v.len();
        Tensor::from_f32([n], v).unwrap()
    }

    #[test]
    fn relative_error_is_the_norm_ratio() {
        // ref (3, 4): norm 5; diff (0, 0.0005) → 1e-4.
        let c = compare_outputs(&[f32t(vec![3.0, 4.0])], &[f32t(vec![3.0, 4.0005])], 1e-5);
        assert_eq!(c.len(), 1);
        assert!((c[0].err - 1e-4).abs() < 1e-6, "{}", c[0].err);
        assert!(!c[0].passed);
        let c = compare_outputs(&[f32t(vec![3.0, 4.0])], &[f32t(vec![3.0, 4.0005])], 2e-4);
        assert!(c[0].passed);
    }

    #[test]
    fn zero_reference_uses_the_absolute_norm() {
        let c = compare_outputs(&[f32t(vec![0.0, 0.0])], &[f32t(vec![3e-6, 4e-6])], 1e-5);
        assert!((c[0].err - 5e-6).abs() < 1e-9, "{}", c[0].err);
        assert!(c[0].passed);
        let c = compare_outputs(&[f32t(vec![0.0, 0.0])], &[f32t(vec![0.0, 1e-3])], 1e-5);
        assert!(!c[0].passed);
    }

    #[test]
    fn nan_and_infinity_positions_must_match() {
        let r = f32t(vec![1.0, f32::NAN, f32::INFINITY]);
        assert!(compare_outputs(std::slice::from_ref(&r), std::slice::from_ref(&r), 1e-5)[0].passed);
        let moved = f32t(vec![f32::NAN, 1.0, f32::INFINITY]);
        let c = &compare_outputs(std::slice::from_ref(&r), &[moved], 1e-5)[0];
        assert!(!c.passed && c.err.is_infinite());
        assert!(c.note.as_deref().unwrap_or("").contains("flat index 0"), "{:?}", c.note);
        let sign = f32t(vec![1.0, f32::NAN, f32::NEG_INFINITY]);
        assert!(!compare_outputs(std::slice::from_ref(&r), &[sign], 1e-5)[0].passed);
        let finite = f32t(vec![1.0, 0.0, f32::INFINITY]);
        assert!(!compare_outputs(&[r], &[finite], 1e-5)[0].passed);
    }

    #[test]
    fn integers_and_bools_are_exact() {
        let r = Tensor::from_i32([3], vec![1, 2, 3]).unwrap();
        let g = Tensor::from_i32([3], vec![1, 2, 4]).unwrap();
        let c = &compare_outputs(std::slice::from_ref(&r), &[g], 1.0)[0];
        assert!(c.exact && !c.passed);
        assert_eq!(c.err, 1.0);
        assert!(compare_outputs(std::slice::from_ref(&r), std::slice::from_ref(&r), 0.0)[0].passed);
        let b = Tensor::from_bool([2], vec![true, false]).unwrap();
        let nb = Tensor::from_bool([2], vec![true, true]).unwrap();
        assert!(!compare_outputs(&[b], &[nb], 1.0)[0].passed);
    }

    #[test]
    fn shape_dtype_and_count_mismatches_fail() {
        let r = f32t(vec![1.0, 2.0]);
        let reshaped = r.clone().reshape([1, 2]).unwrap();
        assert!(!compare_outputs(std::slice::from_ref(&r), &[reshaped], 1.0)[0].passed);
        let ints = Tensor::from_i32([2], vec![1, 2]).unwrap();
        assert!(!compare_outputs(std::slice::from_ref(&r), &[ints], 1.0)[0].passed);
        assert!(!compare_outputs(std::slice::from_ref(&r), &[], 1.0)[0].passed);
        let c = compare_outputs(std::slice::from_ref(&r), &[r.clone(), r.clone()], 1.0);
        assert_eq!(c.len(), 2);
        assert!(c[0].passed && !c[1].passed);
    }

    #[test]
    fn per_element_bounds_the_smallest_values_too() {
        // A 1e-3 relative error on a tiny element: invisible to the norm, caught per element.
        let r = f32t(vec![1000.0, 1e-6]);
        let g = f32t(vec![1000.0, 1.001e-6]);
        assert!(compare_outputs(std::slice::from_ref(&r), std::slice::from_ref(&g), 1e-5)[0].passed);
        let c = &compare_outputs_by(&[r], &[g], 1e-5, Metric::PerElement)[0];
        assert!(!c.passed && (c.err - 1e-3).abs() < 1e-5, "{}", c.err);
        assert!(c.note.as_deref().unwrap_or("").contains("flat index 1"), "{:?}", c.note);
    }

    #[test]
    fn exact_floats_are_compared_bit_for_bit_but_any_nan_matches() {
        let r = f32t(vec![1.0, -0.0, f32::NAN, f32::INFINITY]);
        let other_nan = f32t(vec![1.0, -0.0, f32::from_bits(0x7fc0_1234), f32::INFINITY]);
        let c = &compare_outputs_by(std::slice::from_ref(&r), &[other_nan], 0.0, Metric::Exact)[0];
        assert!(c.passed && c.exact, "{c:?}");
        let plus_zero = f32t(vec![1.0, 0.0, f32::NAN, f32::INFINITY]);
        let c = &compare_outputs_by(std::slice::from_ref(&r), &[plus_zero], 0.0, Metric::Exact)[0];
        assert!(!c.passed && c.err == 1.0, "{c:?}");
        let one_ulp = f32t(vec![1.0000001, -0.0, f32::NAN, f32::INFINITY]);
        assert!(!compare_outputs_by(&[r], &[one_ulp], 0.0, Metric::Exact)[0].passed);
        let b = Tensor::from_bf16([1], vec![half::bf16::ONE]).unwrap();
        assert!(
            compare_outputs_by(std::slice::from_ref(&b), std::slice::from_ref(&b), 0.0, Metric::Exact)[0]
                .passed
        );
    }

    #[test]
    fn empty_outputs_compare_equal() {
        let e = Tensor::from_f32([0, 3], vec![]).unwrap();
        let c = &compare_outputs(std::slice::from_ref(&e), std::slice::from_ref(&e), 1e-5)[0];
        assert!(c.passed);
        assert_eq!(c.err, 0.0);
    }
}
