//! The optimiser block of a design file: genetic-algorithm settings, with
//! pymoo-like defaults for every field that is left out.

use serde::{Deserialize, Serialize};

/// GA settings, written `optimiser: Ga(population: 64, ...)`; every field may be omitted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename = "Ga", default, deny_unknown_fields)]
pub struct GaSettings {
    /// Individuals per generation.
    pub population: usize,
    /// Generations to run (the first, random one included).
    pub generations: usize,
    /// Seed of the single RNG the run derives every stream from.
    pub seed: u64,
    /// Best individuals copied unchanged into the next generation.
    pub elitism: usize,
    /// Tournament size of parent selection (pymoo: binary tournament).
    pub tournament: usize,
    pub crossover: Crossover,
    pub mutation: Mutation,
    pub stop: StopSettings,
}

impl Default for GaSettings {
    fn default() -> Self {
        GaSettings {
            population: 64,
            generations: 50,
            seed: 0,
            elitism: 2,
            tournament: 2,
            crossover: Crossover::default(),
            mutation: Mutation::default(),
            stop: StopSettings::default(),
        }
    }
}

/// Crossover of real-coded genes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Crossover {
    /// Simulated binary crossover (Deb & Agrawal); `probability` per pair of
    /// parents, distribution index `eta` (pymoo: 0.9, 15).
    Sbx {
        #[serde(default = "sbx_probability")]
        probability: f64,
        #[serde(default = "sbx_eta")]
        eta: f64,
    },
}

fn sbx_probability() -> f64 {
    0.9
}
fn sbx_eta() -> f64 {
    15.0
}

impl Default for Crossover {
    fn default() -> Self {
        Crossover::Sbx { probability: sbx_probability(), eta: sbx_eta() }
    }
}

/// Mutation of real-coded genes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Mutation {
    /// Polynomial mutation (Deb); `probability` per gene, `None` meaning
    /// 1 / number of genes (pymoo's default); distribution index `eta` (pymoo: 20).
    Polynomial {
        #[serde(default)]
        probability: Option<f64>,
        #[serde(default = "pm_eta")]
        eta: f64,
    },
}

fn pm_eta() -> f64 {
    20.0
}

impl Default for Mutation {
    fn default() -> Self {
        Mutation::Polynomial { probability: None, eta: pm_eta() }
    }
}

impl Mutation {
    /// Probability that one gene mutates, for a genome of `n_genes` genes.
    pub fn gene_probability(&self, n_genes: usize) -> f64 {
        match *self {
            Mutation::Polynomial { probability, .. } => probability.unwrap_or(1.0 / n_genes.max(1) as f64),
        }
    }
}

/// When to end a run before `generations`: any criterion that is set ends it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StopSettings {
    /// Stop when the best fitness is at or below this (0: every goal met).
    pub target: Option<f64>,
    /// Stop after this many simulated designs.
    pub max_evaluations: Option<usize>,
    /// Stop after this many generations without improvement of the best (pymoo's
    /// default termination looks back 20 generations).
    pub stagnation: Option<usize>,
    /// Stop after this much wall-clock time, in seconds.
    pub wall_seconds: Option<f64>,
}

impl Default for StopSettings {
    fn default() -> Self {
        StopSettings { target: Some(0.0), max_evaluations: None, stagnation: Some(20), wall_seconds: None }
    }
}

impl GaSettings {
    /// Why these settings cannot run, as (field path, message).
    pub fn problem(&self) -> Option<(String, String)> {
        let bad = |f: &str, m: String| Some((format!("optimiser.{f}"), m));
        if self.population < 2 {
            return bad("population", format!("must be at least 2 (got {})", self.population));
        }
        if self.generations < 1 {
            return bad("generations", "must be at least 1".into());
        }
        if self.elitism >= self.population {
            return bad("elitism", format!("({}) must be below the population ({})", self.elitism, self.population));
        }
        if self.tournament < 1 || self.tournament > self.population {
            return bad("tournament", format!("must be between 1 and the population ({})", self.population));
        }
        let Crossover::Sbx { probability, eta } = self.crossover;
        if !(0.0..=1.0).contains(&probability) {
            return bad("crossover.probability", format!("({probability}) must lie in [0, 1]"));
        }
        if eta.is_nan() || eta <= 0.0 {
            return bad("crossover.eta", format!("({eta}) must be positive"));
        }
        let Mutation::Polynomial { probability, eta } = self.mutation;
        if let Some(p) = probability {
            if !(0.0..=1.0).contains(&p) {
                return bad("mutation.probability", format!("({p}) must lie in [0, 1]"));
            }
        }
        if eta.is_nan() || eta <= 0.0 {
            return bad("mutation.eta", format!("({eta}) must be positive"));
        }
        if let Some(w) = self.stop.wall_seconds {
            if w.is_nan() || w <= 0.0 {
                return bad("stop.wall_seconds", format!("({w}) must be positive"));
            }
        }
        if self.stop.max_evaluations == Some(0) {
            return bad("stop.max_evaluations", "must be at least 1".into());
        }
        None
    }
}
