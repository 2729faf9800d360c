//! The wideband model of a laminate given as `eps_r` and `tan_delta` at one
//! frequency: the Djordjevic-Sarkar model (Djordjevic, Biljic,
//! Likar-Smiljanic & Sarkar, "Wideband frequency-domain characterization of
//! FR-4 and time-domain causality", IEEE T-EMC 43(4), 2001, eq. 5),
//!
//! `eps(w) = eps_inf + de / (m2 - m1) * log10((w2 + j w) / (w1 + j w))`,
//! `w1 = 10^m1`, `w2 = 10^m2` rad/s (here 10^4 and 10^12, their choice),
//!
//! which keeps the loss tangent nearly constant over decades, as measured
//! laminates do (a loss tangent turned into one conductivity falls as 1/f).
//! The FDTD engine needs it as poles: the model is a uniform density of
//! Debye relaxations in log w between w1 and w2, so a few Debye poles spread
//! over the band (1.5 per decade, from a decade below it to a decade above)
//! plus an instantaneous part and a conductivity (the relaxations far below
//! the band) fit it by non-negative least squares, relative errors in eps'
//! and in eps'' weighted alike. Non-negative weights keep the medium passive.

use crate::consts::EPS0;
use crate::linalg;
use crate::job::Pole;
use num_complex::Complex64;
use std::f64::consts::PI;

const M1: f64 = 4.0;
const M2: f64 = 12.0;

/// The Djordjevic-Sarkar model through (`eps_r`, `tan_delta`) at `f_ref` Hz.
#[derive(Debug, Clone, Copy)]
pub struct DjordjevicSarkar {
    pub eps_inf: f64,
    pub delta_eps: f64,
}

impl DjordjevicSarkar {
    pub fn new(eps_r: f64, tan_delta: f64, f_ref: f64) -> DjordjevicSarkar {
        let l = Self::log_term(2.0 * PI * f_ref);
        // eps = eps' - j eps'': the imaginary part of the log is negative.
        let delta_eps = eps_r * tan_delta * (M2 - M1) / -l.im;
        DjordjevicSarkar { eps_inf: eps_r - delta_eps / (M2 - M1) * l.re, delta_eps }
    }
    fn log_term(w: f64) -> Complex64 {
        let j = Complex64::new(0.0, 1.0);
        ((10f64.powf(M2) + j * w) / (10f64.powf(M1) + j * w)).ln() / std::f64::consts::LN_10
    }
    /// Relative permittivity at angular frequency `w` (e^{jwt}: eps' - j eps'').
    pub fn eps(&self, w: f64) -> Complex64 {
        self.eps_inf + self.delta_eps / (M2 - M1) * Self::log_term(w)
    }
}

/// A medium for the FDTD engine: eps at infinite frequency, conductivity, poles.
#[derive(Debug, Clone)]
pub struct PoleFit {
    pub eps_inf: f64,
    pub sigma: f64,
    pub poles: Vec<Pole>,
    /// The largest relative errors of eps' and of tan(delta) over the fitted band.
    pub eps_err: f64,
    pub tan_err: f64,
}

impl PoleFit {
    pub fn eps(&self, w: f64) -> Complex64 {
        let j = Complex64::new(0.0, 1.0);
        self.eps_inf + self.poles.iter().map(|p| p.chi(w)).sum::<Complex64>() + self.sigma / (j * w * EPS0)
    }
}

/// Fit `target` (relative permittivity against angular frequency) over
/// `f_lo..f_hi` Hz with Debye poles at fixed frequencies, a conductivity and
/// `eps_inf`, all but `eps_inf` non-negative.
/// The fewest poles (each costs memory and time on every step of every edge
/// in the medium) whose fit is within 0.2 % in eps' and 2 % in tan delta
/// (laminate data sheets give tan delta to 10 % at best); one pole for a
/// band of 1.5:1 such as the 2.4 GHz patch's 1.9-3.0 GHz, three for 10:1;
/// at most 1.5 a decade over the band widened by a decade each side.
pub fn fit_debye(target: impl Fn(f64) -> Complex64, f_lo: f64, f_hi: f64) -> PoleFit {
    let (f_lo, f_hi) = (f_lo.min(f_hi), f_hi.max(f_lo));
    let f_hi = f_hi.max(f_lo * 1.01);
    let most = (((f_hi * 10.0).log10() - (f_lo / 10.0).log10()) * 1.5).ceil() as usize + 1;
    let mut best: Option<PoleFit> = None;
    for n in 1..=most {
        let fit = fit_n(&target, f_lo, f_hi, n);
        let good = fit.eps_err < 2e-3 && fit.tan_err < 2e-2;
        if best.as_ref().is_none_or(|b| fit.tan_err + fit.eps_err < b.tan_err + b.eps_err) {
            best = Some(fit);
        }
        if good {
            break;
        }
    }
    best.expect("at least one fit")
}

