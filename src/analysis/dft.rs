//! Discrete Fourier transform of sampled signals at arbitrary frequencies.
//! Port series are short (one per port) and the requested frequencies few, so
//! a direct sum with a rotating phasor is exact enough and cheaper than an FFT
//! with zero padding to reach the same frequency resolution.

use num_complex::Complex64;

/// `X(f) = sum_n x[n] exp(-j 2 pi f t_n) dt` with `t_n = (n + offset) dt`.
/// Eight frequencies share each pass over `x`, their phasors and sums in
/// separate real and imaginary arrays (independent chains the compiler runs
/// side by side in vector registers); each frequency's arithmetic is the
/// complex arithmetic of one frequency alone, in the same order, so the
/// result does not depend on the grouping.
pub fn dft(x: &[f64], dt: f64, offset: f64, freqs: &[f64]) -> Vec<Complex64> {
    const G: usize = 8;
    let mut out = Vec::with_capacity(freqs.len());
    for fs in freqs.chunks(G) {
        let g = fs.len();
        let mut w = [0.0; G];
        let (mut sr, mut si) = ([1.0; G], [0.0; G]);
        let (mut pr, mut pi) = ([1.0; G], [0.0; G]);
        let (mut ar, mut ai) = ([0.0; G], [0.0; G]);
        let phasor = |w: f64, t: f64| Complex64::from_polar(1.0, -w * t);
        for i in 0..g {
            w[i] = 2.0 * std::f64::consts::PI * fs[i] * dt;
            // Rotating phasor, renormalised every few thousand samples so rounding does not drift.
            let st = Complex64::from_polar(1.0, -w[i]);
            (sr[i], si[i]) = (st.re, st.im);
            let p = phasor(w[i], offset);
            (pr[i], pi[i]) = (p.re, p.im);
        }
        for (n, &v) in x.iter().enumerate() {
            for i in 0..G {
                // acc += ph * v; ph *= step (num_complex's order of terms).
                ar[i] += pr[i] * v;
                ai[i] += pi[i] * v;
                let re = pr[i] * sr[i] - pi[i] * si[i];
                let im = pr[i] * si[i] + pi[i] * sr[i];
                pr[i] = re;
                pi[i] = im;
            }
            if n % 4096 == 4095 {
                for i in 0..g {
                    let p = phasor(w[i], n as f64 + 1.0 + offset);
                    (pr[i], pi[i]) = (p.re, p.im);
                }
            }
        }
        out.extend((0..g).map(|i| Complex64::new(ar[i], ai[i]) * dt));
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
        let long: Vec<f64> = (0..30000).map(|i| (i as f64 * 0.01).sin()).collect();
        let f: Vec<f64> = (0..241).map(|i| 26e9 + 0.05e9 * i as f64).collect();
        let t = std::time::Instant::now();
        let a = dft(&long, 1e-13, 0.5, &f);
        let tg = t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        let b = dft_one_by_one(&long, 1e-13, 0.5, &f);
        println!("30,000 samples x 241 frequencies: grouped {tg:.4} s, one by one {:.4} s", t.elapsed().as_secs_f64());
        assert_eq!(a, b);
        let x: Vec<f64> = (0..9000).map(|i| (i as f64 * 0.013).sin() * (-(i as f64) * 3e-4).exp()).collect();
        for nf in [1, 3, 4, 7, 8, 9, 241] {
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
