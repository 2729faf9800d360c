//! The optimiser's view of a design: [`DesignProblem`] implements the GA's
//! `Problem` by sending each generation's new genomes through one backend
//! batch; [`BestObserver`] keeps `best/` and the best design's S-parameter
//! plot up to date, its missing port columns simulated in the next batch.
//! The GA itself never sees designs, jobs or engines.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use crate::analysis::SParams;
use crate::design::Design;
use crate::evaluate::CandidateFailure;
use crate::ga::settings::GaSettings;
use crate::job::EngineKind;
use crate::run::RunDir;

mod best;
mod problem;

pub use best::{BestObserver, GENERATIONS_DIR};
pub use problem::{DesignProblem, Simulator};

/// What a run directory records besides the design: the GA settings after
/// command-line overrides, and the engine override. Kept as `settings.ron`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSettings {
    pub ga: GaSettings,
    /// `--engine` given at launch (None: the design's own engine).
    pub engine: Option<EngineKind>,
}

/// The run directory at `dir` with the design and settings it keeps
/// (`design.ron`, `settings.ron`), as `resume` and `inspect` read them.
pub fn open_run(dir: &Path) -> anyhow::Result<(RunDir, Design, RunSettings)> {
    let rundir = RunDir::open(dir)?;
    let design = Design::load(&rundir.file("design.ron"))?;
    let sp = rundir.file("settings.ron");
    let text = std::fs::read_to_string(&sp).with_context(|| format!("reading {}", sp.display()))?;
    let settings: RunSettings = ron::from_str(&text).map_err(|e| anyhow::anyhow!("{}:{e}", sp.display()))?;
    Ok((rundir, design, settings))
}

/// The best design's port columns that no simulation of this session has
/// given yet, with what is needed to simulate them.
#[derive(Debug, Clone)]
pub(crate) struct Wanted {
    pub key: String,
    pub values: BTreeMap<String, f64>,
    pub drives: Vec<usize>,
}

/// What the problem and the best-design observer share within a session.
#[derive(Default)]
pub(crate) struct Shared {
    /// S-parameters of this session's evaluations, by genome key (not
    /// checkpointed: after a resume they are simulated again when needed).
    pub sparams: BTreeMap<String, SParams>,
    /// Asked for by the observer; the next batch takes it along.
    pub wanted: Option<Wanted>,
    /// What that batch gave for it.
    pub answered: Option<(Wanted, Result<SParams, CandidateFailure>)>,
}

/// The shared state behind its lock. A panic elsewhere while it was held
/// leaves plain data behind (maps and options), still good to read.
pub(crate) fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
