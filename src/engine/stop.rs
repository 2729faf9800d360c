//! The one stop rule of every method (FDTD, TLM-SCN, TLM-2D) on every device:
//! the field energy is checked every `check_every` steps and at the step cap;
//! a run ends when the source has finished and the energy has fallen to
//! `10^(decay_db/10)` of its peak, at the cap (`max_steps`, or `max_time`
//! over the time step where that is fewer), or (as a failure) when the
//! energy or a port sample is not finite.

use crate::job::{EndReason, PortTrace, SimJob, StopRule};

/// What a check decided.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// Keep stepping.
    Continue,
    /// The run is over (energy decay or the step cap).
    End(EndReason),
    /// The energy or a port sample is not finite.
    NonFinite,
}

/// The stop rule's state for one simulation.
#[derive(Debug, Clone)]
pub struct StopState {
    rule: StopRule,
    dt: f64,
    /// The step cap: `max_steps`, or fewer where `max_time` ends first.
    cap: usize,
    /// When the source has finished (s).
    t_end: f64,
    /// `10^(decay_db / 10)`.
    threshold: f64,
    peak: f64,
    ended: EndReason,
}

impl StopState {
    /// The rule of `job` for a run with time step `dt`.
    pub fn new(job: &SimJob, dt: f64) -> StopState {
        StopState {
            rule: job.stop,
            dt,
            cap: job.stop.cap(dt),
            t_end: job.pulse.end_time(),
            threshold: 10f64.powf(job.stop.decay_db / 10.0),
            peak: 0.0,
            ended: EndReason::MaxSteps { db: 0.0 },
        }
    }

    /// The step cap of this run (`max_steps`, or `max_time` over the time step).
    pub fn max_steps(&self) -> usize {
        self.cap
    }

    /// Steps between energy checks.
    pub fn check_every(&self) -> usize {
        self.rule.check_every.max(1)
    }

    /// Whether the energy is checked after `n` steps.
    pub fn is_check(&self, n: usize) -> bool {
        n > 0 && (n.is_multiple_of(self.rule.check_every.max(1)) || n == self.cap)
    }

    /// Steps from `n` steps done to the next check (0 at the cap).
    pub fn steps_to_check(&self, n: usize) -> usize {
        let ce = self.rule.check_every.max(1);
        ((n / ce + 1) * ce).min(self.cap).saturating_sub(n)
    }

    /// Judge the run after `n` steps (a check step), from its field energy
    /// (any positive scale) and whether its latest port samples are finite.
    pub fn check(&mut self, n: usize, energy: f64, samples_finite: bool) -> Verdict {
        if !energy.is_finite() || !samples_finite {
            return Verdict::NonFinite;
        }
        self.peak = self.peak.max(energy);
        let db = if self.peak > 0.0 { 10.0 * (energy / self.peak).max(1e-300).log10() } else { 0.0 };
        self.ended = EndReason::MaxSteps { db };
        if n as f64 * self.dt > self.t_end && self.peak > 0.0 && energy <= self.threshold * self.peak {
            self.ended = EndReason::EnergyDecay { db };
            return Verdict::End(self.ended);
        }
        if n >= self.cap {
            return Verdict::End(self.ended);
        }
        Verdict::Continue
    }

    /// How the run ended (or would, were it stopped now): the decay at the last check.
    pub fn ended(&self) -> EndReason {
        self.ended
    }

    /// The energy decay at the last check (dB below the peak, 0 before any).
    pub fn db(&self) -> f64 {
        match self.ended {
            EndReason::EnergyDecay { db } | EndReason::MaxSteps { db } => db,
        }
    }
}

/// Whether the latest V and I samples of every port are finite.
pub fn latest_finite(traces: &[PortTrace]) -> bool {
    traces.iter().all(|t| t.v.last().is_none_or(|x| x.is_finite()) && t.i.last().is_none_or(|x| x.is_finite()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(decay_db: f64, max_steps: usize, check_every: usize) -> SimJob {
        let mut j = crate::bench::box_job(4, 1);
        j.stop = StopRule { decay_db, max_steps, check_every, max_time: None };
        j
    }

    #[test]
    fn checks_fall_on_multiples_and_the_cap() {
        let s = StopState::new(&job(-40.0, 150, 64), 1e-12);
        let checks: Vec<usize> = (0..=150).filter(|&n| s.is_check(n)).collect();
        assert_eq!(checks, [64, 128, 150]);
        assert_eq!((s.steps_to_check(0), s.steps_to_check(64), s.steps_to_check(130), s.steps_to_check(150)), (64, 64, 20, 0));
    }

    #[test]
    fn a_time_cap_gives_each_time_step_the_same_simulated_time() {
        let mut j = job(-40.0, 30_000, 64);
        j.stop.max_time = Some(12e-9);
        // 12 ns: 81,082 steps of 0.148 ps (above max_steps: the step cap rules),
        // 29,000 steps of 0.414 ps (under it: the time cap rules, a check there).
        assert_eq!(StopState::new(&j, 0.148e-12).max_steps(), 30_000);
        let s = StopState::new(&j, 0.414e-12);
        assert_eq!(s.max_steps(), 28_986);
        assert!(s.is_check(28_986) && s.steps_to_check(28_980) == 6);
        j.stop.max_steps = 200_000;
        assert_eq!(StopState::new(&j, 0.148e-12).max_steps(), 81_082);
        // A run at the time cap ends there, with the decay it reached.
        let mut s = StopState::new(&j, 0.414e-12);
        assert_eq!(s.check(64, 1.0, true), Verdict::Continue);
        assert!(matches!(s.check(28_986, 0.5, true), Verdict::End(EndReason::MaxSteps { db }) if (db + 3.01).abs() < 0.01));
    }

    #[test]
    fn decay_ends_only_after_the_source_and_below_the_threshold() {
        let j = job(-20.0, 1_000_000, 10);
        let dt = j.pulse.end_time() / 100.0;
        let mut s = StopState::new(&j, dt);
        assert_eq!(s.check(10, 1.0, true), Verdict::Continue);
        // Below -20 dB but the source still runs.
        assert_eq!(s.check(50, 1e-3, true), Verdict::Continue);
        assert!(matches!(s.ended(), EndReason::MaxSteps { db } if (db + 30.0).abs() < 1e-9));
        // After the source: at (or below) the threshold it ends, with the decay reached.
        assert_eq!(s.check(110, 0.011, true), Verdict::Continue);
        assert!(matches!(s.check(120, 0.0099, true), Verdict::End(EndReason::EnergyDecay { db }) if (db + 20.04).abs() < 0.01));
    }

    #[test]
    fn the_cap_ends_with_the_decay_reached_and_non_finite_fails() {
        let j = job(-40.0, 30, 10);
        let mut s = StopState::new(&j, 1e-15);
        assert_eq!(s.check(10, 2.0, true), Verdict::Continue);
        assert!(matches!(s.check(30, 0.2, true), Verdict::End(EndReason::MaxSteps { db }) if (db + 10.0).abs() < 1e-9));
        assert_eq!(s.check(30, f64::NAN, true), Verdict::NonFinite);
        assert_eq!(s.check(30, 1.0, false), Verdict::NonFinite);
        let t = [PortTrace { v: vec![1.0, f64::INFINITY], i: vec![0.0, 0.0] }];
        assert!(!latest_finite(&t) && latest_finite(&[PortTrace::default()]));
    }
}
