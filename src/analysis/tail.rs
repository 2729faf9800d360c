//! The tail of a simulation cut off at the step cap, continued analytically.
//!
//! A filter candidate with a weakly coupled (mistuned) resonator keeps one
//! mode ringing long after everything else has left: the shipped iris filter's
//! ranges allow modes of Q 300 to 30,000, which need 50,000 to millions of steps
//! to decay to -50 dB. Late in such a run every port signal is that one mode,
//! `x[n] = Re(A z^n)` with `|z| < 1`, which obeys `x[n+2] = p x[n+1] + q x[n]`
//! (`p = 2 Re z`, `q = -|z|^2`). Fitting `p, q` to the last samples (Prony's
//! method with one mode, as Ko and Mittra combined it with FDTD: IEEE Trans.
//! MTT 39(12), 1991) gives the rest of the signal, and its DFT in closed form.
//!
//! The continuation is trusted only when it is measured to be right: the run
//! ended at the cap short of its decay target, the source had finished before
//! the fitted window, there are no field monitors (their running DFTs cannot
//! be continued), every trace fits one damped oscillation, and the
//! S-parameters from fits on the two halves of the window agree with the
//! estimate to [`TAIL_TOL`]. That difference is the stated error of the
//! result; otherwise the run stays truncated, as before.

use num_complex::Complex64;

use super::dft::dft;
use crate::job::{EndReason, SimJob, SimOutput};

/// The largest |S| difference (linear, over the band and every S_ij of the
/// run) between the estimate and the fits on either half of the window for
/// which a continued run counts as converged: -60 dB, 0.1 dB on an |S| of
/// -40 dB.
pub const TAIL_TOL: f64 = 1e-3;

/// Samples fitted: a quarter of the run, at most this many.
const WINDOW: usize = 16_384;
/// Fewer samples than this are not fitted.
const MIN_WINDOW: usize = 256;
/// The one-step prediction error of a fit (RMS, relative to the RMS of the
/// signal's second difference) above which a trace is not one mode.
/// Ringing FDTD port signals of the iris filter fit one mode to 5e-4; two
/// modes 10 % apart and of similar strength fit it only to 0.06.
const FIT_RESIDUAL: f64 = 1e-2;

/// `x[n] = sum_k c[k] x[n-1-k]`: one damped mode (order 2), or a zero
/// signal (no coefficients).
///
/// Why one mode only: sampled 100 times a period (the Courant step at the
/// band's top), a fit of two modes (order 4) is ill-conditioned: on two modes
/// 10 % apart it predicts the window to 5e-6 with coefficients whose
/// continuation grows (measured while writing this). Where two modes still
/// ring, the halves of the window disagree or the fit fails, and the run
/// stays truncated.
#[derive(Debug, Clone, PartialEq)]
pub struct Ringing {
    pub c: Vec<f64>,
}

impl Ringing {
    /// The least-squares fit over `x` of one mode, if it predicts `x` (both
    /// roots inside the unit circle, small prediction error); a zero signal
    /// fits as zero.
    pub fn fit(x: &[f64]) -> Option<Ringing> {
        if x.iter().all(|&v| v == 0.0) {
            return Some(Ringing { c: vec![] });
        }
        Self::fit_order(x, 2)
    }

    fn fit_order(x: &[f64], k: usize) -> Option<Ringing> {
        if x.len() < 4 * k {
            return None;
        }
        // Normal equations of x[n] = sum_j c[j] x[n-1-j] over n = k..len.
        let mut a = vec![vec![0.0; k + 1]; k];
        for n in k..x.len() {
            for r in 0..k {
                for col in 0..k {
                    a[r][col] += x[n - 1 - r] * x[n - 1 - col];
                }
                a[r][k] += x[n - 1 - r] * x[n];
            }
        }
        let c = solve(a)?;
        // The prediction error against the second difference, not the signal:
        // finely sampled, any smooth signal is nearly predicted by its last two samples.
        let (mut err, mut total) = (0.0, 0.0);
        for n in k..x.len() {
            let pred: f64 = (0..k).map(|j| c[j] * x[n - 1 - j]).sum();
            err += (x[n] - pred).powi(2);
            total += (x[n] - 2.0 * x[n - 1] + x[n - 2]).powi(2);
        }
        let r = Ringing { c };
        ((err / total).sqrt() <= FIT_RESIDUAL && r.decays()).then_some(r)
    }

