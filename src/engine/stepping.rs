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
    /// How many energy checks one advance may span (the on-chip CUDA path
    /// computes the energy at each check inside its launch); 1: every advance
    /// ends at the next check. A batch answers more than 1 only when it keeps
    /// nothing of a design that runs past its end (no final fields, no field
    /// monitors): a design that ends at a check inside an advance keeps
    /// stepping on the device until the advance ends, its results cut at the check.
    fn checks_per_advance(&self) -> usize {
        1
    }
    /// After an advance of `m` checks of equal length (see
    /// [`Batch::checks_per_advance`]): every design's energy after each check,
    /// `[j * len + d]` (any scale, any value for finished designs), and the
    /// chunk's port samples made ready for [`Batch::samples_part`].
    fn end_checks(&mut self, _m: usize) -> Result<Vec<f64>, EngineError> {
        Err(EngineError::Cuda("this batch has no energy checks inside an advance".into()))
    }
    /// Append running design `d`'s port samples of steps `from..to` of the last chunk.
    fn samples_part(&mut self, d: usize, traces: &mut [PortTrace], _from: usize, _to: usize) {
        self.samples(d, traces)
    }
}

/// Step `batch` until every design has ended: one result per design.
/// `watch[d]` (where given) follows design d's steps and energy decay.
pub fn run(batch: &mut dyn Batch, watch: &[StepWatch]) -> Result<Vec<Result<SimOutput, SimFailure>>, EngineError> {
    let nd = batch.len();
    let mut stop: Vec<StopState> = (0..nd).map(|d| StopState::new(batch.job(d), batch.dt(d))).collect();
    for (d, st) in stop.iter().enumerate() {
        if let Some(w) = watch.get(d) {
            w.set_cap(st.max_steps());
        }
    }
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
        // Several checks in one advance where the batch allows it and every running
        // design checks at the same steps: n on a check of each, none reaching its cap inside.
        let m = multi_checks(batch, &stop, &running, n, k);
        if m > 1 {
            batch.advance(n, m * k)?;
            let energy = batch.end_checks(m)?;
            for j in 0..m {
                let nj = n + (j + 1) * k;
                for d in (0..nd).filter(|&d| running[d]) {
                    batch.samples_part(d, &mut traces[d], j * k, (j + 1) * k);
                    steps[d] = nj;
                }
                let live: Vec<usize> = (0..nd).filter(|&d| running[d]).collect();
                for d in live {
                    if let Some(outcome) = check_design(batch, &mut stop[d], watch.get(d), d, nj, energy[j * nd + d], &traces[d])? {
                        done[d] = Some(outcome);
                        running[d] = false;
                        dirty = true;
                    }
                }
            }
            n += m * k;
            continue;
        }
        batch.advance(n, k)?;
        n += k;
        let due: Vec<bool> = (0..nd).map(|d| running[d] && stop[d].is_check(n)).collect();
        let energy = batch.end_chunk(&due)?;
        for d in (0..nd).filter(|&d| running[d]) {
            batch.samples(d, &mut traces[d]);
            steps[d] = n;
        }
        for d in (0..nd).filter(|&d| due[d]) {
            if let Some(outcome) = check_design(batch, &mut stop[d], watch.get(d), d, n, energy[d], &traces[d])? {
                done[d] = Some(outcome);
                running[d] = false;
                dirty = true;
            }
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

/// Design `d`'s energy check after `n` steps (its energy `energy`, its traces so
/// far): None while it runs on, else how it ended (retired from the batch, or
/// failed where its fields became non-finite).
#[allow(clippy::too_many_arguments)]
fn check_design(batch: &mut dyn Batch, stop: &mut StopState, watch: Option<&StepWatch>, d: usize, n: usize, energy: f64, traces: &[PortTrace]) -> Result<Option<Result<(), SimFailure>>, EngineError> {
    let verdict = stop.check(n, energy, latest_finite(traces));
    if let Some(w) = watch {
        w.report(n, stop.db());
    }
    Ok(match verdict {
        Verdict::Continue => None,
        Verdict::End(_) => {
            batch.retire(d)?;
            Some(Ok(()))
        }
        Verdict::NonFinite => Some(Err(SimFailure::NonFinite { step: n, location: batch.locate_non_finite(d)? })),
    })
}

/// Checks the next advance may span (1: up to the next check only): the
/// batch allows several, `k` (the steps to the next check) is every running
/// design's whole check interval, and no design reaches its step cap before
/// the last of them.
fn multi_checks(batch: &dyn Batch, stop: &[StopState], running: &[bool], n: usize, k: usize) -> usize {
    let m = batch.checks_per_advance().min(batch.max_chunk() / k.max(1));
    if m <= 1 {
        return 1;
    }
    let mut m = m;
    for d in (0..stop.len()).filter(|&d| running[d]) {
        if stop[d].check_every() != k || stop[d].steps_to_check(n) != k {
            return 1;
        }
        m = m.min((stop[d].max_steps() - n) / k);
    }
    m.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{EndReason, Pulse, StopRule};

    /// A batch whose "fields" are known functions of the step: design d's
    /// energy decays as exp(-rate_d n) with a bump, its port samples are the
    /// step numbers; `multi` checks an advance, every design advancing with
    /// the chunk whether or not it still runs (as the on-chip kernel does).
    struct Fake {
        jobs: Vec<SimJob>,
        rate: Vec<f64>,
        multi: usize,
        n0: usize,
        k: usize,
        advances: usize,
    }

    impl Fake {
        fn energy(&self, d: usize, n: usize) -> f64 {
            let x = n as f64;
            (-self.rate[d] * x).exp() * (1.0 + 0.3 * (0.7 * x).sin())
        }
    }

    impl Batch for Fake {
        fn len(&self) -> usize {
            self.jobs.len()
        }
        fn job(&self, d: usize) -> &SimJob {
            &self.jobs[d]
        }
        fn dt(&self, _d: usize) -> f64 {
            1e-12
        }
        fn cells(&self, _d: usize) -> usize {
            1
        }
        fn max_chunk(&self) -> usize {
            4 * self.multi
        }
        fn set_running(&mut self, _running: &[bool]) -> Result<(), EngineError> {
            Ok(())
        }
        fn advance(&mut self, n: usize, k: usize) -> Result<(), EngineError> {
            assert_eq!(n, self.n0 + self.k);
            (self.n0, self.k) = (n, k);
            self.advances += 1;
            Ok(())
        }
        fn end_chunk(&mut self, _due: &[bool]) -> Result<Vec<f64>, EngineError> {
            Ok((0..self.len()).map(|d| self.energy(d, self.n0 + self.k)).collect())
        }
        fn samples(&mut self, d: usize, traces: &mut [PortTrace]) {
            let k = self.k;
            self.samples_part(d, traces, 0, k);
        }
        fn samples_part(&mut self, _d: usize, traces: &mut [PortTrace], from: usize, to: usize) {
            for s in from..to {
                traces[0].v.push((self.n0 + s) as f64);
                traces[0].i.push(-((self.n0 + s) as f64));
            }
        }
        fn checks_per_advance(&self) -> usize {
            self.multi
        }
        fn end_checks(&mut self, m: usize) -> Result<Vec<f64>, EngineError> {
            assert_eq!(m * 4, self.k);
            let nd = self.len();
            Ok((0..m * nd).map(|x| self.energy(x % nd, self.n0 + (x / nd + 1) * 4)).collect())
        }
        fn locate_non_finite(&mut self, _d: usize) -> Result<String, EngineError> {
            Ok(String::new())
        }
        fn finish(&mut self, _d: usize, _traces: &mut [PortTrace]) -> (f64, f64) {
            (1.0, 0.5)
        }
    }

    fn fake(multi: usize) -> Fake {
        // Decay to -6 dB at different rates; one design capped at 30 steps (not a multiple of 4).
        let mut jobs = vec![];
        for d in 0..4 {
            let mut j = crate::bench::box_job(4, 100);
            j.ports.truncate(1);
            j.pulse = Pulse { f0: 0.0, tau: 1e-13, t0: 2e-13 };
            j.stop = StopRule { decay_db: -6.0, max_steps: if d == 3 { 30 } else { 100 }, check_every: 4, max_time: None };
            jobs.push(j);
        }
        Fake { jobs, rate: vec![0.02, 0.05, 0.011, 0.001], multi, n0: 0, k: 0, advances: 0 }
    }

    #[test]
    fn several_checks_an_advance_give_the_same_runs() {
        let mut one = fake(1);
        let a = run(&mut one, &[]).unwrap();
        let mut many = fake(5);
        let b = run(&mut many, &[]).unwrap();
        assert!(many.advances * 2 < one.advances, "{} advances against {}", many.advances, one.advances);
        for (x, y) in a.iter().zip(&b) {
            let (x, y) = (x.as_ref().unwrap(), y.as_ref().unwrap());
            assert_eq!(x.steps, y.steps);
            assert_eq!(x.traces[0].v, y.traces[0].v);
            assert_eq!(x.traces[0].i, y.traces[0].i);
            assert_eq!(x.ended, y.ended);
            assert_eq!(x.traces[0].v.len(), x.steps);
        }
        // The designs end at different checks, inside an advance of the second run.
        let steps: Vec<usize> = a.iter().map(|r| r.as_ref().unwrap().steps).collect();
        assert_eq!(steps[3], 30);
        assert!(matches!(a[3].as_ref().unwrap().ended, EndReason::MaxSteps { .. }));
        assert!(steps[0] != steps[1] && steps[0] % 4 == 0 && steps[1] % 4 == 0 && steps[0] % 20 != 0, "{steps:?}");
    }
}
