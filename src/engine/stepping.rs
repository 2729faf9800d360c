//! The one stepping loop: every method (FDTD, TLM-SCN, TLM-2D) on every
//! device (CPU, CUDA, the CUDA emulation) runs its batch through [`run`].
//!
//! A method+device provides a [`Batch`]: its designs advance together in
//! chunks of steps, each step being the method's update with its extensions
//! (absorbing layers, sources) and monitors (the ports: one V, I sample per
//! step; field monitors), in the order the method defines. The loop chooses
//! the chunk lengths (up to the next energy check of any running design),
//! judges each design with the one [`StopRule`](crate::job::StopRule)
//! evaluator ([`StopState`]), retires designs as they end, and assembles the
//! [`SimOutput`]s. A CPU job is a batch of one; the CPU backend runs jobs in
//! parallel, each through this loop. At every energy check the loop reports
//! the design's steps and decay into its [`StepWatch`] (progress bars).

use super::stop::{latest_finite, StopState, Verdict};
use super::{EngineError, StepWatch};
use crate::job::{MonitorOutput, PortTrace, SimFailure, SimJob, SimOutput};

/// A batch of designs of one method on one device, as [`run`] drives it.
pub trait Batch {
    /// Designs in the batch.
    fn len(&self) -> usize;
    /// The job of design `d` (its pulse, stop rule and ports).
    fn job(&self, d: usize) -> &SimJob;
    /// The time step of design `d` (s).
    fn dt(&self, d: usize) -> f64;
    /// Cells (or nodes) design `d` updates per step.
    fn cells(&self, d: usize) -> usize;
    /// The most steps one [`Batch::advance`] may take (its sample buffers).
    fn max_chunk(&self) -> usize;
    /// The designs still running changed (called before the next advance).
    fn set_running(&mut self, running: &[bool]) -> Result<(), EngineError>;
    /// Advance every running design by `k` steps from step `n`.
    fn advance(&mut self, n: usize, k: usize) -> Result<(), EngineError>;
    /// After an advance: the energies of the designs marked `due` (any scale,
    /// 0 for the others), and this chunk's port samples made ready for
    /// [`Batch::samples`].
    fn end_chunk(&mut self, due: &[bool]) -> Result<Vec<f64>, EngineError>;
    /// Append running design `d`'s port samples of the last chunk.
    fn samples(&mut self, d: usize, traces: &mut [PortTrace]);
    /// Where design `d`'s first non-finite value lies (for the failure).
    fn locate_non_finite(&mut self, d: usize) -> Result<String, EngineError>;
    /// Design `d` has ended normally: keep what must outlive the batch (its
    /// final fields, its monitors).
    fn retire(&mut self, _d: usize) -> Result<(), EngineError> {
        Ok(())
    }
    /// Post-process design `d`'s traces; returns the sample time offsets
    /// (V, I) in steps.
    fn finish(&mut self, d: usize, traces: &mut [PortTrace]) -> (f64, f64);
    /// Design `d`'s monitor results, in the order of its job's monitors.
    fn monitors(&mut self, _d: usize) -> Vec<MonitorOutput> {
        vec![]
    }
}

/// Step `batch` until every design has ended: one result per design.
/// `watch[d]` (where given) follows design d's steps and energy decay.
pub fn run(batch: &mut dyn Batch, watch: &[StepWatch]) -> Result<Vec<Result<SimOutput, SimFailure>>, EngineError> {
    let nd = batch.len();
    let mut stop: Vec<StopState> = (0..nd).map(|d| StopState::new(batch.job(d), batch.dt(d))).collect();
    let mut traces: Vec<Vec<PortTrace>> = (0..nd).map(|d| vec![PortTrace::default(); batch.job(d).ports.len()]).collect();
    let mut steps = vec![0usize; nd];
    let mut done: Vec<Option<Result<(), SimFailure>>> = (0..nd).map(|d| (stop[d].max_steps() == 0).then_some(Ok(()))).collect();
    let mut running: Vec<bool> = done.iter().map(|x| x.is_none()).collect();
    let chunk_cap = batch.max_chunk().max(1);
    let mut dirty = true;
    let mut n = 0usize;
    while running.iter().any(|&r| r) {
        if dirty {
            batch.set_running(&running)?;
            dirty = false;
        }
        // Up to the next check of any running design.
        let k = (0..nd).filter(|&d| running[d]).map(|d| stop[d].steps_to_check(n)).min().unwrap_or(0).clamp(1, chunk_cap);
        batch.advance(n, k)?;
        n += k;
        let due: Vec<bool> = (0..nd).map(|d| running[d] && stop[d].is_check(n)).collect();
        let energy = batch.end_chunk(&due)?;
        for d in (0..nd).filter(|&d| running[d]) {
            batch.samples(d, &mut traces[d]);
            steps[d] = n;
        }
        for d in (0..nd).filter(|&d| due[d]) {
            let verdict = stop[d].check(n, energy[d], latest_finite(&traces[d]));
            if let Some(w) = watch.get(d) {
                w.report(n, stop[d].db());
            }
            let outcome = match verdict {
                Verdict::Continue => continue,
                Verdict::End(_) => {
                    batch.retire(d)?;
                    Ok(())
                }
                Verdict::NonFinite => {
                    let location = batch.locate_non_finite(d)?;
                    Err(SimFailure::NonFinite { step: n, location })
                }
            };
            done[d] = Some(outcome);
            running[d] = false;
            dirty = true;
        }
    }
    let mut out = Vec::with_capacity(nd);
    for (d, (t, state)) in traces.into_iter().zip(stop).enumerate() {
        out.push(match done[d].take() {
            Some(Err(e)) => Err(e),
            _ => {
                let mut traces = t;
                let (v_offset, i_offset) = batch.finish(d, &mut traces);
                let monitors = batch.monitors(d);
                Ok(SimOutput { dt: batch.dt(d), steps: steps[d], v_offset, i_offset, traces, monitors, ended: state.ended(), cells: batch.cells(d) })
            }
        });
    }
    Ok(out)
}
