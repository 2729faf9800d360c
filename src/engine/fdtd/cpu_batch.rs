//! One FDTD job on the CPU as a [`Batch`] of one for the stepping loop
//! ([`crate::engine::stepping`]). Each step runs the update with its
//! extensions, in the order of the CUDA launches: the fused step (H, PMC
//! ghosts, E; the CPML terms inside both updates), the driven port's source
//! (`fdtd_inject`), the port monitor (`fdtd_sample_ports`) and the field DFT
//! monitors (`fdtd_dft`, [`FieldDftMonitor`]). The step itself is the SIMD
//! stepper ([`simd`](super::simd), the same bits as `cpu::fdtd_step`); the
//! source, the port samples and the DFT monitors are the reference code.

use super::cpu;
use super::fields::Fields;
use super::dft::FieldDftMonitor;
use super::simd::{self, SimdPlan};
use super::operator::Operator;
use crate::engine::stepping::{self, Batch};
use crate::engine::{EngineError, StepWatch};
use crate::job::{MonitorOutput, PortTrace, SimFailure, SimJob, SimOutput};

/// A job with its operator (possibly shared with other drives of the same
/// structure) and its fields.
pub struct CpuBatch<'a> {
    job: &'a SimJob,
    op: &'a Operator,
    f: &'a mut Fields,
    /// The port monitor's samples of the current chunk.
    chunk: Vec<PortTrace>,
    dfts: Vec<FieldDftMonitor>,
    plan: SimdPlan,
}

impl<'a> CpuBatch<'a> {
    /// `job` stepped with `op` (built from `job` or from another job of the
    /// same structure) from the fields `f`.
    pub fn new(job: &'a SimJob, op: &'a Operator, f: &'a mut Fields) -> Result<CpuBatch<'a>, SimFailure> {
        op.check_drive(job)?;
        let dfts = job.monitors.iter().map(|m| FieldDftMonitor::new(m, op)).collect::<Result<_, _>>()?;
        Ok(CpuBatch { job, op, f, chunk: vec![PortTrace::default(); job.ports.len()], dfts, plan: SimdPlan::new(op) })
    }
}

impl Batch for CpuBatch<'_> {
    fn len(&self) -> usize {
        1
    }
    fn job(&self, _d: usize) -> &SimJob {
        self.job
    }
    fn dt(&self, _d: usize) -> f64 {
        self.op.dt
    }
    fn cells(&self, _d: usize) -> usize {
        self.job.mesh.cells()
    }
    fn max_chunk(&self) -> usize {
        usize::MAX
    }
    fn set_running(&mut self, _running: &[bool]) -> Result<(), EngineError> {
        Ok(())
    }
    fn advance(&mut self, n: usize, k: usize) -> Result<(), EngineError> {
        simd::advance(self.op, &self.plan, self.f, self.job.drive, &self.job.pulse, n, k, &mut self.chunk, &mut self.dfts);
        Ok(())
    }
    fn end_chunk(&mut self, due: &[bool]) -> Result<Vec<f64>, EngineError> {
        Ok(vec![if due[0] { cpu::fdtd_energy(self.op, self.f) } else { 0.0 }])
    }
    fn samples(&mut self, _d: usize, traces: &mut [PortTrace]) {
        for (t, c) in traces.iter_mut().zip(&mut self.chunk) {
            t.v.append(&mut c.v);
            t.i.append(&mut c.i);
        }
    }
    fn locate_non_finite(&mut self, _d: usize) -> Result<String, EngineError> {
        Ok(cpu::locate_non_finite(self.op, self.f))
    }
    fn finish(&mut self, _d: usize, _traces: &mut [PortTrace]) -> (f64, f64) {
        // V at the full step (E after the update), I half a step earlier (H).
        (1.0, 0.5)
    }
    fn monitors(&mut self, _d: usize) -> Vec<MonitorOutput> {
        self.dfts.iter().map(FieldDftMonitor::output).collect()
    }
}

/// Run one job on the CPU with its own operator.
pub fn run(job: &SimJob) -> Result<SimOutput, SimFailure> {
    run_watched(job, &StepWatch::default())
}

/// [`run`], reporting steps and energy decay into `watch` at each energy check.
pub fn run_watched(job: &SimJob, watch: &StepWatch) -> Result<SimOutput, SimFailure> {
    let op = Operator::new(job)?;
    run_with(job, &op, watch)
}

/// Run `job` with `op` (built from a job of the same structure) from zero
/// fields, reporting into `watch`.
pub fn run_with(job: &SimJob, op: &Operator, watch: &StepWatch) -> Result<SimOutput, SimFailure> {
    let mut f = Fields::new(op);
    run_from_watched(job, op, &mut f, watch)
}

/// Run `job` from the fields `f` (zero for a normal run) to its end criterion;
/// `f` holds the final fields afterwards.
pub fn run_from(job: &SimJob, op: &Operator, f: &mut Fields) -> Result<SimOutput, SimFailure> {
    run_from_watched(job, op, f, &StepWatch::default())
}

fn run_from_watched(job: &SimJob, op: &Operator, f: &mut Fields, watch: &StepWatch) -> Result<SimOutput, SimFailure> {
    let mut b = CpuBatch::new(job, op, f)?;
    match stepping::run(&mut b, std::slice::from_ref(watch)) {
        Ok(mut v) => v.pop().unwrap_or_else(|| Err(SimFailure::Invalid("the stepping loop returned no result".into()))),
        // The CPU batch reports no device errors; should one appear, it fails this job only.
        Err(e) => Err(SimFailure::Invalid(e.to_string())),
    }
}
