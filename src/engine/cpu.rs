//! The CPU backend: every job of a batch on all cores through rayon (jobs in
//! parallel, and z-planes in parallel inside each job).

use rayon::prelude::*;

use super::{Backend, BatchResult};
use crate::job::{EngineKind, SimFailure, SimJob, SimOutput};

/// Runs FDTD (and TLM, when built in) jobs on the CPU.
#[derive(Debug, Default, Clone)]
pub struct CpuBackend;

/// Simulate one job on the CPU with the engine it asks for.
pub fn run_job(job: &SimJob) -> Result<SimOutput, SimFailure> {
    match job.engine {
        EngineKind::Fdtd => super::fdtd::cpu::run(job),
        EngineKind::Tlm | EngineKind::Tlm2d => super::tlm::run_cpu(job),
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> String {
        format!("cpu ({} threads)", rayon::current_num_threads())
    }
    fn run_batch_progress(&self, jobs: &[SimJob], done: &(dyn Fn(usize) + Sync)) -> BatchResult {
        let count = std::sync::atomic::AtomicUsize::new(0);
        Ok(jobs
            .par_iter()
            .map(|j| {
                let r = run_job(j);
                done(count.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1);
                r
            })
            .collect())
    }
}
