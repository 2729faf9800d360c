//! Simulated binary crossover, bounded (Deb & Agrawal 1995), in the formulation
//! of DEAP's `cxSimulatedBinaryBounded` and pymoo's `SBX`.

use rand::Rng;

/// Cross two parents into two children. With probability `probability` the
/// pair is crossed; then each gene is crossed with probability 0.5 (pymoo's
/// `prob_var`), the children are clamped to `bounds`, and swapped with
/// probability 0.5. Larger `eta` keeps children closer to their parents.
pub fn sbx(
    p1: &[f64],
    p2: &[f64],
    bounds: &[(f64, f64)],
    probability: f64,
    eta: f64,
    rng: &mut impl Rng,
) -> (Vec<f64>, Vec<f64>) {
    let mut c1 = p1.to_vec();
    let mut c2 = p2.to_vec();
    if rng.random::<f64>() >= probability {
        return (c1, c2);
    }
    for (i, &(xl, xu)) in bounds.iter().enumerate() {
        if rng.random::<f64>() > 0.5 {
            continue;
        }
        // Identical genes or a fixed gene: nothing to spread.
        if (p1[i] - p2[i]).abs() <= 1e-14 || xu <= xl {
            continue;
        }
        let x1 = p1[i].min(p2[i]);
        let x2 = p1[i].max(p2[i]);
        let u: f64 = rng.random();
        let spread = |beta: f64| {
            // The spread factor's distribution is truncated so the child stays in bounds.
            let alpha = 2.0 - beta.powf(-(eta + 1.0));
            if u <= 1.0 / alpha {
                (u * alpha).powf(1.0 / (eta + 1.0))
            } else {
                (1.0 / (2.0 - u * alpha)).powf(1.0 / (eta + 1.0))
            }
        };
        let bq1 = spread(1.0 + 2.0 * (x1 - xl) / (x2 - x1));
        let y1 = (0.5 * (x1 + x2 - bq1 * (x2 - x1))).clamp(xl, xu);
        let bq2 = spread(1.0 + 2.0 * (xu - x2) / (x2 - x1));
        let y2 = (0.5 * (x1 + x2 + bq2 * (x2 - x1))).clamp(xl, xu);
        if rng.random::<f64>() <= 0.5 {
            c1[i] = y2;
            c2[i] = y1;
        } else {
            c1[i] = y1;
            c2[i] = y2;
        }
    }
    (c1, c2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[test]
    fn children_stay_in_bounds() {
        let bounds = [(0.0, 1.0), (-5.0, 5.0), (2.0, 2.0), (1e-3, 2e-3)];
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        for _ in 0..20_000 {
            let p: Vec<f64> = bounds.iter().map(|&(l, h)| l + rng.random::<f64>() * (h - l)).collect();
            let q: Vec<f64> = bounds.iter().map(|&(l, h)| l + rng.random::<f64>() * (h - l)).collect();
            let eta = rng.random::<f64>() * 30.0;
            let (a, b) = sbx(&p, &q, &bounds, 1.0, eta, &mut rng);
            for (i, &(l, h)) in bounds.iter().enumerate() {
                assert!(a[i] >= l && a[i] <= h && b[i] >= l && b[i] <= h, "gene {i}: {} {}", a[i], b[i]);
            }
        }
    }

    #[test]
    fn large_eta_keeps_children_near_parents_and_preserves_the_mean() {
        let bounds = [(0.0, 1.0)];
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        let (p, q) = ([0.4], [0.6]);
        let far = |eta: f64, rng: &mut Xoshiro256PlusPlus| {
            let mut dist = 0.0;
            let mut mean_shift = 0.0;
            let n = 20_000;
            for _ in 0..n {
                let (a, b) = sbx(&p, &q, &bounds, 1.0, eta, rng);
                // Distance of each child to the nearer parent.
                dist += (a[0] - 0.4).abs().min((a[0] - 0.6).abs()) + (b[0] - 0.4).abs().min((b[0] - 0.6).abs());
                mean_shift += 0.5 * (a[0] + b[0]) - 0.5;
            }
            (dist / (2 * n) as f64, mean_shift / n as f64)
        };
        let (d_sharp, shift) = far(100.0, &mut rng);
        let (d_wide, _) = far(1.0, &mut rng);
        // Half the genes are not crossed at all; the crossed ones sit within a few % of a parent.
        assert!(d_sharp < 0.005, "eta=100 mean distance {d_sharp}");
        assert!(d_wide > 4.0 * d_sharp, "eta=1 {d_wide} vs eta=100 {d_sharp}");
        // Away from the bounds SBX is symmetric: the pair's mean is preserved.
        assert!(shift.abs() < 1e-3, "mean shift {shift}");
    }

    #[test]
    fn probability_zero_copies_parents() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(0);
        let (a, b) = sbx(&[0.1, 0.2], &[0.3, 0.4], &[(0.0, 1.0); 2], 0.0, 15.0, &mut rng);
        assert_eq!((a, b), (vec![0.1, 0.2], vec![0.3, 0.4]));
    }
}
