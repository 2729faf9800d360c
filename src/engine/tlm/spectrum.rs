//! Test helper: resonance frequencies from a ringing time signal, by locating
//! maxima of the Blackman-Harris-windowed DTFT on a continuous frequency axis
//! (golden-section refinement). For undamped, well separated modes the
//! estimate is limited by window leakage (-92 dB sidelobes), not by the
//! record length.

/// Apply a 4-term Blackman-Harris window.
pub fn windowed(x: &[f64]) -> Vec<f64> {
    let n = x.len() as f64;
    let w = |i: usize| {
        let p = 2.0 * std::f64::consts::PI * i as f64 / (n - 1.0);
        0.35875 - 0.48829 * p.cos() + 0.14128 * (2.0 * p).cos() - 0.01168 * (3.0 * p).cos()
    };
    x.iter().enumerate().map(|(i, v)| v * w(i)).collect()
}

/// |sum x_n exp(-j 2 pi f n dt)|.
pub fn dtft_mag(x: &[f64], dt: f64, f: f64) -> f64 {
    let w = 2.0 * std::f64::consts::PI * f * dt;
    let (mut re, mut im) = (0.0, 0.0);
    let (c, s) = (w.cos(), w.sin());
    let (mut pc, mut ps) = (1.0f64, 0.0f64);
    for (n, &v) in x.iter().enumerate() {
        re += v * pc;
        im -= v * ps;
        let t = pc * c - ps * s;
        ps = ps * c + pc * s;
        pc = t;
        if n % 1024 == 1023 {
            let ph = w * (n + 1) as f64;
            pc = ph.cos();
            ps = ph.sin();
        }
    }
    (re * re + im * im).sqrt()
}

/// The frequency of the largest spectral maximum of the windowed record `xw` in `[lo, hi]`.
pub fn peak_in(xw: &[f64], dt: f64, lo: f64, hi: f64) -> f64 {
    let t = xw.len() as f64 * dt;
    let step = 0.25 / t;
    let n = ((hi - lo) / step).ceil().max(2.0) as usize;
    let (mut best, mut fb) = (-1.0, lo);
    for i in 0..=n {
        let f = lo + (hi - lo) * i as f64 / n as f64;
        let m = dtft_mag(xw, dt, f);
        if m > best {
            best = m;
            fb = f;
        }
    }
    // Golden-section search for the maximum within one coarse step either side.
    let (mut a, mut b) = (fb - step, fb + step);
    let g = 0.5 * (5f64.sqrt() - 1.0);
    let mut c = b - g * (b - a);
    let mut d = a + g * (b - a);
    let (mut fc, mut fd) = (dtft_mag(xw, dt, c), dtft_mag(xw, dt, d));
    for _ in 0..60 {
        if fc > fd {
            b = d;
            d = c;
            fd = fc;
            c = b - g * (b - a);
            fc = dtft_mag(xw, dt, c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + g * (b - a);
            fd = dtft_mag(xw, dt, d);
        }
    }
    0.5 * (a + b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_two_close_tones_to_1e6() {
        let dt = 1e-12;
        let (f1, f2) = (12.345e9, 13.1e9);
        let x: Vec<f64> = (0..20000).map(|n| {
            let t = n as f64 * dt;
            (2.0 * std::f64::consts::PI * f1 * t).sin() + 0.3 * (2.0 * std::f64::consts::PI * f2 * t + 1.0).cos()
        }).collect();
        let xw = windowed(&x);
        let g1 = peak_in(&xw, dt, 12.0e9, 12.7e9);
        let g2 = peak_in(&xw, dt, 12.9e9, 13.3e9);
        assert!((g1 / f1 - 1.0).abs() < 1e-6, "{g1}");
        assert!((g2 / f2 - 1.0).abs() < 1e-6, "{g2}");
    }
}
