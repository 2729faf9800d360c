//! Polynomial mutation, bounded (Deb & Goyal 1996), as DEAP's `mutPolynomialBounded` and pymoo's `PM`.

use rand::Rng;

/// Mutate each gene with probability `probability`; larger `eta` gives smaller
/// steps. The perturbation distribution is scaled to the distance from each
/// bound, so the result is always within `bounds`.
pub fn polynomial(x: &mut [f64], bounds: &[(f64, f64)], probability: f64, eta: f64, rng: &mut impl Rng) {
    let mut_pow = 1.0 / (eta + 1.0);
    for (v, &(xl, xu)) in x.iter_mut().zip(bounds) {
        if rng.random::<f64>() >= probability || xu <= xl {
            continue;
        }
        let d1 = (*v - xl) / (xu - xl);
        let d2 = (xu - *v) / (xu - xl);
        let u: f64 = rng.random();
        let dq = if u < 0.5 {
            let val = 2.0 * u + (1.0 - 2.0 * u) * (1.0 - d1).powf(eta + 1.0);
            val.powf(mut_pow) - 1.0
        } else {
            let val = 2.0 * (1.0 - u) + 2.0 * (u - 0.5) * (1.0 - d2).powf(eta + 1.0);
            1.0 - val.powf(mut_pow)
        };
        *v = (*v + dq * (xu - xl)).clamp(xl, xu);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[test]
    fn stays_in_bounds_even_at_the_bounds() {
        let bounds = [(0.0, 1.0), (-3.0, -1.0), (4.0, 4.0)];
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(2);
        for k in 0..30_000 {
            let mut x: Vec<f64> = match k % 3 {
                0 => bounds.iter().map(|b| b.0).collect(),
                1 => bounds.iter().map(|b| b.1).collect(),
                _ => bounds.iter().map(|&(l, h)| l + rng.random::<f64>() * (h - l)).collect(),
            };
            polynomial(&mut x, &bounds, 1.0, rng.random::<f64>() * 40.0, &mut rng);
            for (v, &(l, h)) in x.iter().zip(&bounds) {
                assert!(*v >= l && *v <= h, "{v} outside [{l}, {h}]");
            }
        }
    }

    #[test]
    fn step_size_shrinks_with_eta_and_is_unbiased_mid_range() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
        let mut stats = |eta: f64| {
            let (mut abs, mut signed) = (0.0, 0.0);
            let n = 20_000;
            for _ in 0..n {
                let mut x = [0.5];
                polynomial(&mut x, &[(0.0, 1.0)], 1.0, eta, &mut rng);
                abs += (x[0] - 0.5).abs();
                signed += x[0] - 0.5;
            }
            (abs / n as f64, signed / n as f64)
        };
        let (a20, s20) = stats(20.0);
        let (a100, _) = stats(100.0);
        // For eta=20 the mean |step| is about 1/(eta+2) of the range, a few per cent.
        assert!(a20 > 0.01 && a20 < 0.06, "eta=20 mean step {a20}");
        assert!(a100 < 0.5 * a20, "eta=100 step {a100} vs eta=20 {a20}");
        assert!(s20.abs() < 2e-3, "bias {s20}");
    }

    #[test]
    fn probability_controls_how_many_genes_change() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
        let bounds = vec![(0.0, 1.0); 10];
        let mut changed = 0;
        for _ in 0..2000 {
            let mut x = vec![0.5; 10];
            polynomial(&mut x, &bounds, 0.1, 20.0, &mut rng);
            changed += x.iter().filter(|&&v| v != 0.5).count();
        }
        // Expected 0.1 * 10 * 2000 = 2000 changed genes.
        assert!((changed as f64 - 2000.0).abs() < 200.0, "{changed}");
    }
}
