//! The optimiser: a single-objective elitist GA and NSGA-II over a mixed
//! real/integer/stepped gene space, driven by one seed and evaluated in batches
//! through the [`Problem`] trait. Nothing here prints; observers in [`crate::run`] do.
//!
//! One objective selects the elitist GA, two or more select NSGA-II.
//! Single-objective runs may use CMA-ES ([`cmaes`]), differential evolution
//! ([`de`]) or surrogate-assisted DE ([`surrogate`], with the model in [`gp`])
//! instead; [`methods`] holds their settings, [`step_methods`] their dispatch.

pub mod breed;
pub mod cmaes;
pub mod de;
pub mod gp;
pub mod methods;
pub mod step_methods;
pub mod surrogate;
pub mod error;
pub mod failure_kind;
pub mod genome;
pub mod nsga2;
pub mod ops;
pub mod problem;
pub mod settings;
pub mod single;
pub mod state;
pub mod step;
pub mod termination;
pub mod testfns;

pub use error::GaError;
pub use failure_kind::FailureKind;
pub use genome::GeneSpec;
pub use problem::{Decay, Evaluation, Extra, Problem, PENALTY};
pub use methods::{CmaesParams, DeParams, DeStrategy, Method, SurrogateParams};
pub use settings::{Crossover, GaSettings, Mutation, Stop};
pub use state::{FailureRecord, GaState, GenStats, GeneSpread, Individual, SettingsChange};
pub use step::{new_state, step};
pub use termination::{Criterion, Termination, TerminationReason};
