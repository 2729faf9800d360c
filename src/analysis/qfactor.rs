//! Resonances of a network and their loaded and unloaded Q, from its
//! S-parameters; only where a resonance is clear.
//!
//! Near one resonance every S-parameter of a driven column j traces a circle
//! (the Q-circle) in the complex plane as frequency sweeps through it:
//!
//! `S_ij(f) = C_ij + B_ij / (1 + j Q_L u)`, `u = f / f_L - f_L / f`,
//!
//! exact for an RLC resonator coupled to the ports by ideal transformers
//! (Kajfez, "Q Factor", 1994, ch. 4; Gregory, "Q-factor measurement by using
//! a vector network analyser", NPL Report MAT 58, 2021, eq. 21). The loaded
//! resonant frequency `f_L` and loaded Q `Q_L` are shared by the column's
//! traces; for given `(f_L, Q_L)` the detuned values `C_ij` and the circles
//! `B_ij` follow by linear least squares, so `(f_L, Q_L)` are fitted by
//! Levenberg-Marquardt over those two numbers alone (variable projection),
//! starting from the peak of the speed `|dS/df|` of the column and its width.
//! A line between a port's reference plane and the resonator turns the whole
//! response with frequency, `e^{-j 2 pi f tau_i}` on trace i, which bends the
//! circle enough to move Q0 by several % for a low-Q resonance (MAT 58's
//! NLQFIT7 fits one such delay): the fit is repeated with each trace's delay
//! free, and that one is kept where it halves the misfit (a line was there,
//! not noise, which the extra numbers would otherwise fit).
//!
//! Unloaded Q, by energy balance (coupled-mode theory; Haus, "Waves and Fields
//! in Optoelectronics", 1984, ch. 7): the diameter of S_ii's circle is
//! `d_ii = 2 Q_L / Q_ei` (Q_ei: the external Q of port i), so
//! `Q_0 = Q_L / (1 - sum_i d_ii / 2)` and port i's coupling coefficient is
//! `beta_i = Q_0 / Q_ei`. One driven column gives the other ports' `d_ii`
//! from `d_ij^2 = d_ii d_jj`. For a one-port this is Kajfez's
//! `beta = d / (2 - d)`, `Q_0 = Q_L (1 + beta)`, with `d` scaled by the
//! detuned `1 / |S_V|` as MAT 58's reflection method does (it absorbs a lossy
//! coupling); for a two-port coupled equally to both ports (`d_11 = d_22 =
//! |S21(f_0)|`, no direct leakage) it is `Q_0 = Q_L / (1 - |S21(f_0)|)`
//! (Pozar, "Microwave Engineering", 4th ed., sec. 6.7). Several ports are
//! used as calibrated: no scaling.
//!
//! A resonance is reported only where it is clear ([`Criterion`]): enough
//! frequency points inside its half-power width, its half-power band inside
//! the sweep, a fit residual small against the circle, a circle large enough
//! to see. Unloaded Q is given only where the fit resolves the loss (a
//! lossless resonator has none to measure). Everything else is listed as not
//! clear, with the reason, rather than given a number that may be wrong.

use std::f64::consts::PI;

use num_complex::Complex64;
use serde::{Deserialize, Serialize};

use super::SParams;

/// What makes a resonance clear enough to report.
#[derive(Debug, Clone, Copy)]
pub struct Criterion {
    /// Fewest sweep points inside the half-power width `f_L / Q_L`.
    pub min_points_in_width: usize,
    /// Largest rms misfit of the fitted circles over the fit window, as a fraction of the largest circle's diameter.
    pub max_residual: f64,
    /// Smallest diameter of the driven port's own circle (`|B_jj|`): a resonance the port barely sees.
    pub min_diameter: f64,
    /// Smallest `1 - sum d_ii / 2` (the lost fraction of the decay) for which
    /// `Q_0` is given: below it `Q_0 > Q_L / min_loss_share` is all the fit can tell.
    pub min_loss_share: f64,
}

/// The criterion the outputs use.
pub const CLEAR: Criterion = Criterion { min_points_in_width: 5, max_residual: 0.02, min_diameter: 0.02, min_loss_share: 0.01 };

/// Half-widths of the fit window each side of `f_L`, in half-power half-widths (`|Q_L u| <= WINDOW`).
const WINDOW: f64 = 3.0;
/// Candidate speed peaks fitted per driven column, fastest first.
const MAX_CANDIDATES: usize = 8;

/// One clear resonance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resonance {
    /// The driven port (1-based) whose column was fitted.
    pub drive: usize,
    /// Loaded resonant frequency, Hz.
    pub f0_hz: f64,
    pub q_loaded: f64,
    /// `None` where the fit does not resolve any loss (see `note`).
    pub q_unloaded: Option<f64>,
    /// `beta_i = Q_0 / Q_ei` for every port i (1-based order); `None` with `q_unloaded`.
    pub coupling: Option<Vec<f64>>,
    /// Circle diameters `|B_ij|` of the column, port i in order (1-based).
    pub diameters: Vec<f64>,
    /// Sweep points inside the half-power width `f_0 / Q_L`.
    pub points_in_width: usize,
    /// Rms misfit over the fit window over the largest circle's diameter.
    pub residual: f64,
    /// Why there is no unloaded Q, where there is none.
    pub note: Option<String>,
}

/// A resonance seen in the sweep but not clear enough to report, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotClear {
    pub drive: usize,
    /// Where it seemed to be, Hz.
    pub near_hz: f64,
    pub why: String,
}

/// The resonances of a network.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Resonances {
    pub found: Vec<Resonance>,
    pub not_clear: Vec<NotClear>,
}

