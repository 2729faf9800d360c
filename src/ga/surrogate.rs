//! Surrogate-assisted differential evolution in the manner of SADEA (Liu,
//! Zhang & Gielen, "Efficient and accurate antenna design optimization using
//! differential evolution and Gaussian process machine learning surrogate
//! model", IEEE Trans. Antennas Propag. 2014), batch-synchronous:
//!
//! 1. Generation 0 is a Latin hypercube of `initial` designs.
//! 2. Each later generation the `pool` best designs simulated so far parent
//!    `trials` DE/current-to-best/1/bin trial vectors each (F = CR = 0.8);
//!    infeasible and already-simulated ones are dropped.
//! 3. A Gaussian process ([`super::gp`]) fitted to the best `train_max`
//!    simulated designs (fitness as ln(1 + f) where no fitness is negative)
//!    ranks the trials by lower confidence bound mean - lcb x sd; the
//!    `population` best are simulated, as one batch.
//!
//! The model's time per generation goes into the history beside the
//! simulation time. With `auto_off`, the first generation whose model time
//! exceeds its simulation time switches the model off for the rest of the run
//! (recorded in the state): the trials are then simulated unscreened, as plain DE.

use std::time::Instant;

use rand::seq::SliceRandom;
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use super::de::crossover;
use super::genome::{genome_from_key, genome_key, GeneSpec};
use super::gp::Gp;
use super::methods::{Method, SurrogateParams};
use super::ops::select::compare_constrained;
use super::problem::Evaluation;
use super::state::{GaState, Individual};
use super::step_methods::{from_unit, to_unit, Asked};

/// SADEA's DE settings.
const F: f64 = 0.8;
const CR: f64 = 0.8;
/// Random starts of the hyperparameter fit besides the default and the last fit.
const FIT_STARTS: usize = 1;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SurrogateState {
    /// The generation whose model time exceeded its simulation time (model off since).
    pub off_since: Option<usize>,
    /// The last fit's log hyperparameters: the next fit starts from them too.
    pub theta: Option<Vec<f64>>,
}

impl SurrogateState {
    pub fn ask(&mut self, state: &GaState, rng: &mut Xoshiro256PlusPlus, violation: &dyn Fn(&[f64]) -> f64) -> Asked {
        let Method::Surrogate(p) = state.settings.method.clone() else { unreachable!("surrogate state under another method") };
        let genes = &state.genes;
        if !state.started() {
            let n = initial_size(&p, state.settings.population, genes.len());
            return Asked { candidates: latin_hypercube(genes, n, rng), model_seconds: None };
        }
        let t0 = Instant::now();
        let ranked = ranked_designs(state);
        let pool: Vec<&Vec<f64>> = ranked.iter().take(p.pool).map(|(g, _)| g).collect();
        let best = pool[0];
        let bounds: Vec<(f64, f64)> = genes.iter().map(GeneSpec::operator_bounds).collect();
        let mut seen = std::collections::BTreeSet::new();
        let mut trials: Vec<Vec<f64>> = Vec::new();
        for _ in 0..p.trials {
            for (i, x) in pool.iter().enumerate() {
                let np = pool.len();
                let (r1, r2) = if np >= 3 {
                    let r1 = loop {
                        let k = rng.random_range(0..np);
                        if k != i {
                            break k;
                        }
                    };
                    let r2 = loop {
                        let k = rng.random_range(0..np);
                        if k != i && k != r1 {
                            break k;
                        }
                    };
                    (r1, r2)
                } else {
                    (i, i)
                };
                let v: Vec<f64> = (0..genes.len()).map(|j| x[j] + F * (best[j] - x[j]) + F * (pool[r1][j] - pool[r2][j])).collect();
                let u = crossover(x, &v, &bounds, CR, genes, rng);
                let key = genome_key(&u);
                if state.cache.contains_key(&key) || !seen.insert(key) || violation(&u) > 0.0 {
                    continue;
                }
                trials.push(u);
            }
        }
        let want = state.settings.population;
        if self.off_since.is_some() {
            trials.truncate(want);
            return Asked { candidates: trials, model_seconds: None };
        }
        // Training data: feasible designs simulated successfully, the best first.
        let train: Vec<&(Vec<f64>, &Evaluation)> =
            ranked.iter().filter(|(_, e)| e.is_feasible() && e.is_valid()).take(p.train_max).collect();
        let log = train.iter().all(|(_, e)| e.fitness() >= 0.0);
        let xs: Vec<Vec<f64>> = train.iter().map(|(g, _)| to_unit(genes, g)).collect();
        let ys: Vec<f64> = train.iter().map(|(_, e)| if log { e.fitness().ln_1p() } else { e.fitness() }).collect();
        let model = if trials.len() > want { Gp::fit(xs, &ys, rng, FIT_STARTS, self.theta.as_deref()) } else { None };
        if let Some(gp) = &model {
            self.theta = Some(gp.theta.clone());
            let mut scored: Vec<(f64, Vec<f64>)> = trials
                .into_iter()
                .map(|u| {
                    let (m, sd) = gp.predict(&to_unit(genes, &u));
                    (m - p.lcb * sd, u)
                })
                .collect();
            // Stable: equal bounds keep the order the trials were made in.
            scored.sort_by(|a, b| a.0.total_cmp(&b.0));
            trials = scored.into_iter().map(|(_, u)| u).collect();
        }
        trials.truncate(want);
        Asked { candidates: trials, model_seconds: Some(t0.elapsed().as_secs_f64()) }
    }

