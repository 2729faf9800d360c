//! A small Gaussian-process (kriging) regression model for the surrogate
//! search: squared-exponential kernel with one length scale per gene (ARD),
//! signal and noise variances, fitted by maximising the log marginal
//! likelihood (Rasmussen & Williams, "Gaussian Processes for Machine
//! Learning", 2006, algorithm 2.1 and eq. 5.9) with Rprop over the log
//! hyperparameters from a few starts. Cholesky throughout: meant for a few
//! hundred points in 3-30 dimensions (inputs in the unit cube, outputs standardised here).

use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::linalg::{cholesky, inverse_from_cholesky, solve_lower, solve_upper_t};

/// Bounds of the log hyperparameters: length scales, signal variance, noise variance.
const LOG_LS: (f64, f64) = (-4.6, 2.3); // 0.01 .. 10 of the unit cube
const LOG_SF2: (f64, f64) = (-4.6, 4.6);
const LOG_SN2: (f64, f64) = (-18.4, 0.0); // 1e-8 .. 1 of the output variance
const RPROP_ITERATIONS: usize = 40;

/// A fitted model.
#[derive(Debug, Clone)]
pub struct Gp {
    x: Vec<Vec<f64>>,
    l: Vec<f64>,
    alpha: Vec<f64>,
    /// log length scales..., log signal variance, log noise variance.
    pub theta: Vec<f64>,
    y_mean: f64,
    y_std: f64,
}

impl Gp {
    /// Fit to `x` (unit cube) and `y`. `starts` random starts besides the
    /// default one and `warm` (the last fit's hyperparameters). None when no
    /// start gives a positive-definite kernel matrix (two equal inputs with no noise, say).
    pub fn fit(x: Vec<Vec<f64>>, y: &[f64], rng: &mut Xoshiro256PlusPlus, starts: usize, warm: Option<&[f64]>) -> Option<Gp> {
        let n = y.len();
        if n < 2 || x.len() != n {
            return None;
        }
        let d = x[0].len();
        let y_mean = y.iter().sum::<f64>() / n as f64;
        let var = y.iter().map(|v| (v - y_mean).powi(2)).sum::<f64>() / n as f64;
        let y_std = if var > 0.0 { var.sqrt() } else { 1.0 };
        let ys: Vec<f64> = y.iter().map(|v| (v - y_mean) / y_std).collect();
        let mut inits: Vec<Vec<f64>> = Vec::new();
        let mut default = vec![(0.3f64).ln(); d];
        default.extend([0.0, (1e-4f64).ln()]);
        inits.push(default);
        if let Some(w) = warm.filter(|w| w.len() == d + 2) {
            inits.push(w.to_vec());
        }
        for _ in 0..starts {
            let mut t: Vec<f64> = (0..d).map(|_| (0.05f64).ln() + rng.random::<f64>() * ((2.0f64).ln() - (0.05f64).ln())).collect();
            t.extend([rng.random::<f64>() - 0.5, (1e-6f64).ln() + rng.random::<f64>() * 6.0]);
            inits.push(t);
        }
        let mut best: Option<(f64, Vec<f64>)> = None;
        for t0 in inits {
            if let Some((lml, t)) = rprop(&x, &ys, t0) {
                if best.as_ref().is_none_or(|b| lml > b.0) {
                    best = Some((lml, t));
                }
            }
        }
        let (_, theta) = best?;
        let k = kernel_matrix(&x, &theta);
        let l = cholesky(&k, n)?;
        let alpha = solve_upper_t(&l, n, &solve_lower(&l, n, &ys));
        Some(Gp { x, l, alpha, theta, y_mean, y_std })
    }

    /// Predictive mean and standard deviation at `u` (noise-free latent function).
    pub fn predict(&self, u: &[f64]) -> (f64, f64) {
        let n = self.x.len();
        let d = u.len();
        let sf2 = self.theta[d].exp();
        let ks: Vec<f64> = self.x.iter().map(|xi| k_se(xi, u, &self.theta)).collect();
        let mean = ks.iter().zip(&self.alpha).map(|(a, b)| a * b).sum::<f64>();
        let v = solve_lower(&self.l, n, &ks);
        let var = (sf2 - v.iter().map(|x| x * x).sum::<f64>()).max(0.0);
        (self.y_mean + self.y_std * mean, self.y_std * var.sqrt())
    }
}

fn k_se(a: &[f64], b: &[f64], theta: &[f64]) -> f64 {
    let d = a.len();
    let r2: f64 = (0..d).map(|j| ((a[j] - b[j]) / theta[j].exp()).powi(2)).sum();
    theta[d].exp() * (-0.5 * r2).exp()
}

fn kernel_matrix(x: &[Vec<f64>], theta: &[f64]) -> Vec<f64> {
    let n = x.len();
    let d = x[0].len();
    let sn2 = theta[d + 1].exp();
    let mut k = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let v = k_se(&x[i], &x[j], theta);
            k[i * n + j] = v;
            k[j * n + i] = v;
        }
        // A tiny jitter beside the fitted noise keeps the factorisation stable.
        k[i * n + i] += sn2 + 1e-10;
    }
    k
}

