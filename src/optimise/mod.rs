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
    /// [`RunSettings::VERSION`] when written; 0 (absent) in files of earlier builds.
    #[serde(default)]
    pub version: u32,
}

impl RunSettings {
    /// Since version 1 the stop rules with a default value (target, stagnation)
    /// are always written, `None` included.
    pub const VERSION: u32 = 1;

    pub fn new(ga: GaSettings, engine: Option<EngineKind>) -> RunSettings {
        RunSettings { ga, engine, version: RunSettings::VERSION }
    }

    /// Read `settings.ron`. Files of earlier builds left out the stop rules
    /// that were off, and those rules were off by default then: such a rule is
    /// read as off, not as today's default, so the run resumes as it ran.
    pub fn from_ron(text: &str) -> Result<RunSettings, ron::error::SpannedError> {
        let mut s: RunSettings = ron::from_str(text)?;
        if s.version == 0 {
            let written = |field: &str| {
                // ron 0.8's Value holds a named struct as a map of its fields.
                let get = |v: &ron::Value, k: &str| match v {
                    ron::Value::Map(m) => m.iter().find(|(key, _)| **key == ron::Value::String(k.into())).map(|(_, v)| v.clone()),
                    _ => None,
                };
                let v: Option<ron::Value> = ron::from_str(text).ok();
                let stop = v.and_then(|v| get(&v, "ga")).and_then(|g| get(&g, "stop"));
                stop.is_some_and(|s| get(&s, field).is_some())
            };
            if !written("target") {
                s.ga.stop.target = None;
            }
            if !written("stagnation") {
                s.ga.stop.stagnation = None;
            }
            s.version = RunSettings::VERSION;
        }
        Ok(s)
    }
}

/// The run directory at `dir` with the design and settings it keeps
/// (`design.ron`, `settings.ron`), as `resume` and `inspect` read them.
pub fn open_run(dir: &Path) -> anyhow::Result<(RunDir, Design, RunSettings)> {
    let rundir = RunDir::open(dir)?;
    let (design, settings) = read_run(&rundir)?;
    Ok((rundir, design, settings))
}

/// The design and settings a run directory keeps.
pub fn read_run(rundir: &RunDir) -> anyhow::Result<(Design, RunSettings)> {
    let design = Design::load(&rundir.file("design.ron"))?;
    let sp = rundir.file("settings.ron");
    let text = std::fs::read_to_string(&sp).with_context(|| format!("reading {}", sp.display()))?;
    let settings = RunSettings::from_ron(&text).map_err(|e| anyhow::anyhow!("{}:{e}", sp.display()))?;
    Ok((design, settings))
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
    /// Far fields of the last batch's evaluations, by genome key (a new best
    /// comes from the last batch; older ones are dropped, they are megabytes).
    pub far_fields: BTreeMap<String, crate::analysis::pattern::FarField>,
}

/// The shared state behind its lock. A panic elsewhere while it was held
/// leaves plain data behind (maps and options), still good to read.
pub(crate) fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_of_earlier_builds_keep_their_stop_rules_off() {
        // As an earlier build wrote it: rules that were off are left out.
        let old = "(ga: Ga(population: 8, generations: 5, seed: 1, elitism: 2, tournament: 2, \
                   crossover: Sbx(probability: 0.9, eta: 15.0), mutation: Polynomial(eta: 20.0), \
                   stop: (max_evaluations: 100)), engine: None)";
        let s = RunSettings::from_ron(old).unwrap();
        assert_eq!((s.ga.stop.target, s.ga.stop.stagnation, s.ga.stop.max_evaluations), (None, None, Some(100)));
        let old = old.replace("stop: (max_evaluations: 100)", "stop: (target: 0.0, stagnation: 7)");
        let s = RunSettings::from_ron(&old).unwrap();
        assert_eq!((s.ga.stop.target, s.ga.stop.stagnation), (Some(0.0), Some(7)));
        // What this build writes reads back as written, defaults and lifted rules alike.
        for ga in [GaSettings::default(), GaSettings { stop: crate::ga::Stop::none(), ..Default::default() }] {
            let s = RunSettings::new(ga, Some(EngineKind::Tlm));
            let text = ron::ser::to_string_pretty(&s, ron::ser::PrettyConfig::default()).unwrap();
            assert_eq!(RunSettings::from_ron(&text).unwrap(), s, "{text}");
        }
    }
}