/// The clear resonances of every driven column of `sp` (with [`CLEAR`]).
pub fn find(sp: &SParams) -> Resonances {
    find_with(sp, &CLEAR)
}

/// [`find`] with another criterion.
pub fn find_with(sp: &SParams, crit: &Criterion) -> Resonances {
    let mut out = Resonances::default();
    let f = &sp.freqs;
    // A DC point (a measured file may have one) lies outside every fit window.
    if f.len() < 2 * crit.min_points_in_width || f.windows(2).any(|w| w[1] <= w[0]) || f[0] < 0.0 {
        return out;
    }
    let n = sp.n_ports();
    for j in 1..=n {
        let Some(col) = (1..=n).map(|i| sp.get(i, j)).collect::<Option<Vec<&[Complex64]>>>() else { continue };
        if col.iter().any(|t| t.len() != f.len() || t.iter().any(|z| !z.re.is_finite() || !z.im.is_finite())) {
            continue;
        }
        for c in candidates(f, &col) {
            let near = c.f;
            match c.seed.and_then(|(fl, ql)| fit(f, &col, fl, ql)).and_then(|fit| judge(f, &fit, j, n, crit)) {
                Ok(r) => out.found.push(r),
                Err(why) => out.not_clear.push(NotClear { drive: j, near_hz: near, why }),
            }
        }
    }
    dedupe(&mut out);
    out
}

/// A peak of the column's speed `|dS/df|`: where it is, and the fit's start `(f_L, Q_L)` or why there is none.
struct Candidate {
    f: f64,
    seed: Result<(f64, f64), String>,
}

/// The column's speed `sqrt(sum_i |dS_ij/df|^2)` at each sweep point (central differences, one-sided at the ends).
fn speed(f: &[f64], col: &[&[Complex64]]) -> Vec<f64> {
    let n = f.len();
    (0..n)
        .map(|k| {
            let (a, b) = (k.saturating_sub(1), (k + 1).min(n - 1));
            col.iter().map(|t| ((t[b] - t[a]) / (f[b] - f[a])).norm_sqr()).sum::<f64>().sqrt()
        })
        .collect()
}

/// The speed peaks that stand out: local maxima that fall to half on both
/// sides before anything faster (fastest first). A peak that falls on one side
/// only meets the band's edge there: a resonance, but not a clear one.
fn candidates(f: &[f64], col: &[&[Complex64]]) -> Vec<Candidate> {
    let v = speed(f, col);
    let n = v.len();
    let mut peaks: Vec<usize> = (0..n).filter(|&k| (k == 0 || v[k] > v[k - 1]) && (k + 1 == n || v[k] >= v[k + 1]) && v[k] > 0.0).collect();
    peaks.sort_by(|&a, &b| v[b].total_cmp(&v[a]));
    let mut out = vec![];
    for k in peaks {
        if out.len() == MAX_CANDIDATES {
            break;
        }
        // Half speed is where |Q_L u| = 1: the half-power points.
        let half = v[k] / 2.0;
        let side = |step: isize| -> Option<Option<f64>> {
            let mut m = k as isize;
            loop {
                let next = m + step;
                if next < 0 || next >= n as isize {
                    return Some(None);
                }
                let (a, b) = (m as usize, next as usize);
                if v[b] > v[k] {
                    return None;
                }
                if v[b] < half {
                    // Linear interpolation to the crossing.
                    let x = (v[a] - half) / (v[a] - v[b]);
                    return Some(Some(f[a] + x * (f[b] - f[a])));
                }
                m = next;
            }
        };
        let (Some(lo), Some(hi)) = (side(-1), side(1)) else { continue };
        let fk = f[k];
        let seed = match (lo, hi) {
            (None, None) => continue,
            (Some(lo), Some(hi)) => Ok((fk, fk / (hi - lo))),
            _ => Err("at the edge of the band: its half-power band is not inside the sweep".to_string()),
        };
        out.push(Candidate { f: fk, seed });
    }
    out
}

/// A fitted resonance of one column.
#[derive(Debug)]
struct Fit {
    fl: f64,
    ql: f64,
    /// Detuned values and circles per trace.
    c: Vec<Complex64>,
    b: Vec<Complex64>,
    /// Rms misfit per point and trace over the window.
    rms: f64,
    /// Sweep indices of the window.
    window: std::ops::Range<usize>,
}

/// The sweep indices with `|Q_L u| <= WINDOW` (f ascending).
fn window(f: &[f64], fl: f64, ql: f64) -> std::ops::Range<usize> {
    let inside = |x: f64| (ql * (x / fl - fl / x)).abs() <= WINDOW;
    let a = f.iter().position(|&x| inside(x)).unwrap_or(f.len());
    let b = f.iter().rposition(|&x| inside(x)).map_or(a, |b| b + 1);
    a..b.max(a)
}

