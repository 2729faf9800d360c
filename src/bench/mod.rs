//! Benchmarks behind `emvolve bench`: the fixed workloads, the measurement at
//! two step counts and the Markdown table they are printed as.

pub mod table;
pub mod workloads;

pub use workloads::{box_job, box_job_pml, population_jobs};