    /// Whether every root of `z^K - c[0] z^(K-1) - ... - c[K-1]` lies inside
    /// the unit circle (the Schur-Cohn step-down test): the continued signal dies out.
    fn decays(&self) -> bool {
        let mut a: Vec<f64> = std::iter::once(1.0).chain(self.c.iter().map(|c| -c)).collect();
        while a.len() > 1 {
            let m = a.len() - 1;
            let k = a[m];
            if !(k.abs() < 1.0) {
                return false;
            }
            a = (0..m).map(|i| (a[i] - k * a[m - i]) / (1.0 - k * k)).collect();
        }
        true
    }

    /// The slowest mode, frequency (Hz) and quality factor, for a sample spacing `dt`.
    pub fn slowest_mode(&self, dt: f64) -> (f64, f64) {
        let z = roots(&self.c).into_iter().max_by(|a, b| a.norm().total_cmp(&b.norm())).unwrap_or_default();
        let (r, theta) = z.to_polar();
        (theta.abs() / (2.0 * std::f64::consts::PI * dt), theta.abs() / (2.0 * (1.0 - r)))
    }

    /// `sum_(n >= N) x[n] exp(-j 2 pi f t_n) dt`, `t_n = (n + offset) dt`, for
    /// the samples after `x` (N of them) continued by this recurrence from
    /// its last ones: the part of [`dft`] the cut-off run left out.
    pub fn tail_dft(&self, x: &[f64], dt: f64, offset: f64, freqs: &[f64]) -> Vec<Complex64> {
        let (k, n) = (self.c.len(), x.len());
        if k == 0 || n < k {
            return vec![Complex64::new(0.0, 0.0); freqs.len()];
        }
        // y[m] = x[n + m]; y[-1-j] = x[n-1-j] for the first k of the continuation.
        let past = |y: &[f64], m: usize, j: usize| if m > j { y[m - 1 - j] } else { x[n + m - 1 - j] };
        let mut y = vec![];
        for m in 0..k {
            let v: f64 = (0..k).map(|j| self.c[j] * past(&y, m, j)).sum();
            y.push(v);
        }
        // sum_m y_m w^m = P(w) / Q(w), Q(w) = 1 - sum_j c_j w^(j+1),
        // P(w) = sum_(m<k) w^m (y_m - sum_(j<m) c_j y_(m-1-j)).
        let p: Vec<f64> = (0..k).map(|m| y[m] - (0..m).map(|j| self.c[j] * y[m - 1 - j]).sum::<f64>()).collect();
        freqs
            .iter()
            .map(|&f| {
                let w = Complex64::from_polar(1.0, -2.0 * std::f64::consts::PI * f * dt);
                let (mut num, mut den, mut wm) = (Complex64::new(0.0, 0.0), Complex64::new(1.0, 0.0), Complex64::new(1.0, 0.0));
                for m in 0..k {
                    num += p[m] * wm;
                    wm *= w;
                    den -= self.c[m] * wm;
                }
                num / den * Complex64::from_polar(dt, -2.0 * std::f64::consts::PI * f * (n as f64 + offset) * dt)
            })
            .collect()
    }
}

/// Gaussian elimination with partial pivoting of the augmented system `a`.
fn solve(mut a: Vec<Vec<f64>>) -> Option<Vec<f64>> {
    let k = a.len();
    for col in 0..k {
        let piv = (col..k).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        a.swap(col, piv);
        if !(a[col][col].abs() > 0.0) {
            return None;
        }
        for r in col + 1..k {
            let f = a[r][col] / a[col][col];
            for cc in col..=k {
                a[r][cc] -= f * a[col][cc];
            }
        }
    }
    let mut c = vec![0.0; k];
    for r in (0..k).rev() {
        c[r] = (a[r][k] - (r + 1..k).map(|j| a[r][j] * c[j]).sum::<f64>()) / a[r][r];
    }
    c.iter().all(|v| v.is_finite()).then_some(c)
}