/// The numbers fitted: `x = [f_L, ln Q_L, tau_1, .., tau_n]`, with `tau_i`
/// trace i's delay (s) between the ports' reference planes and the
/// resonator: a line turns the whole response with frequency, `S_ij
/// e^{-j 2 pi (f - f_L) tau_i}` (MAT 58's NLQFIT7 fits one such line).
/// For fixed `x`: each trace's `C`, `B` by least squares, and the summed squared misfit.
fn project(f: &[f64], col: &[&[Complex64]], w: &std::ops::Range<usize>, x: &[f64]) -> (Vec<Complex64>, Vec<Complex64>, f64) {
    let (fl, ql) = (x[0], x[1].exp());
    let y: Vec<Complex64> = f[w.clone()].iter().map(|&v| 1.0 / Complex64::new(1.0, ql * (v / fl - fl / v))).collect();
    let n = y.len() as f64;
    let sy: Complex64 = y.iter().sum();
    let syy: f64 = y.iter().map(|z| z.norm_sqr()).sum();
    let det = n * syy - sy.norm_sqr();
    let (mut cs, mut bs, mut cost) = (vec![], vec![], 0.0);
    for (t, tau) in col.iter().zip(&x[2..]) {
        let s = unturned(f, t, w, fl, *tau);
        let ss: Complex64 = s.iter().sum();
        let sys: Complex64 = y.iter().zip(&s).map(|(y, s)| y.conj() * s).sum();
        let (c, b) = if det > 0.0 { ((ss * syy - sy * sys) / det, (n * sys - sy.conj() * ss) / det) } else { (ss / n, Complex64::default()) };
        cost += y.iter().zip(&s).map(|(y, s)| (s - c - b * y).norm_sqr()).sum::<f64>();
        cs.push(c);
        bs.push(b);
    }
    (cs, bs, cost)
}

/// Trace `t` over the window with its line `tau` taken off (turned back about `f_L`).
fn unturned(f: &[f64], t: &[Complex64], w: &std::ops::Range<usize>, fl: f64, tau: f64) -> Vec<Complex64> {
    f[w.clone()].iter().zip(&t[w.clone()]).map(|(&v, s)| s * Complex64::from_polar(1.0, 2.0 * PI * (v - fl) * tau)).collect()
}

/// The misfit of every trace at every window point as (re, im) pairs.
fn residuals(f: &[f64], col: &[&[Complex64]], w: &std::ops::Range<usize>, x: &[f64]) -> Vec<f64> {
    let (fl, ql) = (x[0], x[1].exp());
    let (c, b, _) = project(f, col, w, x);
    let mut r = Vec::with_capacity(2 * w.len() * col.len());
    for ((t, tau), (c, b)) in col.iter().zip(&x[2..]).zip(c.iter().zip(&b)) {
        for (s, &v) in unturned(f, t, w, fl, *tau).iter().zip(&f[w.clone()]) {
            let e = s - c - b / Complex64::new(1.0, ql * (v / fl - fl / v));
            r.extend([e.re, e.im]);
        }
    }
    r
}

/// Fit from the start `(fl, ql)`: first `f_L` and `Q_L` alone, then with
/// the traces' delays free as well; the delays are kept only where they
/// explain the data (halve the misfit: a line, not noise, was there), since
/// every parameter fitted to noise loosens the circles' diameters.
fn fit(f: &[f64], col: &[&[Complex64]], fl: f64, ql: f64) -> Result<Fit, String> {
    let mut x = vec![fl, ql.max(0.5).ln()];
    x.resize(2 + col.len(), 0.0);
    let plain = converge(f, col, x, 2)?;
    let lined = converge(f, col, plain.0.clone(), 2 + col.len());
    let (x, w, rms) = match lined {
        Ok(l) if l.2 < 0.5 * plain.2 => l,
        _ => plain,
    };
    let (c, b, _) = project(f, col, &w, &x);
    Ok(Fit { fl: x[0], ql: x[1].exp(), c, b, rms, window: w })
}

/// Levenberg-Marquardt on the first `free` numbers of `x` within a window,
/// the window then re-centred on the result until it stays put: the numbers,
/// the window and the rms misfit per point and trace.
fn converge(f: &[f64], col: &[&[Complex64]], mut x: Vec<f64>, free: usize) -> Result<(Vec<f64>, std::ops::Range<usize>, f64), String> {
    let mut w = window(f, x[0], x[1].exp());
    for _ in 0..8 {
        if w.len() < 4 {
            return Err(format!("too few sweep points near it ({}) to fit a circle", w.len()));
        }
        x = levenberg_marquardt(f, col, &w, x, free);
        if !(x[0] > f[0] && x[0] < f[f.len() - 1]) {
            return Err("the fit puts it outside the band".into());
        }
        let next = window(f, x[0], x[1].exp());
        if next == w {
            break;
        }
        w = next;
    }
    let (_, _, cost) = project(f, col, &w, &x);
    let rms = (cost / (w.len() * col.len()) as f64).sqrt();
    Ok((x, w, rms))
}

/// Minimise the projected misfit over the first `p` numbers of `x` on the
/// window `w`. Marquardt's damping is scaled by the diagonal, so the
/// parameters' units do not matter.
fn levenberg_marquardt(f: &[f64], col: &[&[Complex64]], w: &std::ops::Range<usize>, mut x: Vec<f64>, p: usize) -> Vec<f64> {
    let cost = |r: &[f64]| r.iter().map(|v| v * v).sum::<f64>();
    let mut lambda = 1e-3;
    let mut r = residuals(f, col, w, &x);
    for _ in 0..200 {
        // Forward-difference steps: a millionth of the half-power width in
        // f_L, of ln Q_L, and a delay turning the phase by a microradian over that width.
        let width = x[0] / x[1].exp().max(1.0);
        let h: Vec<f64> = (0..p)
            .map(|i| match i {
                0 => width * 1e-6,
                1 => 1e-6,
                _ => 1e-6 / (2.0 * PI * width),
            })
            .collect();
        let jac: Vec<Vec<f64>> = (0..p)
            .map(|i| {
                let mut xp = x.clone();
                xp[i] += h[i];
                residuals(f, col, w, &xp).iter().zip(&r).map(|(a, b)| (a - b) / h[i]).collect()
            })
            .collect();
        let a: Vec<Vec<f64>> = (0..p).map(|i| (0..p).map(|j| dot(&jac[i], &jac[j])).collect()).collect();
        let g: Vec<f64> = (0..p).map(|i| dot(&jac[i], &r)).collect();
        let c0 = cost(&r);
        let mut improved = false;
        while lambda < 1e12 {
            let mut m = a.clone();
            for (i, row) in m.iter_mut().enumerate() {
                // A delay that moves nothing (a trace of zeros) has a zero column: unit scale keeps it at rest.
                let scale = if a[i][i] > 0.0 { a[i][i] } else { 1.0 };
                row[i] = a[i][i] + (lambda + 1e-12) * scale;
            }
            let Some(dx) = solve(&m, &g.iter().map(|v| -v).collect::<Vec<f64>>()) else {
                lambda *= 10.0;
                continue;
            };
            let mut xn = x.clone();
            for (a, d) in xn.iter_mut().zip(&dx) {
                *a += d;
            }
            let rn = residuals(f, col, w, &xn);
            if xn[0] > 0.0 && cost(&rn) < c0 {
                let small = (dx[0] / width).abs() < 1e-10 && dx[1].abs() < 1e-10 && dx.iter().skip(2).all(|d| (d * 2.0 * PI * width).abs() < 1e-10);
                (x, r, lambda) = (xn, rn, (lambda / 10.0).max(1e-12));
                improved = !small;
                break;
            }
            lambda *= 10.0;
        }
        if !improved {
            break;
        }
    }
    x
}