    pub fn tell(&mut self, state: &mut GaState, _offspring: &[Individual], (evaluation_seconds, model_seconds): (f64, Option<f64>)) {
        let Method::Surrogate(p) = &state.settings.method else { unreachable!("surrogate state under another method") };
        let pool = p.pool;
        if p.auto_off && self.off_since.is_none() && state.started() {
            if let Some(m) = model_seconds {
                if m > evaluation_seconds {
                    // `state.generation` is still the previous generation's: off from the one after this.
                    self.off_since = Some(state.generation + 2);
                }
            }
        }
        // The population shown in the history: the pool the next generation breeds from.
        state.population = ranked_designs(state).into_iter().take(pool).map(|(g, _)| Individual::new(g)).collect();
    }
}

/// Every design evaluated so far, best first (constraint domination; ties in key order).
fn ranked_designs(state: &GaState) -> Vec<(Vec<f64>, &Evaluation)> {
    let mut all: Vec<(Vec<f64>, &Evaluation)> =
        state.cache.iter().filter_map(|(k, e)| genome_from_key(k).map(|g| (g, e))).collect();
    all.sort_by(|a, b| compare_constrained(a.1, b.1));
    all
}

fn initial_size(p: &SurrogateParams, population: usize, n_genes: usize) -> usize {
    p.initial.unwrap_or_else(|| population.max(5 * n_genes))
}

/// `n` designs, one in each of `n` equal slices of every gene's range (McKay, Beckman & Conover 1979).
fn latin_hypercube(genes: &[GeneSpec], n: usize, rng: &mut Xoshiro256PlusPlus) -> Vec<Vec<f64>> {
    let mut columns: Vec<Vec<f64>> = Vec::with_capacity(genes.len());
    for _ in genes {
        let mut slots: Vec<usize> = (0..n).collect();
        slots.shuffle(rng);
        columns.push(slots.into_iter().map(|s| (s as f64 + rng.random::<f64>()) / n as f64).collect());
    }
    (0..n).map(|k| from_unit(genes, &columns.iter().map(|c| c[k]).collect::<Vec<_>>())).collect()
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};

    use crate::ga::settings::{GaSettings, Stop};
    use crate::ga::testfns::{minimise, Benchmark};

    fn sadea(seed: u64, population: usize) -> GaSettings {
        let mut g = GaSettings::from_ron_str(&format!(
            "Surrogate(population: {population}, seed: {seed}, initial: 30, train_max: 60, auto_off: false)"
        ))
        .unwrap();
        g.stop = Stop::none();
        g
    }

    /// The best of `n` uniformly random designs: what the model must beat.
    fn random_search(b: &Benchmark, n: usize, seed: u64) -> f64 {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
        (0..n).map(|_| (b.f)(&(0..b.n).map(|_| (rng.random::<f64>() * 2.0 - 1.0) * b.bound).collect::<Vec<_>>())).fold(f64::INFINITY, f64::min)
    }

    /// Where the model is good, few simulations: seeds 1-2 reach 1e-4 on the
    /// sphere (5 genes) within 250 designs, and below 1 on Rosenbrock (5 genes,
    /// from about 1e3 at random) within 600 (the optimum itself takes thousands more).
    #[test]
    fn reaches_smooth_optima_with_few_simulations() {
        for seed in 1..=2 {
            let (best, evals) = minimise(&mut Benchmark::sphere(5), sadea(seed, 5), 1e-4, 250);
            assert!(best <= 1e-4, "sphere seed {seed}: {best} after {evals}");
            let (best, evals) = minimise(&mut Benchmark::rosenbrock(5), sadea(seed, 10), 1.0, 600);
            assert!(best <= 1.0, "rosenbrock seed {seed}: {best} after {evals}");
        }
    }

    /// Rastrigin (5 genes, 11^5 local minima) is where a smooth model helps
    /// least: the surrogate search does not reach the optimum within a
    /// surrogate-sized budget. What it must do: beat 20 times as many random
    /// designs, because the model finds the bowl under the ripples.
    #[test]
    fn beats_random_search_on_rastrigin() {
        for seed in 1..=2 {
            let b = Benchmark::rastrigin(5);
            let (best, evals) = minimise(&mut b.clone(), sadea(seed, 10), 0.0, 300);
            let random = random_search(&b, 6000, seed);
            assert!(best < random, "rastrigin seed {seed}: {best} after {evals}, random search {random} after 6000");
        }
    }

    /// With a model slower than the simulations it switches itself off, and the history says what it cost.
    #[test]
    fn switches_itself_off_where_simulations_are_cheaper() {
        let mut g = sadea(1, 5);
        g.method = crate::ga::Method::Surrogate(crate::ga::SurrogateParams { initial: Some(30), ..Default::default() });
        let mut p = Benchmark::sphere(5);
        let mut st = crate::ga::new_state(crate::ga::Problem::genes(&p), 1, g, "").unwrap();
        for _ in 0..4 {
            crate::ga::step(&mut st, &mut p, &|_, _| {}).unwrap();
        }
        let crate::ga::step_methods::MethodState::Surrogate(s) = st.method.as_ref().unwrap() else { panic!() };
        // An analytic function takes microseconds; fitting the model, milliseconds.
        assert_eq!(s.off_since, Some(2), "{:?}", st.history.iter().map(|h| (h.model_seconds, h.evaluation_seconds)).collect::<Vec<_>>());
        assert!(st.history[1].model_seconds.unwrap() > st.history[1].evaluation_seconds);
        assert_eq!(st.history[2].model_seconds, None);
        assert_eq!(st.history[2].new_evaluations, 5, "off, it still simulates a full batch");
    }
}
