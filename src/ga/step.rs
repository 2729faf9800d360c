//! One generation of the search: ask (breed), evaluate the new genomes as one
//! batch, tell (survival), update the best and the history. Pure: no printing, no clock but timings.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use anyhow::{bail, Context};
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::breed::{breed, child_rng};
use super::error::GaError;
use super::genome::{genome_key, random_genome, validate_genes, GeneSpec};
use super::nsga2;
use super::ops::select::{compare_constrained, tournament_constrained};
use super::problem::{Evaluation, Problem, PENALTY};
use super::settings::{GaSettings, DEFAULT_TARGET};
use super::single;
use super::state::{FailureRecord, GaState, GenStats, GeneSpread, Individual, STATE_VERSION};
use super::step_methods::MethodState;

/// A fresh state, before generation 0. Validates the gene space and the settings.
pub fn new_state(
    genes: Vec<GeneSpec>,
    n_objectives: usize,
    settings: GaSettings,
    design_hash: impl Into<String>,
) -> Result<GaState, GaError> {
    validate_genes(&genes)?;
    settings.validate()?;
    if n_objectives == 0 {
        return Err(GaError::InvalidSetting { field: "objectives", why: "the problem has no objectives".into() });
    }
    // The default target (every goal met) means nothing on a Pareto front and
    // goes unused there; another value was asked for on purpose and is refused.
    if n_objectives > 1 && settings.stop.target.is_some_and(|t| t != DEFAULT_TARGET) {
        return Err(GaError::InvalidSetting {
            field: "stop.target",
            why: format!("a target fitness needs a single objective, the problem has {n_objectives}"),
        });
    }
    let method = MethodState::new(&settings, &genes, n_objectives)?;
    Ok(GaState {
        method,
        version: STATE_VERSION,
        design_hash: design_hash.into(),
        genes,
        n_objectives,
        rng: Xoshiro256PlusPlus::seed_from_u64(settings.seed),
        settings,
        generation: 0,
        evaluations: 0,
        elapsed_seconds: 0.0,
        population: Vec::new(),
        cache: Default::default(),
        history: Vec::new(),
        best: Vec::new(),
        stagnant_generations: 0,
        termination: None,
        failures: Vec::new(),
        changes: Vec::new(),
    })
}

