//! Live progress of running simulations: every stepping loop reports its step
//! count and energy decay at each energy check into a [`StepWatch`], which a
//! display thread reads (the `simulate` progress bar). Reporting is two relaxed
//! atomic stores per check; a loop given no watch reports into a throwaway one.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// One simulation's progress: steps taken and the energy decay (dB below its
/// peak, 0 before the first check) at the last energy check.
#[derive(Debug, Default)]
pub struct StepWatch {
    steps: AtomicUsize,
    /// The run's step cap once it is known (0 before): with a cap in simulated
    /// time it depends on the time step, which only the engine knows.
    cap: AtomicUsize,
    db_bits: AtomicU64,
}

impl StepWatch {
    /// Called by the stepping loop at each energy check.
    #[inline]
    pub fn report(&self, steps: usize, db: f64) {
        self.db_bits.store(db.to_bits(), Ordering::Relaxed);
        self.steps.store(steps, Ordering::Relaxed);
    }

    /// (steps, decay in dB) as last reported.
    pub fn get(&self) -> (usize, f64) {
        (self.steps.load(Ordering::Relaxed), f64::from_bits(self.db_bits.load(Ordering::Relaxed)))
    }

    /// Called by the stepping loop once, before the first step.
    pub fn set_cap(&self, cap: usize) {
        self.cap.store(cap, Ordering::Relaxed);
    }

    /// The step cap as set by the stepping loop (None before it is known).
    pub fn cap(&self) -> Option<usize> {
        Some(self.cap.load(Ordering::Relaxed)).filter(|&c| c > 0)
    }

    /// One watch per job of a batch.
    pub fn for_jobs(n: usize) -> Vec<StepWatch> {
        (0..n).map(|_| StepWatch::default()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_are_read_back() {
        let w = StepWatch::default();
        assert_eq!(w.get(), (0, 0.0));
        w.report(640, -31.25);
        assert_eq!(w.get(), (640, -31.25));
        assert_eq!(w.cap(), None);
        w.set_cap(28_986);
        assert_eq!(w.cap(), Some(28_986));
    }
}
