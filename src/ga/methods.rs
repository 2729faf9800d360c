//! Which search method a run uses and its own knobs: `Ga(...)`, `Cmaes(...)`,
//! `De(...)` or `Surrogate(...)` in the design's `optimiser:` block.
//!
//! [`GaSettings`](super::GaSettings) keeps what every method shares
//! (population = batch size, generations, seed, stop rules) plus the GA's own
//! fields; [`Method`] holds the rest. In RON the block is one enum, written
//! and read by [`OptimiserBlock`].

use serde::{Deserialize, Serialize};

use super::settings::{lenient_option, Crossover, GaSettings, Mutation, Stop};

/// The search method and its own settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Method {
    /// The elitist GA (one objective) or NSGA-II (several).
    #[default]
    Ga,
    Cmaes(CmaesParams),
    De(DeParams),
    Surrogate(SurrogateParams),
}

impl Method {
    /// The name users write (`Ga`, `Cmaes`, `De`, `Surrogate`).
    pub fn name(&self) -> &'static str {
        match self {
            Method::Ga => "Ga",
            Method::Cmaes(_) => "Cmaes",
            Method::De(_) => "De",
            Method::Surrogate(_) => "Surrogate",
        }
    }
}

/// CMA-ES (Hansen, "The CMA Evolution Strategy: A Tutorial", 2016) with IPOP restarts.
#[derive(Debug, Clone, PartialEq)]
pub struct CmaesParams {
    /// Initial step size as a fraction of every gene's range, in (0, 1].
    pub sigma: f64,
    /// Restarts with a doubled population (IPOP, Auger & Hansen 2005) after the search converged.
    pub restarts: usize,
    /// The population never grows beyond this on restarts.
    pub max_population: usize,
}

impl Default for CmaesParams {
    fn default() -> Self {
        CmaesParams { sigma: 0.3, restarts: 9, max_population: 512 }
    }
}

/// How differential evolution makes its trial vectors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum DeStrategy {
    /// SHADE (Tanabe & Fukunaga 2013): DE/current-to-pbest/1/bin with an
    /// external archive and success-history adaptation of F and CR over `memory` slots.
    Shade {
        #[serde(default = "de_memory")]
        memory: usize,
    },
    /// The classic DE/rand/1/bin (Storn & Price 1997) with fixed F and CR.
    RandOneBin {
        #[serde(default = "de_f")]
        f: f64,
        #[serde(default = "de_cr")]
        cr: f64,
    },
}

fn de_memory() -> usize {
    10
}
fn de_f() -> f64 {
    0.5
}
fn de_cr() -> f64 {
    0.9
}

