//! A CPU backend that records which port every job of every batch drives,
//! for tests of what the GA simulates (port pruning, the best design's columns).

use std::sync::Mutex;

use emvolve::engine::cpu::CpuBackend;
use emvolve::engine::{Backend, BatchResult, RunCtx};
use emvolve::job::SimJob;

/// The CPU backend, recording the driven port of every job of every batch.
#[derive(Default)]
pub struct Recording {
    pub batches: Mutex<Vec<Vec<usize>>>,
}

impl Backend for Recording {
    fn name(&self) -> String {
        "cpu (recorded)".into()
    }
    fn run(&self, jobs: &[SimJob], ctx: &RunCtx) -> BatchResult {
        self.batches.lock().unwrap().push(jobs.iter().map(|j| j.drive).collect());
        CpuBackend.run(jobs, ctx)
    }
}
