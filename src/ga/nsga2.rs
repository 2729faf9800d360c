//! NSGA-II (Deb et al. 2002): fast non-dominated sort, crowding distance,
//! (mu + lambda) rank-and-crowding survival and a tournament on (rank, crowding),
//! all under constraint domination.

use std::cmp::Ordering;

use rand::Rng;

use super::ops::select;
use super::problem::Evaluation;

/// Pareto dominance for minimisation: no worse in every objective, better in one.
pub fn dominates(a: &[f64], b: &[f64]) -> bool {
    let mut strictly = false;
    for (x, y) in a.iter().zip(b) {
        if x > y {
            return false;
        }
        strictly |= x < y;
    }
    strictly
}

/// Deb's constrained domination: feasible dominates infeasible, lower violation
/// dominates higher, and between feasible designs Pareto dominance decides.
pub fn constrained_dominates(a: &Evaluation, b: &Evaluation) -> bool {
    match (a.is_feasible(), b.is_feasible()) {
        (true, false) => true,
        (false, true) => false,
        (false, false) => a.constraint_violation < b.constraint_violation,
        (true, true) => dominates(&a.objectives, &b.objectives),
    }
}

/// Fronts of indices into `evals`, best first; indices within a front ascend.
pub fn non_dominated_sort(evals: &[&Evaluation]) -> Vec<Vec<usize>> {
    let n = evals.len();
    let mut dominated_by_me: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut count = vec![0usize; n];
    for i in 0..n {
        for j in (i + 1)..n {
            if constrained_dominates(evals[i], evals[j]) {
                dominated_by_me[i].push(j);
                count[j] += 1;
            } else if constrained_dominates(evals[j], evals[i]) {
                dominated_by_me[j].push(i);
                count[i] += 1;
            }
        }
    }
    let mut fronts = Vec::new();
    let mut current: Vec<usize> = (0..n).filter(|&i| count[i] == 0).collect();
    while !current.is_empty() {
        let mut next = Vec::new();
        for &i in &current {
            for &j in &dominated_by_me[i] {
                count[j] -= 1;
                if count[j] == 0 {
                    next.push(j);
                }
            }
        }
        next.sort_unstable();
        fronts.push(std::mem::replace(&mut current, next));
    }
    fronts
}

/// Crowding distance of each member of `front` (same order): the normalised
/// side lengths of the cuboid spanned by its neighbours; the ends of each objective get infinity.
pub fn crowding_distance(evals: &[&Evaluation], front: &[usize]) -> Vec<f64> {
    let n = front.len();
    let mut d = vec![0.0; n];
    if n <= 2 {
        return vec![f64::INFINITY; n];
    }
    let m = evals[front[0]].objectives.len();
    let mut order: Vec<usize> = (0..n).collect();
    for k in 0..m {
        let f = |i: usize| evals[front[i]].objectives[k];
        // Stable sort on a total order: ties keep front order, so the result is deterministic.
        order.sort_by(|&a, &b| f(a).total_cmp(&f(b)));
        let (lo, hi) = (f(order[0]), f(order[n - 1]));
        d[order[0]] = f64::INFINITY;
        d[order[n - 1]] = f64::INFINITY;
        if hi <= lo {
            continue;
        }
        for w in 1..n - 1 {
            d[order[w]] += (f(order[w + 1]) - f(order[w - 1])) / (hi - lo);
        }
    }
    d
}

/// Rank (front number) and crowding distance of every member of a population.
#[derive(Debug, Clone, PartialEq)]
pub struct RankCrowding {
    pub rank: Vec<usize>,
    pub crowding: Vec<f64>,
}

pub fn rank_and_crowding(evals: &[&Evaluation]) -> RankCrowding {
    let mut rank = vec![0; evals.len()];
    let mut crowding = vec![0.0; evals.len()];
    for (r, front) in non_dominated_sort(evals).iter().enumerate() {
        for (&i, c) in front.iter().zip(crowding_distance(evals, front)) {
            rank[i] = r;
            crowding[i] = c;
        }
    }
    RankCrowding { rank, crowding }
}

/// (mu + lambda) survival: whole fronts while they fit, then the most crowded-apart of the next front.
/// Returns `n` indices into `evals` (fewer if `evals` is smaller).
pub fn survive(evals: &[&Evaluation], n: usize) -> Vec<usize> {
    let mut chosen = Vec::with_capacity(n);
    for front in non_dominated_sort(evals) {
        if chosen.len() + front.len() <= n {
            chosen.extend_from_slice(&front);
            continue;
        }
        let cd = crowding_distance(evals, &front);
        let mut order: Vec<usize> = (0..front.len()).collect();
        order.sort_by(|&a, &b| cd[b].total_cmp(&cd[a]));
        chosen.extend(order.iter().take(n - chosen.len()).map(|&i| front[i]));
        break;
    }
    chosen
}

/// Does `a` win a tournament against `b`? Constraint domination first, then
/// lower rank, then larger crowding distance.
pub fn beats(evals: &[&Evaluation], rc: &RankCrowding, a: usize, b: usize) -> bool {
    let (ea, eb) = (evals[a], evals[b]);
    if ea.is_feasible() != eb.is_feasible() || !ea.is_feasible() {
        return select::compare_constrained(ea, eb) == Ordering::Less;
    }
    match rc.rank[a].cmp(&rc.rank[b]) {
        Ordering::Less => true,
        Ordering::Greater => false,
        Ordering::Equal => rc.crowding[a] > rc.crowding[b],
    }
}