/// Run one generation (generation 0 if none has run). `progress(done, total)`
/// follows the evaluation batch. On `Err` the state is left as it was before the call.
/// `wall_seconds` of the new history row is left to the caller (see [`GaState::stamp_time`]).
pub fn step<P: Problem + ?Sized>(
    state: &mut GaState,
    problem: &mut P,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> anyhow::Result<GenStats> {
    let generation = if state.started() { state.generation + 1 } else { 0 };
    let mut rng = state.rng.clone();
    let mut method = state.method.clone();
    let (candidates, model_seconds) = match &mut method {
        None => (ask(state, &mut rng), None),
        Some(m) => {
            let asked = m.ask(state, &mut rng, &|x| problem.constraint_violation(x));
            (asked.candidates, asked.model_seconds)
        }
    };
    let mut batch = evaluate(state, problem, &candidates, generation, progress)?;
    batch.model_seconds = model_seconds;

    // Commit: nothing above touched the state.
    state.evaluations += batch.simulated;
    for (key, e) in std::mem::take(&mut batch.entries) {
        state.cache.insert(key, e);
    }
    state.failures.extend(batch.failures.iter().cloned());
    let offspring: Vec<Individual> = candidates.into_iter().map(Individual::new).collect();
    match &mut method {
        None => tell(state, &offspring),
        Some(m) => m.tell(state, &offspring, &mut rng, (batch.evaluation_seconds, batch.model_seconds)),
    }
    state.method = method;
    state.rng = rng;
    let improved = update_best(state, &offspring);
    state.stagnant_generations = if improved { 0 } else { state.stagnant_generations + 1 };
    state.generation = generation;
    let stats = stats(state, generation, &batch, improved);
    state.history.push(stats.clone());
    Ok(stats)
}

impl GaState {
    /// Record the run time (seconds, over all sessions) at the end of the last generation.
    pub fn stamp_time(&mut self, elapsed_seconds: f64) {
        self.elapsed_seconds = elapsed_seconds;
        if let Some(h) = self.history.last_mut() {
            h.wall_seconds = elapsed_seconds;
        }
    }
}

/// The genomes of the next generation: random for generation 0, bred otherwise.
fn ask(state: &GaState, rng: &mut Xoshiro256PlusPlus) -> Vec<Vec<f64>> {
    let s = &state.settings;
    let genes = &state.genes;
    if !state.started() {
        return (0..s.population).map(|_| random_genome(genes, &mut child_rng(rng))).collect();
    }
    let evals: Vec<&Evaluation> = state.population.iter().map(|i| state.evaluation(i)).collect();
    let parents: Vec<&[f64]> = state.population.iter().map(|i| i.genome.as_slice()).collect();
    if state.is_multi_objective() {
        let rc = nsga2::rank_and_crowding(&evals);
        breed(&parents, s.population, genes, s, rng, |r| nsga2::tournament(&evals, &rc, s.tournament, r))
    } else {
        let n = s.population - s.elitism.min(s.population);
        breed(&parents, n, genes, s, rng, |r| tournament_constrained(&evals, s.tournament, r))
    }
}

/// What evaluating one generation produced, before it is committed to the state.
pub(crate) struct Batch {
    entries: Vec<(String, Evaluation)>,
    failures: Vec<FailureRecord>,
    pub(crate) simulated: usize,
    evaluation_seconds: f64,
    cells_per_second: Option<f64>,
    /// Designs whose simulation hit the step cap before its end criterion.
    truncated: usize,
    /// Surrogate model time of the generation.
    model_seconds: Option<f64>,
    /// Designs simulated per farm worker.
    workers: BTreeMap<String, usize>,
}

/// Evaluate the genomes not yet in the cache: infeasible ones get a penalty
/// without simulation, the rest go to the problem as one batch.
fn evaluate<P: Problem + ?Sized>(
    state: &GaState,
    problem: &mut P,
    candidates: &[Vec<f64>],
    generation: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> anyhow::Result<Batch> {
    let m = state.n_objectives;
    let mut entries = Vec::new();
    let mut queue: Vec<Vec<f64>> = Vec::new();
    let mut queue_keys = Vec::new();
    let mut seen = BTreeSet::new();
    for x in candidates {
        let key = genome_key(x);
        if state.cache.contains_key(&key) || !seen.insert(key.clone()) {
            continue;
        }
        let cv = problem.constraint_violation(x);
        let cv = if cv.is_nan() { PENALTY } else { cv.clamp(0.0, PENALTY) };
        if cv > 0.0 {
            let e = Evaluation { constraint_violation: cv, ..Evaluation::ok(vec![PENALTY; m]) };
            entries.push((key, e));
        } else {
            queue.push(x.clone());
            queue_keys.push(key);
        }
    }
    let total = queue.len();
    let t0 = Instant::now();
    let results = if queue.is_empty() {
        Vec::new()
    } else {
        progress(0, total);
        problem
            .evaluate_batch(&queue, &|done| progress(done, total))
            .with_context(|| format!("evaluating {total} designs of generation {generation}"))?
    };
    let evaluation_seconds = t0.elapsed().as_secs_f64();
    if results.len() != total {
        bail!("the problem returned {} evaluations for a batch of {total} designs", results.len());
    }
    let mut failures = Vec::new();
    let mut rates = Vec::new();
    let mut workers = BTreeMap::new();
    for ((x, key), mut e) in queue.into_iter().zip(queue_keys).zip(results) {
        if e.objectives.len() != m {
            if e.failure.is_none() {
                bail!("the problem returned {} objectives, it declares {m}", e.objectives.len());
            }
            e.objectives = vec![PENALTY; m];
        }
        let e = e.sanitised();
        if let Some(reason) = &e.failure {
            failures.push(FailureRecord { generation, genome: x, reason: reason.clone() });
        }
        rates.extend(e.cells_per_second);
        if let Some(w) = &e.worker {
            *workers.entry(w.clone()).or_insert(0) += 1;
        }
        entries.push((key, e));
    }
    let cells_per_second = if rates.is_empty() { None } else { Some(rates.iter().sum::<f64>() / rates.len() as f64) };
    let truncated = entries.iter().filter(|(_, e)| e.is_truncated()).count();
    Ok(Batch { entries, failures, simulated: total, evaluation_seconds, cells_per_second, truncated, model_seconds: None, workers })
}

/// Survival: the next population from the current one and the offspring.
fn tell(state: &mut GaState, offspring: &[Individual]) {
    let pop = state.settings.population;
    if !state.started() {
        state.population = offspring.to_vec();
        return;
    }
    if state.is_multi_objective() {
        // (mu + lambda); duplicates are set aside so they cannot crowd out diversity,
        // and used only if too few distinct designs remain.
        let mut unique = Vec::new();
        let mut dups = Vec::new();
        let mut seen = BTreeSet::new();
        for ind in state.population.iter().chain(offspring) {
            if seen.insert(ind.key.as_str()) {
                unique.push(ind.clone());
            } else {
                dups.push(ind.clone());
            }
        }
        let evals: Vec<&Evaluation> = unique.iter().map(|i| state.evaluation(i)).collect();
        let mut next: Vec<Individual> = nsga2::survive(&evals, pop).into_iter().map(|i| unique[i].clone()).collect();
        next.extend(dups.into_iter().take(pop - next.len()));
        state.population = next;
    } else {
        let evals: Vec<&Evaluation> = state.population.iter().map(|i| state.evaluation(i)).collect();
        let keys: Vec<&str> = state.population.iter().map(|i| i.key.as_str()).collect();
        let elites = single::elites(&evals, &keys, state.settings.elitism);
        let mut next: Vec<Individual> = elites.into_iter().map(|i| state.population[i].clone()).collect();
        next.extend(offspring.iter().cloned());
        state.population = next;
    }
}

/// Update the best so far (single) or the Pareto archive (NSGA-II); true if it improved.
fn update_best(state: &mut GaState, offspring: &[Individual]) -> bool {
    if state.is_multi_objective() {
        let mut pool: Vec<Individual> = state.best.clone();
        let mut seen: BTreeSet<String> = pool.iter().map(|i| i.key.clone()).collect();
        for ind in offspring {
            if seen.insert(ind.key.clone()) {
                pool.push(ind.clone());
            }
        }
        let evals: Vec<&Evaluation> = pool.iter().map(|i| state.evaluation(i)).collect();
        let mut front: Vec<Individual> = nsga2::pareto_set(&evals).into_iter().map(|i| pool[i].clone()).collect();
        front.sort_by(|a, b| {
            let (ea, eb) = (state.evaluation(a), state.evaluation(b));
            ea.objectives.iter().zip(&eb.objectives).map(|(x, y)| x.total_cmp(y)).find(|o| o.is_ne()).unwrap_or(a.key.cmp(&b.key))
        });
        let before: BTreeSet<&str> = state.best.iter().map(|i| i.key.as_str()).collect();
        let after: BTreeSet<&str> = front.iter().map(|i| i.key.as_str()).collect();
        let improved = before != after;
        state.best = front;
        improved
    } else {
        let evals: Vec<&Evaluation> = state.population.iter().map(|i| state.evaluation(i)).collect();
        let Some(b) = single::best(&evals) else { return false };
        let better = match state.best.first() {
            None => true,
            Some(old) => compare_constrained(evals[b], state.evaluation(old)).is_lt(),
        };
        if better {
            state.best = vec![state.population[b].clone()];
        }
        better
    }
}

fn stats(state: &GaState, generation: usize, batch: &Batch, improved: bool) -> GenStats {
    let m = state.n_objectives;
    let evals: Vec<&Evaluation> = state.population.iter().map(|i| state.evaluation(i)).collect();
    let valid: Vec<&&Evaluation> = evals.iter().filter(|e| e.is_valid()).collect();
    let mut mean = vec![None; m];
    let mut worst = vec![None; m];
    if !valid.is_empty() {
        for k in 0..m {
            let vals = valid.iter().map(|e| e.objectives[k]);
            mean[k] = Some(vals.clone().sum::<f64>() / valid.len() as f64);
            worst[k] = Some(vals.fold(f64::NEG_INFINITY, f64::max));
        }
    }
    let best_evals: Vec<&Evaluation> = state.best.iter().map(|i| state.evaluation(i)).collect();
    let best: Vec<f64> =
        (0..m).map(|k| best_evals.iter().map(|e| e.objectives[k]).fold(f64::INFINITY, f64::min).min(PENALTY)).collect();
    let best_violation = best_evals.iter().map(|e| e.constraint_violation).fold(PENALTY, f64::min);
    let spread = state
        .genes
        .iter()
        .enumerate()
        .map(|(g, spec)| {
            let vals: Vec<f64> = state.population.iter().map(|i| spec.normalise(i.genome[g])).collect();
            GeneSpread {
                min: vals.iter().copied().fold(f64::INFINITY, f64::min),
                mean: vals.iter().sum::<f64>() / vals.len() as f64,
                max: vals.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            }
        })
        .collect();
    GenStats {
        generation,
        evaluations: state.evaluations,
        new_evaluations: batch.simulated,
        failures: batch.failures.len(),
        feasible: evals.iter().filter(|e| e.is_feasible()).count(),
        best,
        best_violation,
        mean,
        worst,
        best_genome: state.best.first().map(|b| b.genome.clone()).unwrap_or_default(),
        front_size: state.best.len(),
        improved,
        spread,
        wall_seconds: state.elapsed_seconds,
        evaluation_seconds: batch.evaluation_seconds,
        cells_per_second: batch.cells_per_second,
        truncated: batch.truncated,
        model_seconds: batch.model_seconds,
        workers: batch.workers.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ga::testfns::Rastrigin;
    use std::collections::BTreeMap;

    /// Records every genome it is asked to simulate; fails designs with x0 > `fail_above`.
    struct Recording {
        inner: Rastrigin,
        seen: BTreeMap<String, usize>,
        fail_above: f64,
        die_at_batch: Option<usize>,
    }

    impl Problem for Recording {
        fn genes(&self) -> Vec<GeneSpec> {
            self.inner.genes()
        }
        fn n_objectives(&self) -> usize {
            1
        }
        fn constraint_violation(&self, x: &[f64]) -> f64 {
            self.inner.constraint_violation(x)
        }
        fn evaluate_batch(&mut self, xs: &[Vec<f64>], progress: &(dyn Fn(usize) + Sync)) -> anyhow::Result<Vec<Evaluation>> {
            if Some(self.inner.batches) == self.die_at_batch {
                anyhow::bail!("engine died");
            }
            for x in xs {
                *self.seen.entry(genome_key(x)).or_default() += 1;
            }
            let mut out = self.inner.evaluate_batch(xs, progress)?;
            for (x, e) in xs.iter().zip(out.iter_mut()) {
                if x[0] > self.fail_above {
                    *e = Evaluation::failed("fields went non-finite", 1);
                }
            }
            Ok(out)
        }
    }

    fn recording() -> Recording {
        let mut inner = Rastrigin::new(3, 1);
        inner.sum_limit = Some(6.0);
        Recording { inner, seen: BTreeMap::new(), fail_above: f64::INFINITY, die_at_batch: None }
    }

    fn run(p: &mut Recording, settings: GaSettings, gens: usize) -> GaState {
        let mut st = new_state(p.genes(), 1, settings, "t").unwrap();
        for _ in 0..=gens {
            step(&mut st, p, &|_, _| {}).unwrap();
        }
        st
    }

    #[test]
    fn single_objective_ga_converges_and_never_loses_its_best() {
        let mut p = recording();
        let st = run(&mut p, GaSettings { population: 40, seed: 3, ..Default::default() }, 60);
        let best = st.best_evaluation().unwrap();
        assert!(best.is_feasible());
        assert!(best.fitness() < 1.0, "best Rastrigin value {}", best.fitness());
        // Elitism: the best-so-far column never gets worse and the best design is in the population.
        for w in st.history.windows(2) {
            assert!(w[1].best[0] <= w[0].best[0]);
        }
        assert!(st.population.iter().any(|i| i.key == st.best[0].key));
        // Random search with the same budget does much worse (the bound above can fail).
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let genes = p.genes();
        let random_best = (0..st.evaluations)
            .map(|_| random_genome(&genes, &mut rng))
            .filter(|x| p.constraint_violation(x) == 0.0)
            .map(|x| Rastrigin::value(&x))
            .fold(f64::INFINITY, f64::min);
        assert!(random_best > 2.0 * best.fitness().max(0.5), "random {random_best} vs GA {}", best.fitness());
    }

    #[test]
    fn no_design_is_simulated_twice_and_counts_agree() {
        let mut p = recording();
        // Few genes on coarse lattices make repeats common.
        p.inner = Rastrigin::new(0, 2);
        let st = run(&mut p, GaSettings { population: 20, seed: 5, ..Default::default() }, 30);
        assert!(p.seen.values().all(|&n| n == 1), "a genome was simulated twice");
        assert_eq!(p.seen.len(), st.evaluations);
        assert_eq!(p.inner.evaluated, st.evaluations);
        assert_eq!(st.history.last().unwrap().evaluations, st.evaluations);
        let simulated = st.cache.values().filter(|e| e.constraint_violation == 0.0).count();
        assert_eq!(simulated, st.evaluations);
        // The lattice has 11 * 11 * 41 points and 31 generations of 18 children:
        // most children must have come from the cache.
        assert!(st.evaluations < 20 + 30 * 18);
    }

    #[test]
    fn infeasible_designs_are_not_simulated() {
        let mut p = recording();
        p.inner.sum_limit = Some(-8.0);
        let st = run(&mut p, GaSettings { population: 20, seed: 2, ..Default::default() }, 5);
        for (key, e) in &st.cache {
            let x = crate::ga::genome::genome_from_key(key).unwrap();
            let cv = p.constraint_violation(&x);
            assert_eq!(e.constraint_violation > 0.0, cv > 0.0);
            if cv > 0.0 {
                assert!(!p.seen.contains_key(key) && e.objectives[0] == PENALTY);
            }
        }
        // Constraint domination drives the population towards feasibility.
        let h = &st.history;
        assert!(h.last().unwrap().feasible > h[0].feasible, "{} -> {}", h[0].feasible, h.last().unwrap().feasible);
    }

    #[test]
    fn failures_get_a_penalty_and_are_recorded() {
        let mut p = recording();
        p.fail_above = 2.0;
        let st = run(&mut p, GaSettings { population: 20, seed: 4, ..Default::default() }, 10);
        assert!(!st.failures.is_empty());
        for f in &st.failures {
            assert!(f.genome[0] > 2.0 && f.reason.contains("non-finite"));
            let e = &st.cache[&genome_key(&f.genome)];
            assert_eq!(e.objectives, vec![PENALTY]);
        }
        assert_eq!(st.history.iter().map(|h| h.failures).sum::<usize>(), st.failures.len());
        assert!(st.history.iter().all(|h| h.mean[0].is_some_and(|m| m < 1e3)), "failures leaked into the mean");
        assert!(st.best_evaluation().unwrap().failure.is_none());
    }

    #[test]
    fn a_fatal_error_leaves_the_state_untouched() {
        let mut p = recording();
        p.die_at_batch = Some(3);
        let mut st = run(&mut p, GaSettings { population: 10, seed: 1, ..Default::default() }, 2);
        let before = st.clone();
        let err = step(&mut st, &mut p, &|_, _| {}).unwrap_err();
        assert!(format!("{err:#}").contains("engine died"), "{err:#}");
        assert!(st == before, "the failed step changed the state");
    }

    #[test]
    fn population_keeps_its_size_in_a_tiny_gene_space() {
        // Two integer values only: the population must fill up with copies.
        let mut p = recording();
        p.inner.genes = vec![GeneSpec::Int { name: "n".into(), min: 0, max: 1 }];
        p.inner.sum_limit = None;
        let st = run(&mut p, GaSettings { population: 8, elitism: 3, ..Default::default() }, 5);
        assert_eq!(st.population.len(), 8);
        assert_eq!(st.evaluations, 2);
        assert_eq!(st.best_evaluation().unwrap().fitness(), 0.0);
    }

    #[test]
    fn progress_reports_the_whole_batch() {
        let mut p = recording();
        let mut st = new_state(p.genes(), 1, GaSettings { population: 12, ..Default::default() }, "t").unwrap();
        let log = std::sync::Mutex::new(Vec::new());
        step(&mut st, &mut p, &|d, t| log.lock().unwrap().push((d, t))).unwrap();
        let log = log.into_inner().unwrap();
        let total = st.evaluations;
        assert_eq!(log.first(), Some(&(0, total)));
        assert_eq!(log.last(), Some(&(total, total)));
    }

    #[test]
    fn same_seed_same_state_other_seed_other_state() {
        let a = run(&mut recording(), GaSettings { seed: 9, ..Default::default() }, 8);
        let b = run(&mut recording(), GaSettings { seed: 9, ..Default::default() }, 8);
        let c = run(&mut recording(), GaSettings { seed: 10, ..Default::default() }, 8);
        assert!(a.without_timings() == b.without_timings(), "same seed, different states");
        assert!(a.population != c.population);
    }
}
