//! The single-objective methods beside the GA (CMA-ES, DE, surrogate-assisted
//! DE) behind one ask/tell face that [`super::step`] drives: `ask` proposes
//! the generation's genomes, the step evaluates them as one batch exactly as
//! for the GA (cache, constraints, failures), `tell` updates the method's
//! state. Also the shared helpers: the unit cube of the genes and normal draws.

use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use super::cmaes::CmaesState;
use super::de::DeState;
use super::error::GaError;
use super::genome::{repair_genome, GeneSpec};
use super::methods::Method;
use super::settings::GaSettings;
use super::state::{GaState, Individual};
use super::surrogate::SurrogateState;

/// What a method keeps between generations; checkpointed with the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum MethodState {
    Cmaes(CmaesState),
    De(DeState),
    Surrogate(SurrogateState),
}

/// One generation's proposals.
pub struct Asked {
    pub candidates: Vec<Vec<f64>>,
    /// Time spent on the surrogate model (fit and prescreen), if one was used.
    pub model_seconds: Option<f64>,
}

impl MethodState {
    /// The fresh state of `settings.method` (None for the GA). Refuses the
    /// single-objective methods for problems with several objectives.
    pub fn new(settings: &GaSettings, genes: &[GeneSpec], n_objectives: usize) -> Result<Option<MethodState>, GaError> {
        if n_objectives > 1 && settings.method != Method::Ga {
            return Err(GaError::InvalidSetting {
                field: "optimiser",
                why: format!(
                    "{} optimises a single objective and the design has {n_objectives}; use Ga(...) (NSGA-II) for several objectives",
                    settings.method.name()
                ),
            });
        }
        Ok(match &settings.method {
            Method::Ga => None,
            Method::Cmaes(p) => Some(MethodState::Cmaes(CmaesState::new(genes, settings.population, p))),
            Method::De(p) => Some(MethodState::De(DeState::new(&p.strategy))),
            Method::Surrogate(_) => Some(MethodState::Surrogate(SurrogateState::default())),
        })
    }

    /// The genomes of the next generation. `violation(x)` is the problem's
    /// cheap constraint check (the surrogate does not prescreen infeasible designs).
    pub fn ask(&mut self, state: &GaState, rng: &mut Xoshiro256PlusPlus, violation: &dyn Fn(&[f64]) -> f64) -> Asked {
        match self {
            MethodState::Cmaes(c) => {
                if !state.started() {
                    c.start(rng);
                }
                Asked { candidates: c.ask(&state.genes, rng), model_seconds: None }
            }
            MethodState::De(d) => Asked { candidates: d.ask(state, rng), model_seconds: None },
            MethodState::Surrogate(s) => s.ask(state, rng, violation),
        }
    }

    /// Take in the evaluated generation (every offspring has its cache entry)
    /// and set `state.population`.
    pub fn tell(&mut self, state: &mut GaState, offspring: &[Individual], rng: &mut Xoshiro256PlusPlus, times: (f64, Option<f64>)) {
        match self {
            MethodState::Cmaes(c) => c.tell(state, offspring, rng),
            MethodState::De(d) => d.tell(state, offspring, rng),
            MethodState::Surrogate(s) => s.tell(state, offspring, times),
        }
    }
}

/// `x` mapped to the unit cube of the genes' operator bounds (a fixed gene sits at 0.5).
pub fn to_unit(genes: &[GeneSpec], x: &[f64]) -> Vec<f64> {
    genes
        .iter()
        .zip(x)
        .map(|(g, &v)| {
            let (lo, hi) = g.operator_bounds();
            if hi > lo {
                (v - lo) / (hi - lo)
            } else {
                0.5
            }
        })
        .collect()
}

/// The design at unit-cube point `u`: inside the bounds and on the lattice
/// (values outside the cube are clamped, lattice genes rounded: the GA's repair).
pub fn from_unit(genes: &[GeneSpec], u: &[f64]) -> Vec<f64> {
    let mut x: Vec<f64> = genes
        .iter()
        .zip(u)
        .map(|(g, &v)| {
            let (lo, hi) = g.operator_bounds();
            lo + v * (hi - lo)
        })
        .collect();
    repair_genome(genes, &mut x);
    x
}

/// A standard normal draw (Box-Muller; one uniform pair per draw keeps the stream simple).
pub fn normal(rng: &mut impl Rng) -> f64 {
    let u1 = 1.0 - rng.random::<f64>();
    let u2 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

#[cfg(test)]
mod tests {
    use crate::ga::settings::GaSettings;
    use crate::ga::testfns::Zdt1;
    use crate::ga::{new_state, Problem};

    #[test]
    fn single_objective_methods_refuse_several_objectives() {
        for m in ["Cmaes()", "De()", "Surrogate()"] {
            let e = new_state(Zdt1 { n: 4 }.genes(), 2, GaSettings::from_ron_str(m).unwrap(), "").unwrap_err().to_string();
            assert!(e.contains("single objective") && e.contains("Ga(") && e.contains(&m[..m.len() - 2]), "{e}");
        }
        new_state(Zdt1 { n: 4 }.genes(), 2, GaSettings::from_ron_str("Ga()").unwrap(), "").unwrap();
    }
}
