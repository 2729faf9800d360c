//! Discrete Fourier transform of sampled signals at arbitrary frequencies.
//! Port series are short (one per port) and the requested frequencies few, so
//! a direct sum with a rotating phasor is exact enough and cheaper than an FFT
//! with zero padding to reach the same frequency resolution.

use num_complex::Complex64;

/// `X(f) = sum_n x[n] exp(-j 2 pi f t_n) dt` with `t_n = (n + offset) dt`.
///
/// Per frequency a rotating phasor, renormalised every [`RENORM`] samples so
/// rounding does not drift ([`dft_one`], the definition). The frequencies run
/// 32, 16 or 8 at a time (AVX-512, AVX2, other), each lane with exactly the operations of `dft_one`
/// (no fused multiply-add), so the result is `dft_one`'s bits, in vectors
/// (AVX-512 / AVX2 where the CPU has them) with several independent phasor
/// chains in flight.
pub fn dft(x: &[f64], dt: f64, offset: f64, freqs: &[f64]) -> Vec<Complex64> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has the features.
            return by_lanes::<32>(freqs, |f| unsafe { dft_lanes_avx512(x, dt, offset, f) });
        }
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return by_lanes::<16>(freqs, |f| unsafe { dft_lanes_avx2(x, dt, offset, f) });
        }
    }
    by_lanes::<8>(freqs, |f| dft_lanes_any(x, dt, offset, f))
}

/// `lanes` over the frequencies, `L` at a time (the last group padded).
fn by_lanes<const L: usize>(freqs: &[f64], lanes: impl Fn(&[f64; L]) -> [Complex64; L]) -> Vec<Complex64> {
    let mut out = Vec::with_capacity(freqs.len());
    for fs in freqs.chunks(L) {
        let mut f = [0.0; L];
        f[..fs.len()].copy_from_slice(fs);
        out.extend_from_slice(&lanes(&f)[..fs.len()]);
    }
    out
}

/// Samples between two renormalisations of the phasor.
const RENORM: usize = 4096;

/// One frequency: the definition the lanes of [`dft`] follow.
pub fn dft_one(x: &[f64], dt: f64, offset: f64, f: f64) -> Complex64 {
    let w = 2.0 * std::f64::consts::PI * f * dt;
    let step = Complex64::from_polar(1.0, -w);
    let mut ph = Complex64::from_polar(1.0, -w * offset);
    let mut acc = Complex64::new(0.0, 0.0);
    for (n, &v) in x.iter().enumerate() {
        acc += ph * v;
        ph *= step;
        if n % RENORM == RENORM - 1 {
            ph = Complex64::from_polar(1.0, -w * (n as f64 + 1.0 + offset));
        }
    }
    acc * dt
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn dft_lanes_avx512(x: &[f64], dt: f64, offset: f64, f: &[f64; 32]) -> [Complex64; 32] {
    dft_lanes_any(x, dt, offset, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dft_lanes_avx2(x: &[f64], dt: f64, offset: f64, f: &[f64; 16]) -> [Complex64; 16] {
    dft_lanes_any(x, dt, offset, f)
}

/// [`dft_one`] for each lane, the lanes side by side (plain per-lane loops
/// over arrays, which LLVM vectorises at the caller's instruction set).
#[inline(always)]
fn dft_lanes_any<const LANES: usize>(x: &[f64], dt: f64, offset: f64, f: &[f64; LANES]) -> [Complex64; LANES] {
    let w: [f64; LANES] = std::array::from_fn(|l| 2.0 * std::f64::consts::PI * f[l] * dt);
    let polar = |theta: f64| Complex64::from_polar(1.0, theta);
    let (mut sr, mut si) = ([0.0; LANES], [0.0; LANES]);
    let (mut pr, mut pi) = ([0.0; LANES], [0.0; LANES]);
    for l in 0..LANES {
        let s = polar(-w[l]);
        (sr[l], si[l]) = (s.re, s.im);
        let p = polar(-w[l] * offset);
        (pr[l], pi[l]) = (p.re, p.im);
    }
    let (mut ar, mut ai) = ([0.0; LANES], [0.0; LANES]);
    for (b, block) in x.chunks(RENORM).enumerate() {
        for &v in block {
            for l in 0..LANES {
                // acc += ph * v
                ar[l] += pr[l] * v;
                ai[l] += pi[l] * v;
                // ph *= step (num-complex's MulAssign)
                let a = pr[l];
                pr[l] = pr[l] * sr[l] - pi[l] * si[l];
                pi[l] = pi[l] * sr[l] + a * si[l];
            }
        }
        if block.len() == RENORM {
            let n = b * RENORM + RENORM - 1;
            for l in 0..LANES {
                let p = polar(-w[l] * (n as f64 + 1.0 + offset));
                (pr[l], pi[l]) = (p.re, p.im);
            }
        }
    }
    std::array::from_fn(|l| Complex64::new(ar[l], ai[l]) * dt)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn lanes_give_the_bits_of_one_frequency_at_a_time() {
        // Several renormalisations, a partial last block and a partial last group of lanes.
        let dt = 3.1e-13;
        let x: Vec<f64> = (0..3 * RENORM + 123).map(|i| (i as f64 * 0.013).sin() * (-(i as f64) * 2e-4).exp()).collect();
        let freqs: Vec<f64> = (0..32 + 7).map(|k| 26e9 + 0.05e9 * k as f64).chain([0.0]).collect();
        for offset in [0.0, 0.5, 1.0] {
            let mut runs = vec![("best", dft(&x, dt, offset, &freqs)), ("8 lanes", by_lanes::<8>(&freqs, |f| dft_lanes_any(&x, dt, offset, f)))];
            #[cfg(target_arch = "x86_64")]
            if std::is_x86_feature_detected!("avx2") {
                runs.push(("avx2", by_lanes::<16>(&freqs, |f| unsafe { dft_lanes_avx2(&x, dt, offset, f) })));
            }
            for (what, got) in runs {
                for (&f, g) in freqs.iter().zip(&got) {
                    let want = dft_one(&x, dt, offset, f);
                    assert_eq!((g.re.to_bits(), g.im.to_bits()), (want.re.to_bits(), want.im.to_bits()), "{what}: f={f} offset {offset}");
                }
            }
        }
    }
}
