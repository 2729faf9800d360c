//! The executor: owns the problem, the settings, the run directory and the
//! observers, and loops ask -> evaluate -> tell -> checkpoint -> observe -> check.
//!
//! Ctrl-C (or SIGTERM, SIGHUP): the CLI sets the interrupt flag. The batch being evaluated is one
//! engine call that cannot be cut short, so the generation in progress is
//! finished, checkpointed and observed; then the run stops as `Interrupted`.
//! (A second Ctrl-C that kills the process loses only that generation: the
//! checkpoint on disk is always a complete, earlier one.)

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;

use super::checkpoint::{self, CheckpointError, Loaded};
use super::observe::{Observer, RunInfo};
use super::rundir::RunDir;
use super::summary::RunSummary;
use crate::ga::error::GaError;
use crate::ga::problem::Problem;
use crate::ga::settings::GaSettings;
use crate::ga::state::{GaState, SettingsChange};
use crate::ga::step::{new_state, step};
use crate::ga::termination::{Termination, TerminationReason};

/// Said when a resumed run had no completed generation to continue from.
pub const NOTHING_COMPLETED: &str =
    "no generation was completed before the run stopped: starting it over from generation 0 with its saved settings";

/// The stop rule that would end a resumed run before it breeds anything, if
/// one would: `settings` (generation limit included) applied to `state` as
/// [`Runner::resume_from`] applies them.
pub fn resume_blocked(state: &GaState, settings: &GaSettings) -> Option<TerminationReason> {
    let mut t = Termination::from_settings(settings, settings.generations, None);
    if state.termination == Some(TerminationReason::Stagnation) {
        t.restart_stagnation(state.generation);
    }
    t.check(state)
}

/// The stop rules that differ between `old` and `new`, as "stop.stagnation 10 -> 30".
fn limit_changes(old: &GaSettings, new: &GaSettings) -> Vec<String> {
    fn show<T: std::fmt::Display>(v: Option<T>) -> String {
        v.map_or("none".to_string(), |x| x.to_string())
    }
    let (o, n) = (&old.stop, &new.stop);
    let mut v = Vec::new();
    if o.target != n.target {
        v.push(format!("stop.target {} -> {}", show(o.target), show(n.target)));
    }
    if o.max_evaluations != n.max_evaluations {
        v.push(format!("stop.max_evaluations {} -> {}", show(o.max_evaluations), show(n.max_evaluations)));
    }
    if o.stagnation != n.stagnation {
        v.push(format!("stop.stagnation {} -> {}", show(o.stagnation), show(n.stagnation)));
    }
    if o.wall_seconds != n.wall_seconds {
        v.push(format!("stop.wall_seconds {} -> {}", show(o.wall_seconds), show(n.wall_seconds)));
    }
    v
}

/// Runs the optimiser in a run directory.
pub struct Runner<P: Problem> {
    problem: P,
    settings: GaSettings,
    rundir: RunDir,
    observers: Vec<Box<dyn Observer>>,
    interrupt: Arc<AtomicBool>,
    design_hash: String,
}

impl<P: Problem> Runner<P> {
    pub fn new(problem: P, settings: GaSettings, rundir: RunDir, observers: Vec<Box<dyn Observer>>) -> Self {
        Runner { problem, settings, rundir, observers, interrupt: Arc::new(AtomicBool::new(false)), design_hash: String::new() }
    }

    /// The flag the CLI's Ctrl-C handler sets.
    pub fn with_interrupt(mut self, flag: Arc<AtomicBool>) -> Self {
        self.interrupt = flag;
        self
    }

    /// Identifies the design; stored in the checkpoint, and resume refuses a different one.
    pub fn with_design_hash(mut self, hash: impl Into<String>) -> Self {
        self.design_hash = hash.into();
        self
    }

    pub fn interrupt_flag(&self) -> Arc<AtomicBool> {
        self.interrupt.clone()
    }

    pub fn problem(&self) -> &P {
        &self.problem
    }

    pub fn rundir(&self) -> &RunDir {
        &self.rundir
    }

    /// Start a new run. `max_generations` overrides `settings.generations`
    /// (the last generation to breed; generation 0 is the initial population).
    pub fn run(&mut self, max_generations: Option<usize>) -> anyhow::Result<RunSummary> {
        self.ensure_locked()?;
        self.start(max_generations, Vec::new())
    }

    fn start(&mut self, max_generations: Option<usize>, warnings: Vec<String>) -> anyhow::Result<RunSummary> {
        let state = new_state(self.problem.genes(), self.problem.n_objectives(), self.settings.clone(), self.design_hash.clone())?;
        self.drive(state, false, max_generations, warnings, false)
    }