impl Default for DeStrategy {
    fn default() -> Self {
        DeStrategy::Shade { memory: de_memory() }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeParams {
    pub strategy: DeStrategy,
}

/// Surrogate-assisted DE (SADEA-style, Liu et al. 2014): a Gaussian-process
/// model of every design simulated prescreens many DE trial vectors by lower
/// confidence bound; only the `population` most promising are simulated.
#[derive(Debug, Clone, PartialEq)]
pub struct SurrogateParams {
    /// Designs of generation 0 (a Latin hypercube); None: max(population, 5 x genes).
    pub initial: Option<usize>,
    /// The best designs simulated so far that parent the DE trial vectors.
    pub pool: usize,
    /// Trial vectors per pool member and generation (all prescreened by the model).
    pub trials: usize,
    /// Lower confidence bound mean - lcb x sd; larger explores more.
    pub lcb: f64,
    /// The model is fitted on at most this many of the best designs.
    pub train_max: usize,
    /// Stop using the model once fitting it takes longer than the simulations of a generation.
    pub auto_off: bool,
}

impl Default for SurrogateParams {
    fn default() -> Self {
        SurrogateParams { initial: None, pool: 24, trials: 4, lcb: 2.0, train_max: 150, auto_off: true }
    }
}

/// The `optimiser:` block as users write it: one variant per method.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename = "Optimiser", deny_unknown_fields)]
pub enum OptimiserBlock {
    Ga {
        #[serde(default = "ga_population")]
        population: usize,
        #[serde(default = "generations")]
        generations: usize,
        #[serde(default)]
        seed: u64,
        #[serde(default = "elitism")]
        elitism: usize,
        #[serde(default = "tournament")]
        tournament: usize,
        #[serde(default)]
        crossover: Crossover,
        #[serde(default)]
        mutation: Mutation,
        #[serde(default)]
        stop: Stop,
    },
    Cmaes {
        #[serde(default = "cmaes_population")]
        population: usize,
        #[serde(default = "generations")]
        generations: usize,
        #[serde(default)]
        seed: u64,
        #[serde(default = "cmaes_sigma")]
        sigma: f64,
        #[serde(default = "cmaes_restarts")]
        restarts: usize,
        #[serde(default = "cmaes_max_population")]
        max_population: usize,
        #[serde(default)]
        stop: Stop,
    },
    De {
        #[serde(default = "de_population")]
        population: usize,
        #[serde(default = "generations")]
        generations: usize,
        #[serde(default)]
        seed: u64,
        #[serde(default)]
        strategy: DeStrategy,
        #[serde(default)]
        stop: Stop,
    },
    Surrogate {
        #[serde(default = "surrogate_population")]
        population: usize,
        #[serde(default = "surrogate_generations")]
        generations: usize,
        #[serde(default)]
        seed: u64,
        #[serde(default, with = "lenient_option", skip_serializing_if = "Option::is_none")]
        initial: Option<usize>,
        #[serde(default = "surrogate_pool")]
        pool: usize,
        #[serde(default = "surrogate_trials")]
        trials: usize,
        #[serde(default = "surrogate_lcb")]
        lcb: f64,
        #[serde(default = "surrogate_train_max")]
        train_max: usize,
        #[serde(default = "yes")]
        auto_off: bool,
        #[serde(default)]
        stop: Stop,
    },
}

pub(crate) fn ga_population() -> usize {
    32
}
pub(crate) fn generations() -> usize {
    40
}
pub(crate) fn elitism() -> usize {
    2
}
pub(crate) fn tournament() -> usize {
    2
}
fn cmaes_population() -> usize {
    12
}
fn cmaes_sigma() -> f64 {
    CmaesParams::default().sigma
}
fn cmaes_restarts() -> usize {
    CmaesParams::default().restarts
}
fn cmaes_max_population() -> usize {
    CmaesParams::default().max_population
}
fn de_population() -> usize {
    24
}
fn surrogate_population() -> usize {
    8
}
fn surrogate_generations() -> usize {
    60
}
fn surrogate_pool() -> usize {
    SurrogateParams::default().pool
}
fn surrogate_trials() -> usize {
    SurrogateParams::default().trials
}
fn surrogate_lcb() -> f64 {
    SurrogateParams::default().lcb
}
fn surrogate_train_max() -> usize {
    SurrogateParams::default().train_max
}
fn yes() -> bool {
    true
}

/// The population a method gets when none is given (`--optimiser` switches to it).
pub fn default_population(method: &Method) -> usize {
    match method {
        Method::Ga => ga_population(),
        Method::Cmaes(_) => cmaes_population(),
        Method::De(_) => de_population(),
        Method::Surrogate(_) => surrogate_population(),
    }
}

impl From<OptimiserBlock> for GaSettings {
    fn from(b: OptimiserBlock) -> GaSettings {
        let base = GaSettings::default();
        match b {
            OptimiserBlock::Ga { population, generations, seed, elitism, tournament, crossover, mutation, stop } => {
                GaSettings { population, generations, seed, elitism, tournament, crossover, mutation, stop, method: Method::Ga }
            }
            OptimiserBlock::Cmaes { population, generations, seed, sigma, restarts, max_population, stop } => GaSettings {
                population,
                generations,
                seed,
                stop,
                method: Method::Cmaes(CmaesParams { sigma, restarts, max_population }),
                ..base
            },
            OptimiserBlock::De { population, generations, seed, strategy, stop } => {
                GaSettings { population, generations, seed, stop, method: Method::De(DeParams { strategy }), ..base }
            }
            OptimiserBlock::Surrogate { population, generations, seed, initial, pool, trials, lcb, train_max, auto_off, stop } => {
                GaSettings {
                    population,
                    generations,
                    seed,
                    stop,
                    method: Method::Surrogate(SurrogateParams { initial, pool, trials, lcb, train_max, auto_off }),
                    ..base
                }
            }
        }
    }
}

impl From<GaSettings> for OptimiserBlock {
    fn from(g: GaSettings) -> OptimiserBlock {
        let GaSettings { population, generations, seed, elitism, tournament, crossover, mutation, stop, method } = g;
        match method {
            Method::Ga => OptimiserBlock::Ga { population, generations, seed, elitism, tournament, crossover, mutation, stop },
            Method::Cmaes(p) => OptimiserBlock::Cmaes {
                population,
                generations,
                seed,
                sigma: p.sigma,
                restarts: p.restarts,
                max_population: p.max_population,
                stop,
            },
            Method::De(p) => OptimiserBlock::De { population, generations, seed, strategy: p.strategy, stop },
            Method::Surrogate(p) => OptimiserBlock::Surrogate {
                population,
                generations,
                seed,
                initial: p.initial,
                pool: p.pool,
                trials: p.trials,
                lcb: p.lcb,
                train_max: p.train_max,
                auto_off: p.auto_off,
                stop,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_reads_and_writes_back() {
        for text in [
            "Cmaes(population: 10, sigma: 0.2, restarts: 3, stop: (max_evaluations: 500))",
            "De(population: 20, strategy: RandOneBin(f: 0.6))",
            "De(strategy: Shade(memory: 5))",
            "Surrogate(population: 4, initial: 30, lcb: 1.0, auto_off: false)",
            "Surrogate()",
            "Cmaes()",
        ] {
            let g = GaSettings::from_ron_str(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            g.validate().unwrap_or_else(|e| panic!("{text}: {e}"));
            let back = g.to_ron_string();
            assert!(back.starts_with(&text[..text.find('(').unwrap()]), "{back}");
            assert_eq!(GaSettings::from_ron_str(&back).unwrap(), g, "{back}");
        }
        let g = GaSettings::from_ron_str("Cmaes(sigma: 0.2)").unwrap();
        assert_eq!(g.method, Method::Cmaes(CmaesParams { sigma: 0.2, ..Default::default() }));
        assert_eq!(g.population, 12);
        let g = GaSettings::from_ron_str("De(strategy: RandOneBin(f: 0.6))").unwrap();
        assert_eq!(g.method, Method::De(DeParams { strategy: DeStrategy::RandOneBin { f: 0.6, cr: 0.9 } }));
    }

    #[test]
    fn unknown_methods_and_fields_are_named() {
        let e = GaSettings::from_ron_str("Pso(population: 3)").unwrap_err().to_string();
        assert!(e.contains("Pso") && e.contains("Cmaes"), "{e}");
        let e = GaSettings::from_ron_str("Cmaes(elitism: 3)").unwrap_err().to_string();
        assert!(e.contains("elitism"), "{e}");
        let e = GaSettings::from_ron_str("De(strategy: Shade(memroy: 3))").unwrap_err().to_string();
        assert!(e.contains("memroy"), "{e}");
    }

    #[test]
    fn bad_settings_get_clear_errors() {
        let err = |t: &str| GaSettings::from_ron_str(t).unwrap().validate().unwrap_err().to_string();
        let e = err("Cmaes(population: 3)");
        assert!(e.contains("population") && e.contains("at least 4"), "{e}");
        for s in ["0.0", "1.5", "-0.1"] {
            let e = err(&format!("Cmaes(sigma: {s})"));
            assert!(e.contains("sigma") && e.contains("(0, 1]"), "{e}");
        }
        let e = err("Cmaes(population: 64, max_population: 32)");
        assert!(e.contains("max_population"), "{e}");
        let e = err("De(population: 3)");
        assert!(e.contains("population") && e.contains("at least 4"), "{e}");
        let e = err("De(strategy: RandOneBin(f: 0.0))");
        assert!(e.contains("strategy.f"), "{e}");
        let e = err("De(strategy: RandOneBin(cr: 1.5))");
        assert!(e.contains("strategy.cr"), "{e}");
        let e = err("De(strategy: Shade(memory: 0))");
        assert!(e.contains("strategy.memory"), "{e}");
        let e = err("Surrogate(pool: 2)");
        assert!(e.contains("pool") && e.contains("at least 4"), "{e}");
        let e = err("Surrogate(population: 0)");
        assert!(e.contains("population"), "{e}");
        let e = err("Surrogate(lcb: -1)");
        assert!(e.contains("lcb"), "{e}");
        let e = err("Surrogate(initial: 1)");
        assert!(e.contains("initial"), "{e}");
    }
}