/// The fit with `npoles` poles log-spaced over the band (the band's geometric
/// centre for one, else from a decade below to a decade above, narrowed to
/// the band's own span for few poles).
fn fit_n(target: &impl Fn(f64) -> Complex64, f_lo: f64, f_hi: f64, npoles: usize) -> PoleFit {
    let widen = 10f64.min(1.0 + npoles as f64 * 3.0);
    let (a, b) = ((f_lo / widen).log10(), (f_hi * widen).log10());
    let fk: Vec<f64> = if npoles == 1 {
        vec![(f_lo * f_hi).sqrt()]
    } else {
        (0..npoles).map(|k| 10f64.powf(a + (b - a) * k as f64 / (npoles - 1) as f64)).collect()
    };
    let nw = 60;
    let ws: Vec<f64> = (0..nw).map(|i| 2.0 * PI * 10f64.powf(f_lo.log10() + (f_hi.log10() - f_lo.log10()) * i as f64 / (nw - 1) as f64)).collect();
    let t: Vec<Complex64> = ws.iter().map(|&w| target(w)).collect();
    let j = Complex64::new(0.0, 1.0);
    // Columns: eps_inf, sigma / eps0 (in units of the top frequency), one per pole.
    let wmax = ws[nw - 1];
    let column = |c: usize, w: f64| -> Complex64 {
        match c {
            0 => Complex64::from(1.0),
            1 => wmax / (j * w),
            k => 1.0 / (1.0 + j * w / (2.0 * PI * fk[k - 2])),
        }
    };
    let ncol = npoles + 2;
    // Rows: real parts over |eps'|, imaginary parts over |eps''| (relative errors of both).
    let mut rows: Vec<(Vec<f64>, f64)> = vec![];
    for (i, &w) in ws.iter().enumerate() {
        let (re_s, im_s) = (t[i].re.abs().max(1e-12), t[i].im.abs().max(1e-12 * t[i].re.abs()));
        rows.push(((0..ncol).map(|c| column(c, w).re / re_s).collect(), t[i].re / re_s));
        rows.push(((0..ncol).map(|c| column(c, w).im / im_s).collect(), t[i].im / im_s));
    }
    // eps_inf may be any sign (it is usually positive anyway); the rest stay non-negative.
    let x = linalg::nnls(&rows, ncol, &[0]);
    let poles: Vec<Pole> = (0..npoles).filter(|&k| x[k + 2] > 0.0).map(|k| Pole::Debye { delta_eps: x[k + 2], tau: 1.0 / (2.0 * PI * fk[k]) }).collect();
    let mut fit = PoleFit { eps_inf: x[0], sigma: x[1] * wmax * EPS0, poles, eps_err: 0.0, tan_err: 0.0 };
    for (i, &w) in ws.iter().enumerate() {
        let e = fit.eps(w);
        fit.eps_err = fit.eps_err.max((e.re / t[i].re - 1.0).abs());
        let (tf, tt) = (-e.im / e.re, -t[i].im / t[i].re);
        if tt > 0.0 {
            fit.tan_err = fit.tan_err.max((tf / tt - 1.0).abs());
        }
    }
    fit
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_passes_through_its_reference_point() {
        let ds = DjordjevicSarkar::new(4.3, 0.02, 1e9);
        let e = ds.eps(2.0 * PI * 1e9);
        assert!((e.re - 4.3).abs() < 1e-12 && (-e.im / e.re - 0.02).abs() < 1e-12, "{e}");
        // The loss tangent stays within 10 % over three decades (the point of the model).
        for f in [1e7, 1e8, 1e10] {
            let e = ds.eps(2.0 * PI * f);
            assert!((-e.im / e.re / 0.02 - 1.0).abs() < 0.1, "tan delta at {f} Hz: {}", -e.im / e.re);
        }
    }

    #[test]
    fn a_few_debye_poles_fit_fr4_within_two_percent_over_every_band() {
        for (lo, hi) in [(1.9e9, 3e9), (1e9, 10e9), (0.1e9, 6e9), (26e9, 40e9), (0.5e9, 1e9), (0.01e9, 20e9)] {
            let ds = DjordjevicSarkar::new(4.3, 0.02, (lo * hi as f64).sqrt());
            let fit = fit_debye(|w| ds.eps(w), lo, hi);
            eprintln!("{lo:e}-{hi:e}: {} poles, sigma {:.3e}, eps' err {:.2e}, tan err {:.2e}", fit.poles.len(), fit.sigma, fit.eps_err, fit.tan_err);
            assert!(fit.eps_err < 2e-3 && fit.tan_err < 2e-2, "{lo}-{hi}: {fit:?}");
            assert!(fit.poles.len() <= 8 && fit.sigma >= 0.0 && fit.eps_inf >= 1.0);
            assert!(fit.poles.iter().all(|p| matches!(p, Pole::Debye { delta_eps, .. } if *delta_eps > 0.0)));
        }
    }
}
