//! Engine backends: turn a batch of [`SimJob`]s into port signals.
//!
//! Two axes: the *method* (FDTD: [`fdtd`], TLM-SCN and TLM-2D: [`tlm`]; each
//! an operator or pack built once per structure and an update with its
//! extensions) and the *device* (the CPU: [`cpu`]; CUDA: [`cuda`] over the
//! device layer [`device`], or its CPU emulation). Every method on every
//! device runs through the one stepping loop ([`stepping`]) with the one stop
//! rule ([`stop`]). [`select`] picks the backend.
//!
//! An outer `Err` is fatal for the whole batch (a driver failure, say); an
//! inner `Err` rejects one design, which the optimiser penalises.

use crate::job::{SimFailure, SimJob, SimOutput};

pub mod cpu;
pub mod cuda;
pub mod device;
pub mod fdtd;
pub mod select;
pub mod stepping;
pub mod stop;
pub mod tlm;
pub mod watch;

pub use watch::StepWatch;

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

/// What the caller of a batch follows while it runs: `done(n)` as jobs
/// finish (n = jobs finished so far, reported from any thread), and
/// `watch[i]` following job i's steps and energy decay. Both are for people
/// (progress bars); a backend that cannot report per step leaves the watches
/// untouched.
#[derive(Clone, Copy)]
pub struct RunCtx<'a> {
    pub done: &'a (dyn Fn(usize) + Sync),
    pub watch: &'a [StepWatch],
}

fn nobody(_: usize) {}

impl RunCtx<'static> {
    /// Nobody follows the batch.
    pub const NONE: RunCtx<'static> = RunCtx { done: &nobody, watch: &[] };
}

impl<'a> RunCtx<'a> {
    /// `done(n)` follows the jobs finished; no step watches.
    pub fn progress(done: &'a (dyn Fn(usize) + Sync)) -> RunCtx<'a> {
        RunCtx { done, watch: &[] }
    }
    /// `done(n)` follows the jobs finished, `watch[i]` job i's steps.
    pub fn watched(done: &'a (dyn Fn(usize) + Sync), watch: &'a [StepWatch]) -> RunCtx<'a> {
        RunCtx { done, watch }
    }
}

/// A compute backend (CPU or CUDA) for every engine kind it supports.
pub trait Backend: Send + Sync {
    /// "cpu", "cuda:0", ...
    fn name(&self) -> String;
    /// Simulate every job of the batch, one result per job in order; `ctx`
    /// says who follows it while it runs.
    fn run(&self, jobs: &[SimJob], ctx: &RunCtx) -> BatchResult;
}
