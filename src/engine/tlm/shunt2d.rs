//! 2D shunt-node TLM (placeholder until written below).
use crate::job::{SimFailure, SimJob, SimOutput};
pub fn run(job: &SimJob) -> Result<SimOutput, SimFailure> {
    Err(SimFailure::Invalid(format!("{}: 2D engine not built yet", job.label)))
}
