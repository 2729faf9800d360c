//! `GaState`: everything a run needs to continue exactly where it stopped; the checkpoint is this, serialised.

use std::collections::BTreeMap;

use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use super::genome::{genome_key, GeneSpec};
use super::problem::Evaluation;
use super::settings::GaSettings;
use super::step_methods::MethodState;

/// Format version of the state; a checkpoint of another version is refused.
pub const STATE_VERSION: u32 = 1;

/// One member of a population: its genome and the cache key of its evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Individual {
    pub genome: Vec<f64>,
    pub key: String,
}

impl Individual {
    pub fn new(genome: Vec<f64>) -> Individual {
        let key = genome_key(&genome);
        Individual { genome, key }
    }
}

/// A design that could not be simulated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailureRecord {
    pub generation: usize,
    pub genome: Vec<f64>,
    pub reason: String,
}

/// Where the population sits within one gene's bounds (each in [0, 1]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GeneSpread {
    pub min: f64,
    pub mean: f64,
    pub max: f64,
}

/// One row of history: the state of the search after one generation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenStats {
    /// 0 is the initial population.
    pub generation: usize,
    /// Designs simulated so far (cumulative).
    pub evaluations: usize,
    /// Designs simulated in this generation (cache hits and infeasible designs are not).
    pub new_evaluations: usize,
    /// Designs of this generation whose simulation failed.
    pub failures: usize,
    /// Feasible members of the population.
    pub feasible: usize,
    /// Per objective: single objective, the best so far; NSGA-II, the minimum over the Pareto archive.
    pub best: Vec<f64>,
    /// Constraint violation of the best so far (NSGA-II: the smallest in the archive).
    pub best_violation: f64,
    /// Per objective, over the population members that were simulated successfully.
    pub mean: Vec<Option<f64>>,
    pub worst: Vec<Option<f64>>,
    /// Single objective: the best so far; NSGA-II: the archive member with the lowest first objective.
    pub best_genome: Vec<f64>,
    /// Size of the best set (1 for a single objective, the Pareto archive for NSGA-II).
    pub front_size: usize,
    /// Did the best (or the archive) improve in this generation?
    pub improved: bool,
    /// Per gene, the population's spread normalised to the bounds.
    pub spread: Vec<GeneSpread>,
    /// Run time at the end of this generation, summed over sessions (seconds).
    pub wall_seconds: f64,
    /// Time spent inside `evaluate_batch` in this generation (seconds).
    pub evaluation_seconds: f64,
    /// Mean of the engine throughputs reported in this generation.
    pub cells_per_second: Option<f64>,
    /// Designs of this generation whose simulation hit the step cap before its end criterion.
    #[serde(default)]
    pub truncated: usize,
    /// Surrogate-assisted search: time spent fitting the model and prescreening
    /// candidates in this generation (seconds), beside `evaluation_seconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_seconds: Option<f64>,
    /// Designs of this generation simulated by each farm worker (empty when the
    /// run's own backend simulated them all).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub workers: BTreeMap<String, usize>,
}

/// A change of the run's limits when it was resumed (`resume --stagnation 30`, say).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SettingsChange {
    /// The last generation completed before the change.
    pub generation: usize,
    /// What changed, e.g. "stop.stagnation 10 -> 30".
    pub change: String,
}

/// Why a run stopped; stored in the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TerminationReason {
    MaxGenerations,
    MaxEvaluations,
    TargetFitness,
    Stagnation,
    WallTime,
    Interrupted,
}

impl std::fmt::Display for TerminationReason {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(match self {
            TerminationReason::MaxGenerations => "reached the generation limit",
            TerminationReason::MaxEvaluations => "reached the evaluation limit",
            TerminationReason::TargetFitness => "reached the target fitness",
            TerminationReason::Stagnation => "the best stopped improving",
            TerminationReason::WallTime => "reached the wall-time limit",
            TerminationReason::Interrupted => "interrupted",
        })
    }
}

