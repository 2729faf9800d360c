//! Engine backends: turn a batch of [`SimJob`]s into port signals.
//!
//! An outer `Err` is fatal for the whole batch (a driver failure, say); an
//! inner `Err` rejects one design, which the optimiser penalises.

use crate::job::{SimFailure, SimJob, SimOutput};

pub mod cpu;
pub mod cuda;
pub mod fdtd;

/// Errors that stop a whole batch.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    #[error("CUDA is not available: {0}")]
    CudaUnavailable(String),
    #[error("CUDA error: {0}")]
    Cuda(String),
    #[error("engine {engine} cannot run this job: {why}")]
    Unsupported { engine: String, why: String },
}

/// One result per job, in order.
pub type BatchResult = Result<Vec<Result<SimOutput, SimFailure>>, EngineError>;

/// A compute backend (CPU or CUDA) for every engine kind it supports.
pub trait Backend: Send + Sync {
    /// "cpu", "cuda:0", ...
    fn name(&self) -> String;
    /// Simulate every job of the batch.
    fn run_batch(&self, jobs: &[SimJob]) -> BatchResult;
}

/// TLM on the CPU: provided by the TLM engine module once merged.
pub(crate) fn run_tlm_cpu(job: &SimJob) -> Result<SimOutput, SimFailure> {
    Err(SimFailure::Invalid(format!("engine {} is not available in this build", job.engine.name())))
}
