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
    }
}