    /// Continue from the run directory's checkpoint (falling back to the
    /// previous one, with a warning in the summary). `max_generations` is
    /// absolute: resuming a 3-generation run with `Some(6)` breeds generations 4 to 6.
    /// A run killed before its first generation was complete has no checkpoint:
    /// it starts over from generation 0 with these settings, and the summary says so.
    pub fn resume(&mut self, max_generations: Option<usize>) -> anyhow::Result<RunSummary> {
        self.ensure_locked()?;
        match checkpoint::load(self.rundir.path()) {
            Ok(loaded) => self.resume_from(loaded, max_generations),
            Err(CheckpointError::Missing { .. }) => self.start(max_generations, vec![NOTHING_COMPLETED.to_string()]),
            Err(e) => Err(e.into()),
        }
    }

    /// Continue from a checkpoint the caller loaded (and whose warning it printed).
    ///
    /// The breeding settings must be the checkpoint's; the generation limit and
    /// the stop rules may change, and each change is recorded in the state. A
    /// run that stopped because it stagnated counts stagnation afresh from here
    /// (it would stop again at once otherwise).
    pub fn resume_from(&mut self, loaded: Loaded, max_generations: Option<usize>) -> anyhow::Result<RunSummary> {
        self.ensure_locked()?;
        let Loaded { mut state, path, warning } = loaded;
        let incompatible = |why: String| GaError::Incompatible(format!("{why} (checkpoint {})", path.display()));
        if state.design_hash != self.design_hash {
            return Err(incompatible(format!(
                "the design changed since the run started (hash {} in the checkpoint, {} now)",
                state.design_hash, self.design_hash
            ))
            .into());
        }
        if state.genes != self.problem.genes() {
            return Err(incompatible("the gene space differs from the checkpoint's".into()).into());
        }
        if state.n_objectives != self.problem.n_objectives() {
            return Err(incompatible(format!(
                "the checkpoint has {} objectives, the problem {}",
                state.n_objectives,
                self.problem.n_objectives()
            ))
            .into());
        }
        state.settings.check_resumable_with(&self.settings)?;
        self.settings.validate()?;
        let mut warnings: Vec<String> = warning.into_iter().collect();
        if !state.started() {
            warnings.push(NOTHING_COMPLETED.to_string());
            return self.start(max_generations, warnings);
        }
        let old_max = state.settings.generations;
        let new_max = max_generations.unwrap_or(self.settings.generations);
        let mut changes = limit_changes(&state.settings, &self.settings);
        if old_max != new_max {
            changes.insert(0, format!("generations {old_max} -> {new_max}"));
        }
        let restart = state.termination == Some(TerminationReason::Stagnation);
        if restart {
            changes.push(format!("stagnation counted afresh from generation {}", state.generation));
        }
        let generation = state.generation;
        state.changes.extend(changes.into_iter().map(|change| SettingsChange { generation, change }));
        state.settings = self.settings.clone();
        state.settings.generations = new_max;
        state.termination = None;
        self.drive(state, true, Some(new_max), warnings, restart)
    }

    /// Writing into the run directory needs its lock; take it if the caller did not.
    fn ensure_locked(&mut self) -> anyhow::Result<()> {
        if !self.rundir.is_locked() {
            self.rundir = RunDir::open_locked(self.rundir.path())?;
        }
        Ok(())
    }

    fn drive(
        &mut self,
        mut state: GaState,
        resumed: bool,
        max_generations: Option<usize>,
        warnings: Vec<String>,
        restart_stagnation: bool,
    ) -> anyhow::Result<RunSummary> {
        let dir = self.rundir.path().to_path_buf();
        let max_gen = max_generations.unwrap_or(state.settings.generations);
        let mut termination = Termination::from_settings(&state.settings, max_gen, Some(self.interrupt.clone()));
        if restart_stagnation {
            termination.restart_stagnation(state.generation);
        }
        let info = RunInfo { dir: &dir, resumed, termination: &termination };
        for o in &mut self.observers {
            o.on_start(&state, &info)?;
        }
        let session = Instant::now();
        let base = state.elapsed_seconds;
        let mut bred = 0;
        let reason = loop {
            // Generation 0 always runs; after it, any criterion met stops the run.
            if state.started() {
                if let Some(r) = termination.check(&state) {
                    break r;
                }
            }
            let observers = &self.observers;
            let progress = |done: usize, total: usize| observers.iter().for_each(|o| o.on_evaluation(done, total));
            step(&mut state, &mut self.problem, &progress)?;
            bred += 1;
            state.stamp_time(base + session.elapsed().as_secs_f64());
            let stats = state.history.last().cloned().ok_or_else(|| anyhow::anyhow!("generation {} left no history row", state.generation))?;
            checkpoint::save(&dir, &state)?;
            for o in &mut self.observers {
                o.on_generation(&state, &stats).with_context(|| {
                    format!("reporting generation {} (its checkpoint is saved; the run can be resumed)", stats.generation)
                })?;
            }
        };
        state.termination = Some(reason);
        state.elapsed_seconds = base + session.elapsed().as_secs_f64();
        checkpoint::save(&dir, &state)?;
        let mut summary = RunSummary::from_state(&state, dir, reason, warnings);
        summary.generations_bred = bred;
        for o in &mut self.observers {
            o.on_finish(&state, &summary)?;
        }
        Ok(summary)
    }
}