/// `a x = b` for the symmetric positive-definite damped normal matrix `a`
/// (Cholesky, the GA's own); `None` when it is not positive definite.
fn solve(a: &[Vec<f64>], b: &[f64]) -> Option<Vec<f64>> {
    use crate::linalg::{cholesky, solve_lower, solve_upper_t};
    let n = b.len();
    let flat: Vec<f64> = a.iter().flatten().copied().collect();
    let l = cholesky(&flat, n)?;
    let x = solve_upper_t(&l, n, &solve_lower(&l, n, b));
    x.iter().all(|v| v.is_finite()).then_some(x)
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Whether `fit` of drive `j` (1-based) of an `n`-port is clear, and its Qs.
fn judge(f: &[f64], fit: &Fit, j: usize, n: usize, crit: &Criterion) -> Result<Resonance, String> {
    let (fl, ql) = (fit.fl, fit.ql);
    let half = fl / (2.0 * ql);
    if fl - half < f[0] || fl + half > f[f.len() - 1] {
        return Err("at the edge of the band: its half-power band is not inside the sweep".into());
    }
    let points = f.iter().filter(|&&x| (x - fl).abs() <= half).count();
    if points < crit.min_points_in_width {
        return Err(format!(
            "{points} sweep points inside its half-power width ({:.4} MHz, loaded Q about {:.0}); at least {} are needed: a finer sweep resolves it",
            2.0 * half / 1e6,
            ql,
            crit.min_points_in_width
        ));
    }
    let below = fit.window.clone().filter(|&k| f[k] < fl).count();
    if below < 3 || fit.window.len() - below < 3 {
        return Err("too few sweep points on one side of it to fit a circle".into());
    }
    let d: Vec<f64> = fit.b.iter().map(|b| b.norm()).collect();
    let dmax = d.iter().copied().fold(0.0, f64::max);
    let djj = d[j - 1];
    if djj < crit.min_diameter {
        return Err(format!("its circle in S{j}{j} is too small to measure (diameter {djj:.3})"));
    }
    let residual = fit.rms / dmax;
    if residual > crit.max_residual {
        return Err(format!(
            "the response is not one resonance's circle (fit residual {:.1} % of the circle, at most {:.0} % allowed): overlapping resonances or a multi-pole response",
            100.0 * residual,
            100.0 * crit.max_residual
        ));
    }
    // Each port's own circle d_ii: S_jj's, scaled by 1/|S_V| for a one-port;
    // the others' from d_ij^2 = d_ii d_jj.
    let dii: Vec<f64> = if n == 1 {
        let sv = fit.c[0].norm();
        if sv < 0.5 {
            return Err(format!("its detuned reflection |S_V| = {sv:.2} is too far from the unit circle for the reflection method"));
        }
        vec![djj / sv]
    } else {
        (0..n).map(|i| if i == j - 1 { djj } else { d[i] * d[i] / djj }).collect()
    };
    let loss = 1.0 - dii.iter().sum::<f64>() / 2.0;
    // The loss share must stand clear of what the misfit could move it by.
    let floor = crit.min_loss_share.max(3.0 * fit.rms);
    let base = Resonance { drive: j, f0_hz: fl, q_loaded: ql, q_unloaded: None, coupling: None, diameters: d, points_in_width: points, residual, note: None };
    if loss < -floor {
        return Err(format!(
            "its circles are larger than one passive resonance allows (sum of d_ii / 2 = {:.3} > 1): not a single resonance",
            1.0 - loss
        ));
    }
    if loss < floor {
        return Ok(Resonance {
            note: Some(format!("no loss resolved: unloaded Q above {:.0} (1 - sum d_ii / 2 = {loss:.2e}, below {floor:.2e})", ql / floor)),
            ..base
        });
    }
    let q0 = ql / loss;
    let coupling = dii.iter().map(|d| d / 2.0 / loss).collect();
    Ok(Resonance { q_unloaded: Some(q0), coupling: Some(coupling), ..base })
}

/// One entry per resonance: of those within half a half-power width of each
/// other the best-fitting stays; a not-clear one near a found one goes.
fn dedupe(r: &mut Resonances) {
    let mut found: Vec<Resonance> = vec![];
    let mut all = std::mem::take(&mut r.found);
    all.sort_by(|a, b| a.residual.total_cmp(&b.residual));
    for x in all {
        if !found.iter().any(|y| (x.f0_hz - y.f0_hz).abs() < 0.5 * y.f0_hz / y.q_loaded.max(x.q_loaded)) {
            found.push(x);
        }
    }
    found.sort_by(|a, b| a.f0_hz.total_cmp(&b.f0_hz));
    let mut not_clear: Vec<NotClear> = vec![];
    for x in std::mem::take(&mut r.not_clear) {
        let near_found = found.iter().any(|y| (x.near_hz - y.f0_hz).abs() < y.f0_hz / y.q_loaded);
        let seen = not_clear.iter().any(|y| y.drive == x.drive && (y.near_hz - x.near_hz).abs() < 1e-9 * x.near_hz.abs().max(1.0));
        if !near_found && !seen {
            not_clear.push(x);
        }
    }
    not_clear.sort_by(|a, b| a.near_hz.total_cmp(&b.near_hz));
    r.found = found;
    r.not_clear = not_clear;
}

impl Resonance {
    /// "2.4412 GHz (port 1 driven): loaded Q 17.3, unloaded Q 35.1, coupling 1.03".
    pub fn line(&self, ports: &[String]) -> String {
        let q0 = match self.q_unloaded {
            Some(q) => format!("unloaded Q {}", crate::numfmt::short(round3(q))),
            None => format!("unloaded Q not given: {}", self.note.as_deref().unwrap_or("no loss resolved")),
        };
        let beta = self.coupling.as_ref().map_or(String::new(), |c| {
            let parts: Vec<String> = c.iter().enumerate().map(|(i, b)| format!("{} {}", ports.get(i).map_or("?", |s| s.as_str()), crate::numfmt::short(round3(*b)))).collect();
            format!(", coupling beta {}", parts.join(", "))
        });
        format!("{:.4} GHz: loaded Q {}, {q0}{beta}", self.f0_hz / 1e9, crate::numfmt::short(round3(self.q_loaded)))
    }
}

/// How the numbers were found, as `resonances.json` states it.
pub const METHOD: &str = "Q-circle fit of each driven column of S, S_ij = C_ij + B_ij / (1 + j QL (f/f0 - f0/f)) (Kajfez, Q Factor, 1994; Gregory, NPL Report MAT 58, 2021); \
unloaded Q = QL / (1 - sum_i d_ii / 2) with d_ii the diameter of S_ii's circle (one-port: scaled by 1/|S_V|, Kajfez's beta = d/(2-d); \
equally coupled two-port: Pozar's QL / (1 - |S21(f0)|)); coupling beta_i = Q0 / Qe_i";

/// `resonances.json`: the method, the criterion, the port names, the clear resonances and those seen but not clear.
pub fn to_json(sp: &SParams, r: &Resonances) -> serde_json::Value {
    serde_json::json!({
        "method": METHOD,
        "criterion": {
            "min_points_in_half_power_width": CLEAR.min_points_in_width,
            "max_fit_residual": CLEAR.max_residual,
            "min_circle_diameter": CLEAR.min_diameter,
            "min_loss_share_for_unloaded_q": CLEAR.min_loss_share,
        },
        "ports": sp.ports,
        "resonances": r.found,
        "not_clear": r.not_clear,
    })
}

/// What the terminal shows: one line per clear resonance, or that there is none.
pub fn summary_lines(sp: &SParams, r: &Resonances) -> Vec<String> {
    let n = r.not_clear.len();
    if r.found.is_empty() {
        let seen = if n == 0 { String::new() } else { format!(" ({n} seen but not clear: resonances.json says why)") };
        return vec![format!("resonances: none clear in the band{seen}")];
    }
    let mut out: Vec<String> = r.found.iter().map(|x| format!("resonance at {}", x.line(&sp.ports))).collect();
    if n > 0 {
        out.push(format!("{n} more seen but not clear: resonances.json says why"));
    }
    out
}

/// Three significant digits: what a Q from a fit is worth.
pub fn round3(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let e = 10f64.powi(x.abs().log10().floor() as i32 - 2);
    (x / e).round() * e
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::PI;

    const Z0: f64 = 50.0;

    /// A sweep as the engine makes one: `n` points from `a` to `b` inclusive.
    fn sweep(a: f64, b: f64, n: usize) -> Vec<f64> {
        (0..n).map(|k| a + (b - a) * k as f64 / (n - 1) as f64).collect()
    }

    /// An n-port whose first columns are `cols` (`cols[j][i]`: S_(i+1)(j+1)), the rest undriven.
    fn net_of(n: usize, freqs: Vec<f64>, cols: Vec<Vec<Vec<Complex64>>>) -> SParams {
        let nf = freqs.len();
        let mut s = vec![vec![None; n]; n];
        for (j, col) in cols.into_iter().enumerate() {
            for (i, t) in col.into_iter().enumerate() {
                s[i][j] = Some(t);
            }
        }
        SParams { freqs, ports: (1..=n).map(|p| format!("p{p}")).collect(), s, zin: vec![None; n], zref: vec![vec![Complex64::new(Z0, 0.0); nf]; n] }
    }

    /// An n-port with every column given (the column of port 1 alone for a two-port with only port 1 driven: [`net_of`]).
    fn net(freqs: Vec<f64>, cols: Vec<Vec<Vec<Complex64>>>) -> SParams {
        let n = cols[0].len();
        net_of(n, freqs, cols)
    }

    /// Deterministic complex noise of rms `amp` per component (a xorshift, so the test is repeatable).
    fn noisy(t: Vec<Complex64>, amp: f64, seed: u64) -> Vec<Complex64> {
        let mut x = seed.max(1);
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Uniform in [-1, 1): rms 1/sqrt(3).
            (x >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        };
        t.into_iter().map(|z| z + Complex64::new(next(), next()) * amp * 3f64.sqrt()).collect()
    }

    /// A parallel RLC across the end of a 50-ohm line: f0, unloaded Q q0 and
    /// coupling beta = R / Z0. Its impedance, then the reflection.
    fn parallel_rlc_s11(freqs: &[f64], f0: f64, q0: f64, beta: f64) -> Vec<Complex64> {
        let r = beta * Z0;
        let w0 = 2.0 * PI * f0;
        let c = q0 / (w0 * r);
        let l = 1.0 / (w0 * w0 * c);
        freqs
            .iter()
            .map(|&f| {
                let w = 2.0 * PI * f;
                let y = Complex64::new(1.0 / r, w * c - 1.0 / (w * l));
                let z = 1.0 / y;
                (z - Z0) / (z + Z0)
            })
            .collect()
    }

    fn one(found: &Resonances) -> &Resonance {
        assert_eq!(found.found.len(), 1, "{found:#?}");
        &found.found[0]
    }

    fn close(got: f64, want: f64, rel: f64, what: &str) {
        assert!((got / want - 1.0).abs() <= rel, "{what}: got {got}, want {want} (within {} %)", rel * 100.0);
    }

    #[test]
    fn a_parallel_resonator_on_a_line_gives_its_q0_at_every_coupling() {
        // The patch's sweep: 1.9-3.0 GHz, 111 points; Q0 = 60, under-, critically and over-coupled.
        let f = sweep(1.9e9, 3.0e9, 111);
        for beta in [0.4, 1.0, 2.5] {
            let sp = net(f.clone(), vec![vec![parallel_rlc_s11(&f, 2.45e9, 60.0, beta)]]);
            let found = find(&sp);
            let r = one(&found);
            close(r.q_unloaded.unwrap(), 60.0, 1e-6, "Q0");
            close(r.q_loaded, 60.0 / (1.0 + beta), 1e-6, "QL");
            close(r.coupling.as_ref().unwrap()[0], beta, 1e-5, "beta");
            close(r.f0_hz, 2.45e9, 1e-9, "f0");
            assert!(r.points_in_width >= 5 && r.residual < 1e-6, "{r:?}");
        }
    }

    #[test]
    fn a_series_resonator_with_lossy_rotated_feed_gives_its_q0() {
        // A series RLC ending a line, seen through a matched 1 dB attenuator and
        // a fixed phase: the detuned reflection sits at 0.79 /_ -40 deg; the
        // scaling by 1/|S_V| takes the attenuator out.
        let f = sweep(9e9, 11e9, 101);
        let (f0, q0, beta) = (10.1e9, 400.0, 0.7);
        let r = Z0 / beta;
        let w0 = 2.0 * PI * f0;
        let l = q0 * r / w0;
        let c = 1.0 / (w0 * w0 * l);
        let feed = Complex64::from_polar(10f64.powf(-2.0 / 20.0), -40f64.to_radians());
        let s11_on = |f: &[f64]| -> Vec<Complex64> {
            f.iter()
                .map(|&x| {
                    let w = 2.0 * PI * x;
                    let z = Complex64::new(r, w * l - 1.0 / (w * c));
                    feed * (z - Z0) / (z + Z0)
                })
                .collect()
        };
        let s11 = s11_on(&f);
        // Q_L = 235: the half-power width 43 MHz holds 3 points of this sweep; a finer one resolves it.
        let coarse = find(&net(f.clone(), vec![vec![s11.clone()]]));
        assert!(coarse.found.is_empty(), "{coarse:#?}");
        assert!(coarse.not_clear.iter().any(|n| n.why.contains("half-power width")), "{coarse:#?}");
        let f = sweep(10.0e9, 10.2e9, 201);
        let s11 = s11_on(&f);
        let found = find(&net(f, vec![vec![s11]]));
        let res = one(&found);
        close(res.q_unloaded.unwrap(), q0, 1e-6, "Q0");
        close(res.q_loaded, q0 / (1.0 + beta), 1e-6, "QL");
    }

    #[test]
    fn a_resonator_behind_a_line_gives_its_q0() {
        // The parallel RLC behind 6 mm and 60 mm of air line: its whole
        // response turns with frequency (3.5 and 35 degrees over the fit
        // window), which moves the circle's far side by as much as its size
        // would change with a few % of Q0: the fit takes the line's delay out.
        let f = sweep(1.9e9, 3.0e9, 221);
        for tau in [0.02e-9, 0.2e-9] {
            let s11: Vec<Complex64> = parallel_rlc_s11(&f, 2.45e9, 60.0, 1.0)
                .into_iter()
                .zip(&f)
                .map(|(g, &x)| g * Complex64::from_polar(1.0, -4.0 * PI * x * tau))
                .collect();
            let found = find(&net(f.clone(), vec![vec![s11.clone()]]));
            let r = one(&found);
            close(r.q_unloaded.unwrap(), 60.0, 1e-6, "Q0 behind a line");
            close(r.q_loaded, 30.0, 1e-6, "QL behind a line");
            // With noise at 0.3 % of full scale per component, within 2 %.
            let found = find(&net(f.clone(), vec![vec![noisy(s11, 0.003, 13)]]));
            close(one(&found).q_unloaded.unwrap(), 60.0, 0.02, "Q0 behind a line, with noise");
        }
    }

    /// A series RLC between two 50-ohm ports: a band-pass pole coupled equally
    /// to both. Q0 = w0 L / R, QL = w0 L / (R + 2 Z0); the column of port 1.
    fn series_between_ports(freqs: &[f64], f0: f64, q0: f64, r: f64) -> Vec<Vec<Complex64>> {
        let w0 = 2.0 * PI * f0;
        let l = q0 * r / w0;
        let c = 1.0 / (w0 * w0 * l);
        let (mut s11, mut s21) = (vec![], vec![]);
        for &x in freqs {
            let w = 2.0 * PI * x;
            let z = Complex64::new(r, w * l - 1.0 / (w * c));
            s11.push(z / (z + 2.0 * Z0));
            s21.push(2.0 * Z0 / (z + 2.0 * Z0));
        }
        vec![s11, s21]
    }

    #[test]
    fn a_two_port_pole_gives_q0_as_pozar_does() {
        let f = sweep(26e9, 40e9, 281);
        let (f0, q0, r) = (31.5e9, 300.0, 20.0);
        let col = series_between_ports(&f, f0, q0, r);
        let ql = q0 * r / (r + 2.0 * Z0);
        // Pozar's Q0 = QL / (1 - |S21(f0)|) for this pole is exact: |S21(f0)| = 2 Z0 / (R + 2 Z0).
        let pozar = ql / (1.0 - 2.0 * Z0 / (r + 2.0 * Z0));
        close(pozar, q0, 1e-12, "Pozar's relation");
        let found = find(&net(f.clone(), vec![col.clone(), vec![col[1].clone(), col[0].clone()]]));
        let res = one(&found);
        close(res.q_unloaded.unwrap(), q0, 1e-6, "Q0");
        close(res.q_loaded, ql, 1e-6, "QL");
        // Equal coupling: beta = Z0 / R... each port's external Q is w0 L / Z0.
        for b in res.coupling.as_ref().unwrap() {
            close(*b, Z0 / r, 1e-5, "beta");
        }
        // With noise at 0.3 % of full scale per component, within 2 %.
        let col = vec![noisy(col[0].clone(), 0.003, 7), noisy(col[1].clone(), 0.003, 11)];
        let found = find(&net(f, vec![col]));
        let res = one(&found);
        close(res.q_unloaded.unwrap(), q0, 0.02, "Q0 with noise");
        close(res.q_loaded, ql, 0.02, "QL with noise");
    }

    /// Coupled-mode form of one mode, unequal couplings and a background
    /// (direct leakage): `S = C + 2 sqrt(g_i g_j) e^{j(phi_i + phi_j)} / (g0 + sum g + j g0 Q0 u)`
    /// with the background `C = -I` rotated per port. Q0 and the external Qs are known.
    #[test]
    fn unequal_couplings_and_noise_give_q0_and_each_beta() {
        let f = sweep(1.09e9, 1.11e9, 401);
        let (f0, q0) = (1.1e9, 2000.0);
        let (g1, g2) = (0.8, 0.3); // beta_i = g_i / g0 with g0 = 1
        let ph = [0.3f64, -1.1];
        let j = Complex64::i();
        let col: Vec<Vec<Complex64>> = (0..2)
            .map(|i| {
                f.iter()
                    .map(|&x| {
                        let u = x / f0 - f0 / x;
                        let g = [g1, g2];
                        let den = Complex64::new(1.0 + g1 + g2, q0 * u);
                        let res = 2.0 * (g[i] * g[0]).sqrt() * (j * (ph[i] + ph[0])).exp() / den;
                        let bg = if i == 0 { -(j * 2.0 * ph[0]).exp() } else { Complex64::default() };
                        bg + res
                    })
                    .collect()
            })
            .collect();
        // Only port 1 driven: the other ports' circles come from d_ij^2 = d_ii d_jj.
        let found = find(&net_of(2, f.clone(), vec![col.clone()]));
        let r = one(&found);
        close(r.q_unloaded.unwrap(), q0, 1e-6, "Q0");
        close(r.q_loaded, q0 / (1.0 + g1 + g2), 1e-6, "QL");
        let b = r.coupling.as_ref().unwrap();
        close(b[0], g1, 1e-5, "beta1");
        close(b[1], g2, 1e-5, "beta2");
        let r = one(&find(&net_of(2, f, vec![vec![noisy(col[0].clone(), 0.002, 3), noisy(col[1].clone(), 0.002, 5)]]))).clone();
        close(r.q_unloaded.unwrap(), q0, 0.02, "Q0 with noise");
    }

    #[test]
    fn a_lossless_resonance_gives_loaded_q_and_no_unloaded_q() {
        // R -> 0: a lossless series LC between two ports.
        let f = sweep(26e9, 40e9, 281);
        let w0 = 2.0 * PI * 31.5e9;
        let l = 300.0 * 20.0 / w0;
        let c = 1.0 / (w0 * w0 * l);
        let (mut s11, mut s21) = (vec![], vec![]);
        for &x in &f {
            let w = 2.0 * PI * x;
            let z = Complex64::new(0.0, w * l - 1.0 / (w * c));
            s11.push(z / (z + 2.0 * Z0));
            s21.push(2.0 * Z0 / (z + 2.0 * Z0));
        }
        let found = find(&net(f, vec![vec![s11, s21]]));
        let r = one(&found);
        close(r.q_loaded, w0 * l / (2.0 * Z0), 1e-6, "QL");
        assert!(r.q_unloaded.is_none() && r.coupling.is_none(), "{r:?}");
        assert!(r.note.as_deref().unwrap().contains("no loss resolved"), "{r:?}");
    }

    #[test]
    fn no_clear_resonance_gives_none() {
        let f = sweep(1e9, 3e9, 201);
        // A matched delay line with a little loss: S21 turns at a steady rate.
        let tau = 3e-9;
        let s21: Vec<Complex64> = f.iter().map(|&x| Complex64::from_polar(0.9, -2.0 * PI * x * tau)).collect();
        let s11 = vec![Complex64::new(0.05, 0.0); f.len()];
        let r = find(&net(f.clone(), vec![vec![s11, s21]]));
        assert!(r.found.is_empty(), "{r:#?}");
        // A two-pole maximally flat band-pass (20 % bandwidth at 2 GHz): one passband, two poles, no single circle.
        let (f0, fbw) = (2e9, 0.2);
        let j = Complex64::i();
        let (mut s11, mut s21) = (vec![], vec![]);
        for &x in &f {
            let s = j * (x / f0 - f0 / x) / fbw;
            let d = s * s + 2f64.sqrt() * s + 1.0;
            s21.push(1.0 / d);
            s11.push(s * s / d);
        }
        let r = find(&net(f.clone(), vec![vec![s11, s21]]));
        assert!(r.found.is_empty(), "{r:#?}");
        assert!(!r.not_clear.is_empty(), "the passband is seen, and said to be unclear");
        // A resonance whose half-power band runs off the sweep's top.
        let s11 = parallel_rlc_s11(&f, 2.98e9, 40.0, 1.0);
        let r = find(&net(f.clone(), vec![vec![s11]]));
        assert!(r.found.is_empty(), "{r:#?}");
        assert!(r.not_clear.iter().any(|n| n.why.contains("edge of the band")), "{r:#?}");
        // Noise alone.
        let r = find(&net(f.clone(), vec![vec![noisy(vec![Complex64::new(0.3, 0.1); f.len()], 0.003, 9)]]));
        assert!(r.found.is_empty(), "{r:#?}");
        // A DC point in front changes nothing.
        let mut f_dc = vec![0.0];
        f_dc.extend(&f);
        let mut s_dc = vec![Complex64::new(-1.0, 0.0)];
        s_dc.extend(parallel_rlc_s11(&f, 2e9, 40.0, 1.0));
        close(one(&find(&net(f_dc, vec![vec![s_dc]]))).q_unloaded.unwrap(), 40.0, 1e-6, "Q0 with a DC point");
        // Too few points, NaN, and a constant trace.
        assert_eq!(find(&net(vec![1e9, 2e9], vec![vec![vec![Complex64::default(); 2]]])), Resonances::default());
        let mut bad = parallel_rlc_s11(&f, 2e9, 40.0, 1.0);
        bad[3] = Complex64::new(f64::NAN, 0.0);
        assert_eq!(find(&net(f.clone(), vec![vec![bad]])), Resonances::default());
        assert_eq!(find(&net(f.clone(), vec![vec![vec![Complex64::new(0.5, 0.0); f.len()]]])), Resonances::default());
    }

    #[test]
    fn two_resonances_are_each_found_once_from_both_columns() {
        // Two series poles far apart, in parallel between the ports: each is its own circle.
        let f = sweep(1e9, 3e9, 401);
        let pole = |f0: f64, q0: f64, r: f64| {
            let w0 = 2.0 * PI * f0;
            let l = q0 * r / w0;
            let c = 1.0 / (w0 * w0 * l);
            move |x: f64| {
                let w = 2.0 * PI * x;
                1.0 / Complex64::new(r, w * l - 1.0 / (w * c))
            }
        };
        let (a, b) = (pole(1.5e9, 200.0, 10.0), pole(2.5e9, 150.0, 15.0));
        let (mut s11, mut s21) = (vec![], vec![]);
        for &x in &f {
            let z = 1.0 / (a(x) + b(x));
            s11.push(z / (z + 2.0 * Z0));
            s21.push(2.0 * Z0 / (z + 2.0 * Z0));
        }
        let col = vec![s11.clone(), s21.clone()];
        let found = find(&net(f, vec![col, vec![s21, s11]]));
        assert_eq!(found.found.len(), 2, "{found:#?}");
        // Far from its partner each pole is nearly alone: Q0 within 2 %.
        close(found.found[0].q_unloaded.unwrap(), 200.0, 0.02, "Q0 of the first");
        close(found.found[1].q_unloaded.unwrap(), 150.0, 0.02, "Q0 of the second");
        assert!(found.found[0].f0_hz < found.found[1].f0_hz);
    }

    #[test]
    fn q_is_written_to_three_digits() {
        assert_eq!(round3(35.149), 35.1);
        assert_eq!(round3(12345.0), 12300.0);
        let r = Resonance {
            drive: 1,
            f0_hz: 2.44123e9,
            q_loaded: 17.26,
            q_unloaded: Some(35.08),
            coupling: Some(vec![1.032]),
            diameters: vec![1.0],
            points_in_width: 9,
            residual: 1e-3,
            note: None,
        };
        assert_eq!(r.line(&["feed".into()]), "2.4412 GHz: loaded Q 17.3, unloaded Q 35.1, coupling beta feed 1.03");
        let sp = net(vec![1e9], vec![vec![vec![Complex64::default()]]]);
        let unclear = NotClear { drive: 1, near_hz: 1e9, why: "x".into() };
        assert_eq!(summary_lines(&sp, &Resonances::default()), ["resonances: none clear in the band"]);
        let both = Resonances { found: vec![r.clone()], not_clear: vec![unclear.clone()] };
        assert_eq!(summary_lines(&sp, &both), ["resonance at 2.4412 GHz: loaded Q 17.3, unloaded Q 35.1, coupling beta p1 1.03", "1 more seen but not clear: resonances.json says why"]);
        let none = Resonances { found: vec![], not_clear: vec![unclear] };
        assert_eq!(summary_lines(&sp, &none), ["resonances: none clear in the band (1 seen but not clear: resonances.json says why)"]);
    }
}
