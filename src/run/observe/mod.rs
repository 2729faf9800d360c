//! Observers: everything that reports on a run (progress, CSV history, plots).
//! The lead's S-parameter plot is one more `Observer`.

use std::path::Path;

use crate::ga::state::{GaState, GenStats};
use crate::ga::termination::Termination;

use super::summary::RunSummary;

pub mod csv;
pub mod plot;
pub mod progress;

pub use self::csv::CsvObserver;
pub use plot::{PlotLabels, PlotObserver};
pub use progress::ProgressObserver;

/// What an observer learns when a run starts or resumes.
#[derive(Debug, Clone, Copy)]
pub struct RunInfo<'a> {
    pub dir: &'a Path,
    pub resumed: bool,
    /// The criteria in force (their `progress` drives a progress bar).
    pub termination: &'a Termination,
}

/// Called by the runner at fixed points of the loop. An `Err` stops the run;
/// the checkpoint of the generation is already saved by then. `Sync` because
/// `on_evaluation` is called from the engine's threads as designs finish.
pub trait Observer: Sync {
    /// Before the first generation of this session (after loading, on resume).
    fn on_start(&mut self, _state: &GaState, _info: &RunInfo) -> anyhow::Result<()> {
        Ok(())
    }
    /// While a batch is evaluated: `done` of `total` designs finished.
    fn on_evaluation(&self, _done: usize, _total: usize) {}
    /// After each generation, once its checkpoint is written.
    fn on_generation(&mut self, state: &GaState, stats: &GenStats) -> anyhow::Result<()>;
    /// When the run stops, for whatever reason but a fatal error.
    fn on_finish(&mut self, _state: &GaState, _summary: &RunSummary) -> anyhow::Result<()> {
        Ok(())
    }
}

/// Progress, CSV history and plots: what a run from the command line wants.
pub fn default_observers(quiet: bool) -> Vec<Box<dyn Observer>> {
    default_observers_labelled(quiet, PlotLabels::default())
}

/// [`default_observers`] with the plots' objective names and gene units.
pub fn default_observers_labelled(quiet: bool, labels: PlotLabels) -> Vec<Box<dyn Observer>> {
    vec![Box::new(ProgressObserver::new(quiet)), Box::new(CsvObserver::new()), Box::new(PlotObserver::with_labels(labels))]
}
