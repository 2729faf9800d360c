//! Differential evolution, batch-synchronous: every generation makes one
//! trial vector per population member, simulates them as one batch, and each
//! trial replaces its target if it is at least as good (constraint domination, as the GA).
//!
//! - SHADE (Tanabe & Fukunaga, "Success-History Based Parameter Adaptation
//!   for Differential Evolution", CEC 2013): DE/current-to-pbest/1/bin with an
//!   external archive of replaced targets; F and CR drawn around a memory of
//!   the successful values, updated by fitness-improvement-weighted means.
//! - DE/rand/1/bin (Storn & Price 1997) with fixed F and CR.
//!
//! A mutant outside a gene's bounds is put half-way between the target and
//! the bound (SHADE's rule); trials are then repaired onto the lattice like
//! the GA's children, so the population holds only designs that were simulated.

use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use super::breed::child_rng;
use super::genome::{random_genome, repair_genome, GeneSpec};
use super::methods::{DeStrategy, Method};
use super::ops::select::compare_constrained;
use super::state::{GaState, Individual};
use super::step_methods::normal;

/// SHADE's CR memory value meaning "CR = 0 from now on" is not used; memories start at 0.5.
const MEMORY_START: f64 = 0.5;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeState {
    /// SHADE: replaced targets, at most one population's worth.
    pub archive: Vec<Vec<f64>>,
    /// SHADE: the success memories of CR and F, and the slot updated next.
    pub m_cr: Vec<f64>,
    pub m_f: Vec<f64>,
    pub slot: usize,
    /// (F, CR) of each trial in flight (between ask and tell).
    #[serde(skip)]
    pending: Vec<(f64, f64)>,
}

impl DeState {
    pub fn new(strategy: &DeStrategy) -> DeState {
        let h = match strategy {
            DeStrategy::Shade { memory } => *memory,
            DeStrategy::RandOneBin { .. } => 0,
        };
        DeState { archive: vec![], m_cr: vec![MEMORY_START; h], m_f: vec![MEMORY_START; h], slot: 0, pending: vec![] }
    }

    pub fn ask(&mut self, state: &GaState, rng: &mut Xoshiro256PlusPlus) -> Vec<Vec<f64>> {
        let genes = &state.genes;
        if !state.started() {
            return (0..state.settings.population).map(|_| random_genome(genes, &mut child_rng(rng))).collect();
        }
        let Method::De(p) = &state.settings.method else { unreachable!("DE state under another method") };
        let pop: Vec<&[f64]> = state.population.iter().map(|i| i.genome.as_slice()).collect();
        let np = pop.len();
        let mut order: Vec<usize> = (0..np).collect();
        order.sort_by(|&a, &b| compare_constrained(state.evaluation(&state.population[a]), state.evaluation(&state.population[b])));
        let bounds: Vec<(f64, f64)> = genes.iter().map(GeneSpec::operator_bounds).collect();
        self.pending.clear();
        let mut trials = Vec::with_capacity(np);
        for i in 0..np {
            let (v, f, cr) = match p.strategy {
                DeStrategy::Shade { .. } => {
                    let r = rng.random_range(0..self.m_cr.len());
                    let cr = (self.m_cr[r] + 0.1 * normal(rng)).clamp(0.0, 1.0);
                    let f = loop {
                        let f = self.m_f[r] + 0.1 * (std::f64::consts::PI * (rng.random::<f64>() - 0.5)).tan();
                        if f > 0.0 {
                            break f.min(1.0);
                        }
                    };
                    let pmin = 2.0 / np as f64;
                    let pi = pmin + rng.random::<f64>() * (0.2 - pmin).max(0.0);
                    let top = ((pi * np as f64).round() as usize).clamp(1, np);
                    let pbest = order[rng.random_range(0..top)];
                    let r1 = pick(rng, np, &[i]);
                    let r2 = pick(rng, np + self.archive.len(), &[i, r1]);
                    let x2: &[f64] = if r2 < np { pop[r2] } else { &self.archive[r2 - np] };
                    let v: Vec<f64> =
                        (0..genes.len()).map(|j| pop[i][j] + f * (pop[pbest][j] - pop[i][j]) + f * (pop[r1][j] - x2[j])).collect();
                    (v, f, cr)
                }
                DeStrategy::RandOneBin { f, cr } => {
                    let r1 = pick(rng, np, &[i]);
                    let r2 = pick(rng, np, &[i, r1]);
                    let r3 = pick(rng, np, &[i, r1, r2]);
                    let v: Vec<f64> = (0..genes.len()).map(|j| pop[r1][j] + f * (pop[r2][j] - pop[r3][j])).collect();
                    (v, f, cr)
                }
            };
            trials.push(crossover(pop[i], &v, &bounds, cr, genes, rng));
            self.pending.push((f, cr));
        }
        trials
    }

