//! Host-side discrete Fourier transforms in f64: the arithmetic behind the constants that
//! `Graph::fft` bakes into a graph (Bluestein's chirp spectrum) and behind the CPU backend's
//! reference of [`crate::Op::Fft`]. Complex values travel as two slices, real and imaginary.
//!
//! Twiddles are computed from `(j·k) mod N` as exact integers, so the angle passed to sin/cos
//! never grows with the index and every twiddle is correct to f64 rounding.

use std::f64::consts::PI;

/// `e^{sign·2πi·k/n}` as (cos, sin), with `k` reduced mod `n` first (n ≥ 1).
pub fn twiddle(k: u64, n: u64, sign: f64) -> (f64, f64) {
    let a = sign * 2.0 * PI * ((k % n) as f64) / (n as f64);
    (a.cos(), a.sin())
}

/// Transforms `re`/`im` (equal lengths N) in place: `X[k] = Σₙ x[n]·e^{∓2πi·nk/N}`, − when
/// forward, + and × 1/N when `inverse` (PyTorch's `norm="backward"`). A power-of-two N runs
/// an iterative radix-2 FFT; any other N a direct O(N²) sum. N = 0 or unequal slices do
/// nothing. A NaN input spreads to the outputs whose sums it enters (in general all of them).
pub fn fft_in_place(re: &mut [f64], im: &mut [f64], inverse: bool) {
    let n = re.len();
    if n == 0 || im.len() != n {
        return;
    }
    let sign = if inverse { 1.0 } else { -1.0 };
    if n.is_power_of_two() {
        radix2(re, im, sign);
    } else {
        direct(re, im, sign);
    }
    if inverse {
        let s = 1.0 / n as f64;
        re.iter_mut().chain(im.iter_mut()).for_each(|v| *v *= s);
    }
}

/// Decimation in time: bit-reversed order, then log₂N passes of butterflies.
fn radix2(re: &mut [f64], im: &mut [f64], sign: f64) {
    let n = re.len();
    let bits = n.trailing_zeros();
    if bits > 0 {
        for i in 0..n {
            let j = i.reverse_bits() >> (usize::BITS - bits);
            if j > i {
                re.swap(i, j);
                im.swap(i, j);
            }
        }
    }
    let mut half = 1;
    while half < n {
        let stride = n / (2 * half);
        for j in 0..half {
            let (wr, wi) = twiddle((j * stride) as u64, n as u64, sign);
            for base in (0..n).step_by(2 * half) {
                let (a, b) = (base + j, base + j + half);
                let tr = wr * re[b] - wi * im[b];
                let ti = wr * im[b] + wi * re[b];
                re[b] = re[a] - tr;
                im[b] = im[a] - ti;
                re[a] += tr;
                im[a] += ti;
            }
        }
        half *= 2;
    }
}

fn direct(re: &mut [f64], im: &mut [f64], sign: f64) {
    let n = re.len() as u64;
    let (xr, xi) = (re.to_vec(), im.to_vec());
    for k in 0..n {
        let (mut sr, mut si) = (0.0, 0.0);
        for (j, (&a, &b)) in xr.iter().zip(&xi).enumerate() {
            let (wr, wi) = twiddle(j as u64 * k, n, sign);
            sr += a * wr - b * wi;
            si += a * wi + b * wr;
        }
        re[k as usize] = sr;
        im[k as usize] = si;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signal(n: usize) -> (Vec<f64>, Vec<f64>) {
        let re = (0..n).map(|i| ((i * 7 + 3) % 11) as f64 - 5.0).collect();
        let im = (0..n).map(|i| ((i * 5 + 1) % 13) as f64 * 0.5 - 3.0).collect();
        (re, im)
    }

    #[test]
    fn radix2_agrees_with_the_direct_sum_and_inverts() {
        for n in [1usize, 2, 8, 64] {
            let (re0, im0) = signal(n);
            let (mut r1, mut i1) = (re0.clone(), im0.clone());
            radix2(&mut r1, &mut i1, -1.0);
            let (mut r2, mut i2) = (re0.clone(), im0.clone());
            direct(&mut r2, &mut i2, -1.0);
            for k in 0..n {
                assert!((r1[k] - r2[k]).abs() < 1e-9 && (i1[k] - i2[k]).abs() < 1e-9, "n {n} k {k}");
            }
            fft_in_place(&mut r1, &mut i1, true);
            for k in 0..n {
                assert!((r1[k] - re0[k]).abs() < 1e-12 && (i1[k] - im0[k]).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn known_transforms() {
        // An impulse at 1 has the spectrum e^{-2πik/N}; N = 3 takes the direct path.
        let (mut re, mut im) = (vec![0.0, 1.0, 0.0], vec![0.0; 3]);
        fft_in_place(&mut re, &mut im, false);
        assert!((re[1] + 0.5).abs() < 1e-15 && (im[1] + 0.75f64.sqrt()).abs() < 1e-15);
        let (mut re, mut im) = (vec![1.0, f64::NAN, 0.0, 0.0], vec![0.0; 4]);
        fft_in_place(&mut re, &mut im, false);
        assert!(re.iter().all(|v| v.is_nan()));
    }
}