/// The whole state of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GaState {
    pub version: u32,
    /// Identifies the design the run optimises; resume refuses another.
    pub design_hash: String,
    pub genes: Vec<GeneSpec>,
    pub n_objectives: usize,
    /// The settings the run is bred with (`generations` and `stop` as last resumed).
    pub settings: GaSettings,
    /// The last completed generation (meaningless while `history` is empty).
    pub generation: usize,
    /// Designs simulated so far.
    pub evaluations: usize,
    /// Run time summed over sessions (seconds).
    pub elapsed_seconds: f64,
    pub population: Vec<Individual>,
    /// Every design evaluated, by genome key; nothing is simulated twice.
    pub cache: BTreeMap<String, Evaluation>,
    /// The master RNG; per-offspring streams are seeded from it.
    pub rng: Xoshiro256PlusPlus,
    pub history: Vec<GenStats>,
    /// Single objective: the best so far. NSGA-II: the Pareto archive of every design evaluated.
    pub best: Vec<Individual>,
    /// Generations since the best last improved.
    pub stagnant_generations: usize,
    pub termination: Option<TerminationReason>,
    pub failures: Vec<FailureRecord>,
    /// Limits changed on resume, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<SettingsChange>,
    /// The state of CMA-ES, DE or the surrogate search (None for the GA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<MethodState>,
}

impl GaState {
    /// The evaluation of a population member or archived design. Every one has
    /// its cache entry: `step` adds it before the individual joins, and a
    /// checkpoint is refused unless [`GaState::check_consistent`] holds.
    pub fn evaluation(&self, ind: &Individual) -> &Evaluation {
        self.cache.get(&ind.key).expect("every individual of the state has a cached evaluation")
    }

    /// What the optimiser relies on and a (hand-edited) checkpoint could break:
    /// every cache key is a genome of the gene space, every individual's key is
    /// its genome's and has a cached evaluation with one value per objective.
    pub fn check_consistent(&self) -> Result<(), String> {
        let n = self.genes.len();
        for (key, e) in &self.cache {
            match super::genome::genome_from_key(key) {
                Some(g) if g.len() == n => {}
                _ => return Err(format!("cache key `{key}` is not a genome of {n} genes")),
            }
            if e.objectives.len() != self.n_objectives {
                return Err(format!("cache entry `{key}` has {} objectives, the run {}", e.objectives.len(), self.n_objectives));
            }
        }
        for (what, list) in [("population", &self.population), ("best", &self.best)] {
            for ind in list {
                if ind.key != genome_key(&ind.genome) {
                    return Err(format!("a {what} member's key `{}` is not its genome's", ind.key));
                }
                if !self.cache.contains_key(&ind.key) {
                    return Err(format!("{what} member `{}` has no cached evaluation", ind.key));
                }
            }
        }
        Ok(())
    }

    pub fn is_multi_objective(&self) -> bool {
        self.n_objectives > 1
    }

    /// Has at least one generation been completed?
    pub fn started(&self) -> bool {
        !self.history.is_empty()
    }

    /// The single-objective best so far, if any.
    pub fn best_evaluation(&self) -> Option<&Evaluation> {
        self.best.first().map(|b| self.evaluation(b))
    }

    /// A copy with every timing zeroed: what must be equal between two runs of the same seed.
    pub fn without_timings(&self) -> GaState {
        let mut s = self.clone();
        s.elapsed_seconds = 0.0;
        for h in &mut s.history {
            h.wall_seconds = 0.0;
            h.evaluation_seconds = 0.0;
            h.cells_per_second = None;
            h.model_seconds = h.model_seconds.map(|_| 0.0);
        }
        for e in s.cache.values_mut() {
            e.cells_per_second = None;
        }
        s
    }

    pub fn gene_names(&self) -> Vec<String> {
        super::genome::gene_names(&self.genes)
    }
}

#[cfg(test)]
mod tests {
    use crate::ga::problem::Problem;
    use crate::ga::settings::GaSettings;
    use crate::ga::step::{new_state, step};
    use crate::ga::testfns::Rastrigin;

    #[test]
    fn consistency_names_what_a_damaged_state_lacks() {
        let mut p = Rastrigin::new(2, 1);
        let mut st = new_state(p.genes(), 1, GaSettings { population: 6, ..Default::default() }, "").unwrap();
        step(&mut st, &mut p, &|_, _| {}).unwrap();
        assert_eq!(st.check_consistent(), Ok(()));
        let mut lost = st.clone();
        lost.cache.remove(&st.best[0].key);
        assert!(lost.check_consistent().unwrap_err().contains("no cached evaluation"));
        let mut bad_key = st.clone();
        let e = bad_key.cache.values().next().unwrap().clone();
        bad_key.cache.insert("zz".into(), e);
        assert!(bad_key.check_consistent().unwrap_err().contains("`zz` is not a genome"));
        let mut moved = st.clone();
        moved.population[0].genome[0] += 1.0;
        assert!(moved.check_consistent().unwrap_err().contains("is not its genome's"));
    }
}
