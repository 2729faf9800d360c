//! emvolve: evolutionary design of antennas and RF/microwave filters.
//!
//! The seam: a design + parameter values becomes [`job::SimJob`]s; an
//! [`engine::Backend`] turns a batch of jobs into port signals; [`analysis`]
//! turns signals into S-parameters; the optimiser only sees fitness; the run
//! owns files, checkpoints, progress and plots.

pub mod analysis;
pub mod consts;
pub mod engine;
pub mod ga;
pub mod job;
pub mod run;