/// The roots of `z^K - c[0] z^(K-1) - ... - c[K-1]` (Durand-Kerner).
fn roots(c: &[f64]) -> Vec<Complex64> {
    let k = c.len();
    let eval = |z: Complex64| c.iter().fold(Complex64::new(1.0, 0.0), |acc, &cj| acc * z - cj);
    let mut z: Vec<Complex64> = (0..k).map(|i| Complex64::new(0.4, 0.9).powu(i as u32)).collect();
    for _ in 0..500 {
        for i in 0..k {
            let den = (0..k).filter(|&j| j != i).fold(Complex64::new(1.0, 0.0), |acc, j| acc * (z[i] - z[j]));
            let step = eval(z[i]) / den;
            z[i] -= step;
        }
    }
    z
}

/// The DFTs of every port's V and I over the band, without a tail.
#[derive(Debug, Clone)]
pub struct PortDfts {
    pub v: Vec<Vec<Complex64>>,
    pub i: Vec<Vec<Complex64>>,
}

impl PortDfts {
    /// The DFTs of the samples `out` holds.
    pub fn of(job: &SimJob, out: &SimOutput) -> PortDfts {
        let (mut v, mut i) = (vec![], vec![]);
        for tr in &out.traces {
            v.push(dft(&tr.v, out.dt, out.v_offset, &job.freqs));
            i.push(dft(&tr.i, out.dt, out.i_offset, &job.freqs));
        }
        PortDfts { v, i }
    }

    fn plus(&self, tail: &PortDfts) -> PortDfts {
        let add = |a: &Vec<Vec<Complex64>>, b: &Vec<Vec<Complex64>>| a.iter().zip(b).map(|(x, y)| x.iter().zip(y).map(|(p, q)| p + q).collect()).collect();
        PortDfts { v: add(&self.v, &tail.v), i: add(&self.i, &tail.i) }
    }
}

/// A cut-off run continued past the cap.
#[derive(Debug, Clone)]
pub struct Continued {
    /// The port DFTs with the tail added.
    pub dfts: PortDfts,
    /// The ringing mode (of the driven port's voltage): Hz and Q.
    pub freq_hz: f64,
    pub q: f64,
    /// The stated error: the largest |S| difference between the estimate and
    /// the fits on either half of the window.
    pub error: f64,
}