/// Tournament selection on (rank, crowding).
pub fn tournament(evals: &[&Evaluation], rc: &RankCrowding, size: usize, rng: &mut impl Rng) -> usize {
    select::tournament(evals.len(), size, rng, |a, b| beats(evals, rc, a, b))
}

/// Indices of the non-dominated members of `evals` under constraint domination,
/// leaving out failed simulations.
pub fn pareto_set(evals: &[&Evaluation]) -> Vec<usize> {
    let ok: Vec<usize> = (0..evals.len()).filter(|&i| evals[i].failure.is_none()).collect();
    let sub: Vec<&Evaluation> = ok.iter().map(|&i| evals[i]).collect();
    match non_dominated_sort(&sub).into_iter().next() {
        Some(front) => front.into_iter().map(|i| ok[i]).collect(),
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(o: &[f64]) -> Evaluation {
        Evaluation::ok(o.to_vec())
    }

    #[test]
    fn sort_and_crowding_on_a_known_set() {
        let e = [ev(&[1.0, 5.0]), ev(&[2.0, 3.0]), ev(&[4.0, 1.0]), ev(&[3.0, 4.0]), ev(&[5.0, 5.0]), ev(&[2.0, 3.0])];
        let r: Vec<&Evaluation> = e.iter().collect();
        assert_eq!(non_dominated_sort(&r), vec![vec![0, 1, 2, 5], vec![3], vec![4]]);
        let cd = crowding_distance(&r, &[0, 1, 2, 5]);
        assert_eq!(cd[0], f64::INFINITY);
        assert_eq!(cd[2], f64::INFINITY);
        // Duplicates 1 and 5 sit between 0 and 2 in both objectives, one of them
        // with its twin as a neighbour on each side.
        assert!(cd[1].is_finite() && cd[3].is_finite());
        assert_eq!(survive(&r, 3).len(), 3);
        assert_eq!(&survive(&r, 5)[..4], &[0, 1, 2, 5]);
    }

    #[test]
    fn constraints_rank_infeasible_last_by_violation() {
        let mut a = ev(&[0.0, 0.0]);
        a.constraint_violation = 0.5;
        let mut b = ev(&[-1.0, -1.0]);
        b.constraint_violation = 0.1;
        let c = ev(&[9.0, 9.0]);
        let r = vec![&a, &b, &c];
        assert_eq!(non_dominated_sort(&r), vec![vec![2], vec![1], vec![0]]);
        assert_eq!(survive(&r, 2), vec![2, 1]);
        assert_eq!(pareto_set(&r), vec![2]);
    }

    #[test]
    fn zdt1_converges_to_the_true_front() {
        use crate::ga::settings::GaSettings;
        use crate::ga::step::{new_state, step};
        use crate::ga::testfns::Zdt1;
        use crate::ga::Problem;
        let mut p = Zdt1 { n: 10 };
        let settings = GaSettings { population: 40, generations: 100, seed: 1, ..Default::default() };
        let mut st = new_state(p.genes(), 2, settings, "zdt1").unwrap();
        for _ in 0..=100 {
            step(&mut st, &mut p, &|_, _| {}).unwrap();
        }
        assert_eq!(st.generation, 100);
        let front: Vec<&Evaluation> = st.best.iter().map(|i| st.evaluation(i)).collect();
        assert!(front.len() >= 20, "archive of {} points", front.len());
        for (i, a) in front.iter().enumerate() {
            for b in &front[i + 1..] {
                assert!(!dominates(&a.objectives, &b.objectives) && !dominates(&b.objectives, &a.objectives));
            }
        }
        // Distance to the true front, and coverage of it.
        let gap = |e: &&Evaluation| (e.objectives[1] - (1.0 - e.objectives[0].sqrt())).abs();
        let mean_gap = front.iter().map(gap).sum::<f64>() / front.len() as f64;
        assert!(mean_gap < 0.02, "mean distance to the front {mean_gap}");
        let f1: Vec<f64> = front.iter().map(|e| e.objectives[0]).collect();
        let span = f1.iter().copied().fold(0.0, f64::max) - f1.iter().copied().fold(1.0, f64::min);
        assert!(span > 0.9, "front spans only {span} of f1");
        // The final population's first front is non-dominated too.
        let pop: Vec<&Evaluation> = st.population.iter().map(|i| st.evaluation(i)).collect();
        let first = &non_dominated_sort(&pop)[0];
        for &i in first {
            assert!(first.iter().all(|&j| !constrained_dominates(pop[j], pop[i])));
        }
        // A random-search baseline with the same budget is much further from the front,
        // so the tolerance above is one the test can fail.
        use rand::{Rng, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(1);
        let rand_evals: Vec<Evaluation> = (0..st.evaluations)
            .map(|_| Evaluation::ok(Zdt1::objectives(&(0..10).map(|_| rng.random::<f64>()).collect::<Vec<_>>()).to_vec()))
            .collect();
        let rr: Vec<&Evaluation> = rand_evals.iter().collect();
        let rf: Vec<&Evaluation> = pareto_set(&rr).into_iter().map(|i| rr[i]).collect();
        let rand_gap = rf.iter().map(gap).sum::<f64>() / rf.len() as f64;
        assert!(rand_gap > 10.0 * mean_gap, "random search gap {rand_gap} vs NSGA-II {mean_gap}");
    }
}
