//! emvolve: evolutionary design of antennas and RF/microwave filters.
//!
//! The seam: a design + parameter values becomes [`job::SimJob`]s; an
//! [`engine::Backend`] turns a batch of jobs into port signals; [`analysis`]
//! turns signals into S-parameters; the optimiser only sees fitness; the run
//! owns files, checkpoints, progress and plots.

pub mod analysis;
pub mod bench;
pub mod cli;
pub mod consts;
pub mod design;
pub mod dev;
pub mod engine;
pub mod evaluate;
pub mod export;
pub mod farm;
pub mod fitness;
pub mod ga;
pub mod job;
pub mod linalg;
pub mod numfmt;
pub mod optimise;
pub mod outputs;
pub mod plot;
pub mod report;
pub mod run;
pub mod sweep;