/// Continue `out` past the step cap, if it ended there short of its decay
/// target and the continuation passes the checks of the module doc; `plain`
/// are its port DFTs.
pub fn continue_run(job: &SimJob, out: &SimOutput, plain: &PortDfts) -> Option<Continued> {
    let EndReason::MaxSteps { db } = out.ended else { return None };
    if db <= job.stop.decay_db || !job.monitors.is_empty() || out.traces.is_empty() {
        return None;
    }
    let n = out.traces.iter().map(|t| t.v.len().min(t.i.len())).min()?;
    let w = (n / 4).min(WINDOW);
    if w < MIN_WINDOW || ((n - w) as f64) * out.dt <= job.pulse.end_time() {
        return None;
    }
    // Three continuations: from the whole window (the estimate) and from each half.
    let ranges = [n - w..n, n - w..n - w / 2, n - w / 2..n];
    let mut tails = vec![];
    let mut mode = (0.0, 0.0);
    for (k, r) in ranges.into_iter().enumerate() {
        let mut t = PortDfts { v: vec![], i: vec![] };
        for (p, tr) in out.traces.iter().enumerate() {
            let (v, i) = (&tr.v[..n], &tr.i[..n]);
            let (fv, fi) = (Ringing::fit(&v[r.clone()])?, Ringing::fit(&i[r.clone()])?);
            if k == 0 && p == job.drive {
                mode = fv.slowest_mode(out.dt);
            }
            t.v.push(fv.tail_dft(v, out.dt, out.v_offset, &job.freqs));
            t.i.push(fi.tail_dft(i, out.dt, out.i_offset, &job.freqs));
        }
        tails.push(plain.plus(&t));
    }
    let s: Vec<Vec<Vec<Complex64>>> = tails.iter().map(|d| super::sparams::column(job, d)).collect();
    let error = s[1..]
        .iter()
        .flat_map(|alt| alt.iter().zip(&s[0]).flat_map(|(a, e)| a.iter().zip(e).map(|(x, y)| (x - y).norm())))
        .fold(0.0f64, f64::max);
    (error.is_finite() && error <= TAIL_TOL).then(|| Continued { dfts: tails.swap_remove(0), freq_hz: mode.0, q: mode.1, error })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::dft::dft_one;

    /// A fast mode that dies early plus a slow one, sampled at `n` points.
    fn signal(n: usize, dt: f64) -> Vec<f64> {
        (0..n)
            .map(|k| {
                let t = k as f64 * dt;
                let slow = 1e-2 * (-t * 2.0e8).exp() * (2.0 * std::f64::consts::PI * 30e9 * t + 0.3).cos();
                let fast = (-t * 3.0e10).exp() * (2.0 * std::f64::consts::PI * 33e9 * t).sin();
                slow + fast
            })
            .collect()
    }

    #[test]
    fn the_continued_dft_equals_the_dft_of_the_whole_signal() {
        let dt = 0.25e-12;
        // 2e8 /s amplitude decay at 30 GHz is Q = pi f / alpha = 471.
        let (cut, whole) = (signal(30_000, dt), signal(400_000, dt));
        let fit = Ringing::fit(&cut[22_500..]).expect("one damped oscillation");
        assert_eq!(fit.c.len(), 2);
        let (f, q) = fit.slowest_mode(dt);
        assert!((f / 30e9 - 1.0).abs() < 1e-6 && (q / 471.24 - 1.0).abs() < 1e-3, "{f} {q}");
        for freq in [26e9, 29.9e9, 30e9, 30.1e9, 33e9, 38e9] {
            let want = dft_one(&whole, dt, 0.5, freq);
            let cut_only = dft_one(&cut, dt, 0.5, freq);
            let got = cut_only + fit.tail_dft(&cut, dt, 0.5, &[freq])[0];
            assert!((got - want).norm() < 1e-6 * want.norm(), "{freq}: {got} vs {want}");
            // The tail matters: the cut-off DFT alone is visibly wrong at the resonance.
            if freq == 30e9 {
                assert!((cut_only - want).norm() > 0.05 * want.norm());
            }
        }
    }

    #[test]
    fn two_or_three_modes_growth_or_noise_do_not_fit() {
        let dt = 0.25e-12;
        let w = |f: f64| 2.0 * std::f64::consts::PI * f * dt;
        // Two modes of similar strength over the window (amplitude decays 1e-4
        // and 1.5e-4 per sample): not one damped mode.
        let two: Vec<f64> = (20_000..30_000).map(|k| (-1e-4 * k as f64).exp() * (w(30e9) * k as f64).cos() + (-1.5e-4 * k as f64).exp() * (w(33e9) * k as f64).sin()).collect();
        assert!(Ringing::fit(&two).is_none());
        let three: Vec<f64> = (0..4000).map(|k| (0.19 * k as f64).cos() + 0.5 * (0.23 * k as f64).cos() + 0.3 * (0.31 * k as f64).cos()).collect();
        assert!(Ringing::fit(&three).is_none());
        let growing: Vec<f64> = (0..4000).map(|k| (1e-4 * k as f64).exp() * (0.19 * k as f64).cos()).collect();
        assert!(Ringing::fit(&growing).is_none());
        let mut s = 12345u64;
        let noise: Vec<f64> = (0..4000)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
            })
            .collect();
        assert!(Ringing::fit(&noise).is_none());
        assert_eq!(Ringing::fit(&[0.0; 100]), Some(Ringing { c: vec![] }));
        assert!(Ringing { c: vec![] }.tail_dft(&[1.0, 2.0], dt, 0.0, &[1e9])[0].norm() == 0.0);
    }
}
