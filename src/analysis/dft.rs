//! Discrete Fourier transform of sampled signals at arbitrary frequencies.
//! Port series are short (one per port) and the requested frequencies few, so
//! a direct sum with a rotating phasor is exact enough and cheaper than an FFT
//! with zero padding to reach the same frequency resolution.

use num_complex::Complex64;

/// `X(f) = sum_n x[n] exp(-j 2 pi f t_n) dt` with `t_n = (n + offset) dt`.
/// Four frequencies share each pass over `x` (independent phasor chains, so
/// the pass is not bound by one chain's latency); each frequency's arithmetic
/// is the same as alone, so the result does not depend on the grouping.
pub fn dft(x: &[f64], dt: f64, offset: f64, freqs: &[f64]) -> Vec<Complex64> {
    const G: usize = 4;
    let mut out = Vec::with_capacity(freqs.len());
    for fs in freqs.chunks(G) {
        let g = fs.len();
        let mut w = [0.0; G];
        let mut step = [Complex64::new(1.0, 0.0); G];
        let mut ph = [Complex64::new(1.0, 0.0); G];
        let mut acc = [Complex64::new(0.0, 0.0); G];
        for i in 0..g {
            w[i] = 2.0 * std::f64::consts::PI * fs[i] * dt;
            // Rotating phasor, renormalised every few thousand samples so rounding does not drift.
            step[i] = Complex64::from_polar(1.0, -w[i]);
            ph[i] = Complex64::from_polar(1.0, -w[i] * offset);
        }
        for (n, &v) in x.iter().enumerate() {
            for i in 0..G {
                acc[i] += ph[i] * v;
                ph[i] *= step[i];
            }
            if n % 4096 == 4095 {
                for i in 0..g {
                    ph[i] = Complex64::from_polar(1.0, -w[i] * (n as f64 + 1.0 + offset));
                }
            }
        }
        out.extend(acc[..g].iter().map(|a| a * dt));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One frequency at a time: the grouped sum must give exactly this.
    fn dft_one_by_one(x: &[f64], dt: f64, offset: f64, freqs: &[f64]) -> Vec<Complex64> {
        freqs
            .iter()
            .map(|&f| {
                let w = 2.0 * std::f64::consts::PI * f * dt;
                let step = Complex64::from_polar(1.0, -w);
                let mut ph = Complex64::from_polar(1.0, -w * offset);
                let mut acc = Complex64::new(0.0, 0.0);
                for (n, &v) in x.iter().enumerate() {
                    acc += ph * v;
                    ph *= step;
                    if n % 4096 == 4095 {
                        ph = Complex64::from_polar(1.0, -w * (n as f64 + 1.0 + offset));
                    }
                }
                acc * dt
            })
            .collect()
    }

    #[test]
    fn grouped_frequencies_give_each_frequency_exactly() {
        let x: Vec<f64> = (0..9000).map(|i| (i as f64 * 0.013).sin() * (-(i as f64) * 3e-4).exp()).collect();
        for nf in [1, 3, 4, 7, 241] {
            let f: Vec<f64> = (0..nf).map(|i| 26e9 + 0.05e9 * i as f64).collect();
            assert_eq!(dft(&x, 1.3e-13, 0.5, &f), dft_one_by_one(&x, 1.3e-13, 0.5, &f));
        }
    }

    #[test]
    fn gaussian_transform_matches_analytic() {
        // exp(-(t/tau)^2) <-> tau sqrt(pi) exp(-(pi f tau)^2), centred at t0 -> phase exp(-j w t0).
        let tau = 1e-10;
        let t0 = 6.0 * tau;
        let dt = tau / 50.0;
        let n = (2.0 * t0 / dt) as usize;
        let x: Vec<f64> = (0..n).map(|i| (-((i as f64 * dt - t0) / tau).powi(2)).exp()).collect();
        let freqs = [0.0, 1e9, 3e9, 5e9];
        let got = dft(&x, dt, 0.0, &freqs);
        for (f, g) in freqs.iter().zip(got) {
            let mag = tau * std::f64::consts::PI.sqrt() * (-(std::f64::consts::PI * f * tau).powi(2)).exp();
            let want = Complex64::from_polar(mag, -2.0 * std::f64::consts::PI * f * t0);
            assert!((g - want).norm() < 1e-6 * tau, "f={f}: {g} vs {want}");
        }
    }
}
