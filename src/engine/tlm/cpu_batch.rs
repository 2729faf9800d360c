//! One TLM job on the CPU as a [`Batch`] of one for the stepping loop
//! ([`crate::engine::stepping`]). Each node method ([`TlmMethod`]: the SCN
//! and the 2D shunt node) defines its step: scatter and connect, the port
//! work (guide-end terminations, lumped ports' series circuits, the
//! sources), the swap, and the guide ports' sampling.

use crate::engine::stepping::{self, Batch};
use crate::engine::{EngineError, StepWatch};
use crate::job::{PortTrace, SimFailure, SimJob, SimOutput};

/// A TLM node method's state for one job.
pub(crate) trait TlmMethod {
    /// Time step (s).
    fn dt(&self) -> f64;
    /// Nodes updated per step.
    fn cells(&self) -> usize;
    /// One step with the source value `s`, appending one V, I sample per port to `traces`.
    fn step(&mut self, s: f64, traces: &mut [PortTrace]);
    /// Energy in the pulses and stubs (any scale).
    fn energy(&self) -> f64;
    /// Where the first non-finite pulse lies.
    fn locate_non_finite(&self) -> String;
    /// Post-process the whole traces; the samples' time offsets (V, I) in steps.
    fn finish(&self, traces: &mut [PortTrace]) -> (f64, f64);
}

/// A job and its method's state.
pub(crate) struct TlmCpuBatch<'a, M: TlmMethod> {
    job: &'a SimJob,
    m: M,
    chunk: Vec<PortTrace>,
}

impl<'a, M: TlmMethod> TlmCpuBatch<'a, M> {
    pub fn new(job: &'a SimJob, m: M) -> Self {
        TlmCpuBatch { job, m, chunk: vec![PortTrace::default(); job.ports.len()] }
    }
}

impl<M: TlmMethod> Batch for TlmCpuBatch<'_, M> {
    fn len(&self) -> usize {
        1
    }
    fn job(&self, _d: usize) -> &SimJob {
        self.job
    }
    fn dt(&self, _d: usize) -> f64 {
        self.m.dt()
    }
    fn cells(&self, _d: usize) -> usize {
        self.m.cells()
    }
    fn max_chunk(&self) -> usize {
        usize::MAX
    }
    fn set_running(&mut self, _running: &[bool]) -> Result<(), EngineError> {
        Ok(())
    }
    fn advance(&mut self, n: usize, k: usize) -> Result<(), EngineError> {
        let dt = self.m.dt();
        for step in n..n + k {
            // TLM's source value at the node instant of the step.
            self.m.step(self.job.pulse.value(step as f64 * dt), &mut self.chunk);
        }
        Ok(())
    }
    fn end_chunk(&mut self, due: &[bool]) -> Result<Vec<f64>, EngineError> {
        Ok(vec![if due[0] { self.m.energy() } else { 0.0 }])
    }
    fn samples(&mut self, _d: usize, traces: &mut [PortTrace]) {
        for (t, c) in traces.iter_mut().zip(&mut self.chunk) {
            t.v.append(&mut c.v);
            t.i.append(&mut c.i);
        }
    }
    fn locate_non_finite(&mut self, _d: usize) -> Result<String, EngineError> {
        Ok(self.m.locate_non_finite())
    }
    fn finish(&mut self, _d: usize, traces: &mut [PortTrace]) -> (f64, f64) {
        self.m.finish(traces)
    }
}

/// Run `job` with method state `m` through the stepping loop, reporting into `watch`.
pub(crate) fn run<M: TlmMethod>(job: &SimJob, m: M, watch: &StepWatch) -> Result<SimOutput, SimFailure> {
    let mut b = TlmCpuBatch::new(job, m);
    match stepping::run(&mut b, std::slice::from_ref(watch)) {
        Ok(mut v) => v.pop().unwrap_or_else(|| Err(SimFailure::Invalid("the stepping loop returned no result".into()))),
        // The CPU batch reports no device errors; should one appear, it fails this job only.
        Err(e) => Err(SimFailure::Invalid(e.to_string())),
    }
}
