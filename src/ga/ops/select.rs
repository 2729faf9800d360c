//! Tournament selection with constraint domination (Deb 2000): feasible beats
//! infeasible, lower violation beats higher, then lower fitness wins.

use std::cmp::Ordering;

use rand::Rng;

use crate::ga::problem::Evaluation;

/// Single-objective order under constraint domination: `Less` means `a` is better.
pub fn compare_constrained(a: &Evaluation, b: &Evaluation) -> Ordering {
    match (a.is_feasible(), b.is_feasible()) {
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (false, false) => a.constraint_violation.total_cmp(&b.constraint_violation),
        (true, true) => a.fitness().total_cmp(&b.fitness()),
    }
}

/// Index of the winner of a tournament among `n` candidates: `size` distinct
/// contestants drawn uniformly; `better(a, b)` says whether `a` beats `b`.
/// Ties keep the earlier-drawn contestant, so the result depends only on the RNG.
pub fn tournament(n: usize, size: usize, rng: &mut impl Rng, better: impl Fn(usize, usize) -> bool) -> usize {
    // Populations hold at least 2 (GaSettings::validate), so n >= 1 and at
    // least one contestant is drawn.
    assert!(n > 0, "tournament over an empty population");
    let size = size.clamp(1, n);
    let mut contestants = rand::seq::index::sample(rng, n, size).into_iter();
    let mut champion = contestants.next().expect("size >= 1");
    for c in contestants {
        if better(c, champion) {
            champion = c;
        }
    }
    champion
}

/// Tournament on single-objective evaluations with constraint domination.
pub fn tournament_constrained(evals: &[&Evaluation], size: usize, rng: &mut impl Rng) -> usize {
    tournament(evals.len(), size, rng, |a, b| compare_constrained(evals[a], evals[b]) == Ordering::Less)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn ev(f: f64, cv: f64) -> Evaluation {
        Evaluation { constraint_violation: cv, ..Evaluation::ok(vec![f]) }
    }

    #[test]
    fn constraint_domination_order() {
        let feasible_bad = ev(100.0, 0.0);
        let infeasible_good = ev(-100.0, 0.1);
        let infeasible_worse = ev(-200.0, 0.5);
        assert_eq!(compare_constrained(&feasible_bad, &infeasible_good), Ordering::Less);
        assert_eq!(compare_constrained(&infeasible_good, &infeasible_worse), Ordering::Less);
        assert_eq!(compare_constrained(&ev(1.0, 0.0), &ev(2.0, 0.0)), Ordering::Less);
    }

    #[test]
    fn tournament_pressure_matches_theory() {
        // With n ranked candidates and binary tournaments without replacement,
        // the best wins in every tournament it enters: P = 2/n. The worst never wins.
        let evals: Vec<Evaluation> = (0..10).map(|i| ev(i as f64, 0.0)).collect();
        let refs: Vec<&Evaluation> = evals.iter().collect();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let mut wins = [0usize; 10];
        let draws = 20_000;
        for _ in 0..draws {
            wins[tournament_constrained(&refs, 2, &mut rng)] += 1;
        }
        let p_best = wins[0] as f64 / draws as f64;
        assert!((p_best - 0.2).abs() < 0.015, "p_best = {p_best}");
        assert_eq!(wins[9], 0);
        // Size 3: the best wins with P = 3/10.
        let mut best3 = 0;
        for _ in 0..draws {
            best3 += (tournament_constrained(&refs, 3, &mut rng) == 0) as usize;
        }
        assert!((best3 as f64 / draws as f64 - 0.3).abs() < 0.015);
    }

    #[test]
    fn infeasible_loses_to_any_feasible() {
        let evals = [ev(1e9, 0.0), ev(-1e9, 1e-9)];
        let refs: Vec<&Evaluation> = evals.iter().collect();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        for _ in 0..100 {
            assert_eq!(tournament_constrained(&refs, 2, &mut rng), 0);
        }
    }
}
