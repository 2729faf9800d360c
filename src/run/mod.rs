//! The run machinery around the optimiser: a run directory, checkpoints, the
//! executor loop with Ctrl-C handling, observers (progress, CSV, plots) and inspection.

pub mod checkpoint;
pub mod inspect;
pub mod observe;
pub mod rundir;
pub mod runner;
pub mod summary;

pub use checkpoint::{CheckpointError, Loaded};
pub use observe::{Observer, RunInfo};
pub use rundir::{RunDir, RunDirError};
pub use runner::Runner;
pub use summary::{BestDesign, RunSummary};
