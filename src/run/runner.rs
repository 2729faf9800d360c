//! The executor: owns the problem, the settings, the run directory and the
//! observers, and loops ask -> evaluate -> tell -> checkpoint -> observe -> check.
//!
//! Ctrl-C: the CLI sets the interrupt flag. The batch being evaluated is one
//! engine call that cannot be cut short, so the generation in progress is
//! finished, checkpointed and observed; then the run stops as `Interrupted`.
//! (A second Ctrl-C that kills the process loses only that generation: the
//! checkpoint on disk is always a complete, earlier one.)

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;

use super::checkpoint::{self, Loaded};
use super::observe::{Observer, RunInfo};
use super::rundir::RunDir;
use super::summary::RunSummary;
use crate::ga::error::GaError;
use crate::ga::problem::Problem;
use crate::ga::settings::GaSettings;
use crate::ga::state::GaState;
use crate::ga::step::{new_state, step};
use crate::ga::termination::Termination;

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

    pub fn into_problem(self) -> P {
        self.problem
    }

    pub fn rundir(&self) -> &RunDir {
        &self.rundir
    }

    /// Start a new run. `max_generations` overrides `settings.generations`
    /// (the last generation to breed; generation 0 is the initial population).
    pub fn run(&mut self, max_generations: Option<usize>) -> anyhow::Result<RunSummary> {
        let state = new_state(self.problem.genes(), self.problem.n_objectives(), self.settings.clone(), self.design_hash.clone())?;
        self.drive(state, false, max_generations, Vec::new())
    }

    /// Continue from the run directory's checkpoint (falling back to the
    /// previous one, with a warning in the summary). `max_generations` is
    /// absolute: resuming a 3-generation run with `Some(6)` breeds generations 4 to 6.
    pub fn resume(&mut self, max_generations: Option<usize>) -> anyhow::Result<RunSummary> {
        let loaded = checkpoint::load(self.rundir.path())?;
        self.resume_from(loaded, max_generations)
    }

    /// Continue from a checkpoint the caller loaded (and whose warning it printed).
    pub fn resume_from(&mut self, loaded: Loaded, max_generations: Option<usize>) -> anyhow::Result<RunSummary> {
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
        if !state.started() {
            return Err(incompatible("the checkpoint holds no completed generation".into()).into());
        }
        state.settings.check_resumable_with(&self.settings)?;
        self.settings.validate()?;
        state.settings = self.settings.clone();
        state.termination = None;
        self.drive(state, true, max_generations, warning.into_iter().collect())
    }

    fn drive(
        &mut self,
        mut state: GaState,
        resumed: bool,
        max_generations: Option<usize>,
        warnings: Vec<String>,
    ) -> anyhow::Result<RunSummary> {
        let dir = self.rundir.path().to_path_buf();
        let max_gen = max_generations.unwrap_or(state.settings.generations);
        let termination = Termination::from_settings(&state.settings, max_gen, Some(self.interrupt.clone()));
        let info = RunInfo { dir: &dir, resumed, termination: &termination };
        for o in &mut self.observers {
            o.on_start(&state, &info)?;
        }
        let session = Instant::now();
        let base = state.elapsed_seconds;
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
        let summary = RunSummary::from_state(&state, dir, reason, warnings);
        for o in &mut self.observers {
            o.on_finish(&state, &summary)?;
        }
        Ok(summary)
    }
}