    pub fn tell(&mut self, state: &mut GaState, offspring: &[Individual], rng: &mut Xoshiro256PlusPlus) {
        if state.population.is_empty() || state.population.len() != offspring.len() {
            state.population = offspring.to_vec();
            return;
        }
        let np = offspring.len();
        let pending = std::mem::take(&mut self.pending);
        let mut wins: Vec<(f64, f64, f64)> = Vec::new();
        for i in 0..np {
            let (parent, trial) = (state.evaluation(&state.population[i]), state.evaluation(&offspring[i]));
            match compare_constrained(trial, parent) {
                std::cmp::Ordering::Less => {
                    let gain = if parent.is_feasible() && trial.is_feasible() {
                        parent.fitness() - trial.fitness()
                    } else {
                        parent.constraint_violation - trial.constraint_violation
                    };
                    if let Some(&(f, cr)) = pending.get(i) {
                        wins.push((f, cr, gain.abs()));
                    }
                    self.archive.push(state.population[i].genome.clone());
                    state.population[i] = offspring[i].clone();
                }
                std::cmp::Ordering::Equal => state.population[i] = offspring[i].clone(),
                std::cmp::Ordering::Greater => {}
            }
        }
        if self.m_cr.is_empty() {
            self.archive.clear();
            return;
        }
        while self.archive.len() > np {
            let k = rng.random_range(0..self.archive.len());
            self.archive.swap_remove(k);
        }
        if !wins.is_empty() {
            let total: f64 = wins.iter().map(|w| w.2).sum();
            let weight = |w: &(f64, f64, f64)| if total > 0.0 { w.2 / total } else { 1.0 / wins.len() as f64 };
            let m_cr: f64 = wins.iter().map(|w| weight(w) * w.1).sum();
            let num: f64 = wins.iter().map(|w| weight(w) * w.0 * w.0).sum();
            let den: f64 = wins.iter().map(|w| weight(w) * w.0).sum();
            self.m_cr[self.slot] = m_cr;
            self.m_f[self.slot] = if den > 0.0 { num / den } else { MEMORY_START };
            self.slot = (self.slot + 1) % self.m_cr.len();
        }
    }
}

/// A uniform index below `n` that is none of `not` (n > not.len()).
fn pick(rng: &mut Xoshiro256PlusPlus, n: usize, not: &[usize]) -> usize {
    loop {
        let k = rng.random_range(0..n);
        if !not.contains(&k) {
            return k;
        }
    }
}

/// Binomial crossover of target `x` and mutant `v`, with SHADE's bound rule, then the lattice repair.
pub(crate) fn crossover(x: &[f64], v: &[f64], bounds: &[(f64, f64)], cr: f64, genes: &[GeneSpec], rng: &mut Xoshiro256PlusPlus) -> Vec<f64> {
    let n = x.len();
    let jrand = rng.random_range(0..n);
    let mut u: Vec<f64> = (0..n)
        .map(|j| {
            let take = j == jrand || rng.random::<f64>() < cr;
            if !take {
                return x[j];
            }
            let (lo, hi) = bounds[j];
            if v[j] < lo {
                0.5 * (lo + x[j])
            } else if v[j] > hi {
                0.5 * (hi + x[j])
            } else {
                v[j]
            }
        })
        .collect();
    repair_genome(genes, &mut u);
    u
}

#[cfg(test)]
mod tests {
    use crate::ga::settings::{GaSettings, Stop};
    use crate::ga::testfns::{minimise, Benchmark};

    fn de(strategy: &str, population: usize, seed: u64) -> GaSettings {
        let mut g = GaSettings::from_ron_str(&format!("De(population: {population}, seed: {seed}, strategy: {strategy})")).unwrap();
        g.stop = Stop::none();
        g
    }

    /// SHADE, seeds 1-3: sphere (10 genes) to 1e-8, Rosenbrock (5) to 1e-6,
    /// Rastrigin (5) to 1e-6, each within its budget.
    #[test]
    fn shade_reaches_the_optimum() {
        for seed in 1..=3 {
            let (best, evals) = minimise(&mut Benchmark::sphere(10), de("Shade()", 30, seed), 1e-8, 40_000);
            assert!(best <= 1e-8, "sphere seed {seed}: {best} after {evals}");
            let (best, evals) = minimise(&mut Benchmark::rosenbrock(5), de("Shade()", 30, seed), 1e-6, 100_000);
            assert!(best <= 1e-6, "rosenbrock seed {seed}: {best} after {evals}");
            let (best, evals) = minimise(&mut Benchmark::rastrigin(5), de("Shade()", 30, seed), 1e-6, 60_000);
            assert!(best <= 1e-6, "rastrigin seed {seed}: {best} after {evals}");
        }
    }

    /// DE/rand/1/bin, seeds 1-3: sphere (5 genes) to 1e-8, Rastrigin (5) to
    /// 1e-6 with the separable setting CR = 0.1 (Storn & Price's advice).
    #[test]
    fn rand_one_bin_reaches_the_optimum() {
        for seed in 1..=3 {
            let (best, evals) = minimise(&mut Benchmark::sphere(5), de("RandOneBin()", 25, seed), 1e-8, 40_000);
            assert!(best <= 1e-8, "sphere seed {seed}: {best} after {evals}");
            let (best, evals) = minimise(&mut Benchmark::rastrigin(5), de("RandOneBin(f: 0.5, cr: 0.1)", 25, seed), 1e-6, 60_000);
            assert!(best <= 1e-6, "rastrigin seed {seed}: {best} after {evals}");
        }
    }
}
