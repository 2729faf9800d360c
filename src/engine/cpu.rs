//! The CPU backend: every job of a batch on all cores through rayon (jobs in
//! parallel, and z-planes in parallel inside each job).

use rayon::prelude::*;

use super::{Backend, BatchResult, StepWatch};
use crate::job::{EngineKind, SimFailure, SimJob, SimOutput};

/// Runs FDTD (and TLM, when built in) jobs on the CPU.
#[derive(Debug, Default, Clone)]
pub struct CpuBackend;

/// Simulate one job on the CPU with the engine it asks for.
pub fn run_job(job: &SimJob) -> Result<SimOutput, SimFailure> {
    run_job_watched(job, &StepWatch::default())
}

/// [`run_job`], reporting steps and energy decay into `watch`.
pub fn run_job_watched(job: &SimJob, watch: &StepWatch) -> Result<SimOutput, SimFailure> {
    match job.engine {
        EngineKind::Fdtd => super::fdtd::cpu::run_watched(job, watch),
        EngineKind::Tlm | EngineKind::Tlm2d => super::tlm::run_cpu_watched(job, watch),
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> String {
        format!("cpu ({} threads)", rayon::current_num_threads())
    }
    fn run_batch_progress(&self, jobs: &[SimJob], done: &(dyn Fn(usize) + Sync)) -> BatchResult {
        self.run_batch_watched(jobs, done, &[])
    }
    fn run_batch_watched(&self, jobs: &[SimJob], done: &(dyn Fn(usize) + Sync), watch: &[StepWatch]) -> BatchResult {
        let count = std::sync::atomic::AtomicUsize::new(0);
        let spare = StepWatch::default();
        Ok(jobs
            .par_iter()
            .enumerate()
            .map(|(i, j)| {
                let r = run_job_watched(j, watch.get(i).unwrap_or(&spare));
                done(count.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1);
                r
            })
            .collect())
    }
}
