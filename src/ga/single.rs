//! The single-objective GA: generational replacement with elitism, tournament
//! selection under constraint domination.

use super::ops::select::compare_constrained;
use super::problem::Evaluation;

/// Indices of the `k` best members, best first (ties keep population order).
/// Distinct designs are preferred (two copies of one design would waste an
/// elite slot); copies fill the remaining slots only when too few distinct designs exist.
pub fn elites(evals: &[&Evaluation], keys: &[&str], k: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..evals.len()).collect();
    order.sort_by(|&a, &b| compare_constrained(evals[a], evals[b]));
    let mut chosen: Vec<usize> = Vec::with_capacity(k);
    for &i in &order {
        if chosen.len() < k && chosen.iter().all(|&c| keys[c] != keys[i]) {
            chosen.push(i);
        }
    }
    for &i in &order {
        if chosen.len() < k && !chosen.contains(&i) {
            chosen.push(i);
        }
    }
    chosen
}

/// Index of the best member.
pub fn best(evals: &[&Evaluation]) -> Option<usize> {
    (0..evals.len()).min_by(|&a, &b| compare_constrained(evals[a], evals[b]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elites_are_distinct_and_best_first() {
        let e = [Evaluation::ok(vec![3.0]), Evaluation::ok(vec![1.0]), Evaluation::ok(vec![1.0]), Evaluation::ok(vec![2.0])];
        let r: Vec<&Evaluation> = e.iter().collect();
        assert_eq!(elites(&r, &["a", "b", "b", "c"], 2), vec![1, 3]);
        assert_eq!(elites(&r, &["a", "b", "d", "c"], 2), vec![1, 2]);
        // Too few distinct designs: copies keep the population at full size.
        assert_eq!(elites(&r, &["a", "a", "a", "a"], 3), vec![1, 2, 3]);
        assert_eq!(best(&r), Some(1));
    }
}