/// Log marginal likelihood and its gradient in the log hyperparameters.
fn lml(x: &[Vec<f64>], y: &[f64], theta: &[f64]) -> Option<(f64, Vec<f64>)> {
    let n = y.len();
    let d = x[0].len();
    let k = kernel_matrix(x, theta);
    let l = cholesky(&k, n)?;
    let alpha = solve_upper_t(&l, n, &solve_lower(&l, n, y));
    let value = -0.5 * y.iter().zip(&alpha).map(|(a, b)| a * b).sum::<f64>()
        - (0..n).map(|i| l[i * n + i].ln()).sum::<f64>()
        - 0.5 * n as f64 * (2.0 * std::f64::consts::PI).ln();
    // dL/dt = 1/2 tr((alpha alpha^T - K^-1) dK/dt)
    let kinv = inverse_from_cholesky(&l, n);
    let mut grad = vec![0.0; d + 2];
    let ls2: Vec<f64> = (0..d).map(|j| (2.0 * theta[j]).exp()).collect();
    let sn2 = theta[d + 1].exp();
    for i in 0..n {
        for jj in 0..n {
            let a = alpha[i] * alpha[jj] - kinv[i * n + jj];
            let kij = k[i * n + jj] - if i == jj { sn2 + 1e-10 } else { 0.0 };
            grad[d] += 0.5 * a * kij;
            for (m, g) in grad.iter_mut().take(d).enumerate() {
                *g += 0.5 * a * kij * (x[i][m] - x[jj][m]).powi(2) / ls2[m];
            }
            if i == jj {
                grad[d + 1] += 0.5 * a * sn2;
            }
        }
    }
    Some((value, grad))
}

fn clamp_theta(t: &mut [f64]) {
    let d = t.len() - 2;
    for v in &mut t[..d] {
        *v = v.clamp(LOG_LS.0, LOG_LS.1);
    }
    t[d] = t[d].clamp(LOG_SF2.0, LOG_SF2.1);
    t[d + 1] = t[d + 1].clamp(LOG_SN2.0, LOG_SN2.1);
}

/// Rprop ascent (Riedmiller & Braun 1993, without weight backtracking): each
/// parameter moves by its own step, grown while its gradient keeps its sign.
fn rprop(x: &[Vec<f64>], y: &[f64], mut t: Vec<f64>) -> Option<(f64, Vec<f64>)> {
    clamp_theta(&mut t);
    let (mut best_v, mut g_prev) = lml(x, y, &t)?;
    let mut best_t = t.clone();
    let mut step = vec![0.2f64; t.len()];
    let mut g = g_prev.clone();
    for _ in 0..RPROP_ITERATIONS {
        for k in 0..t.len() {
            let s = g[k] * g_prev[k];
            if s > 0.0 {
                step[k] = (step[k] * 1.2).min(1.0);
            } else if s < 0.0 {
                step[k] = (step[k] * 0.5).max(1e-4);
                g[k] = 0.0;
            }
            t[k] += g[k].signum() * step[k] * if g[k] == 0.0 { 0.0 } else { 1.0 };
        }
        clamp_theta(&mut t);
        g_prev = g.clone();
        match lml(x, y, &t) {
            Some((v, gn)) => {
                if v > best_v {
                    best_v = v;
                    best_t = t.clone();
                }
                g = gn;
            }
            None => {
                // Not positive definite here: back to the best point with smaller steps.
                t = best_t.clone();
                step.iter_mut().for_each(|s| *s *= 0.5);
                g = lml(x, y, &t)?.1;
                g_prev = g.clone();
            }
        }
    }
    Some((best_v, best_t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn fits_a_smooth_function_and_knows_where_it_has_no_data() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let f = |u: &[f64]| (3.0 * u[0]).sin() + (u[1] - 0.3).powi(2) * 2.0;
        let x: Vec<Vec<f64>> = (0..40).map(|_| vec![rng.random::<f64>() * 0.6, rng.random::<f64>()]).collect();
        let y: Vec<f64> = x.iter().map(|u| f(u)).collect();
        let gp = Gp::fit(x, &y, &mut rng, 2, None).unwrap();
        let mut worst: f64 = 0.0;
        for _ in 0..50 {
            let u = [0.05 + rng.random::<f64>() * 0.5, 0.05 + rng.random::<f64>() * 0.9];
            worst = worst.max((gp.predict(&u).0 - f(&u)).abs());
        }
        assert!(worst < 0.05, "interpolation error {worst}");
        // Far from the data (x0 near 1, never sampled) the model is less sure than inside it.
        let (_, sd_in) = gp.predict(&[0.3, 0.5]);
        let (_, sd_out) = gp.predict(&[1.0, 0.5]);
        assert!(sd_out > 5.0 * sd_in, "sd inside {sd_in}, outside {sd_out}");
    }

    #[test]
    fn the_likelihood_gradient_matches_finite_differences() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(2);
        let x: Vec<Vec<f64>> = (0..15).map(|_| (0..3).map(|_| rng.random::<f64>()).collect()).collect();
        let y: Vec<f64> = x.iter().map(|u| u[0] * 2.0 - u[1] * u[2]).collect();
        let t = vec![-1.0, -0.5, 0.2, 0.1, -5.0];
        let (_, g) = lml(&x, &y, &t).unwrap();
        for k in 0..t.len() {
            let h = 1e-6;
            let (mut tp, mut tm) = (t.clone(), t.clone());
            tp[k] += h;
            tm[k] -= h;
            let fd = (lml(&x, &y, &tp).unwrap().0 - lml(&x, &y, &tm).unwrap().0) / (2.0 * h);
            assert!((fd - g[k]).abs() < 1e-4 * (1.0 + fd.abs()), "parameter {k}: analytic {} vs numeric {fd}", g[k]);
        }
    }
}
