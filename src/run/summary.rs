//! `RunSummary`: what a run returns: why it stopped, the best designs, and how to resume.

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;

use crate::ga::state::GaState;
use crate::ga::termination::TerminationReason;

/// One of the best designs, with its genes named.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BestDesign {
    pub genes: Vec<(String, f64)>,
    pub objectives: Vec<f64>,
    pub constraint_violation: f64,
    /// Its simulation hit the step cap before its end criterion (the violation is that penalty).
    pub truncated: bool,
}

/// The outcome of `Runner::run`/`resume`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    pub run_dir: PathBuf,
    pub termination: TerminationReason,
    /// The last completed generation.
    pub generation: usize,
    pub evaluations: usize,
    /// Designs whose simulation failed, over the whole run.
    pub failures: usize,
    /// Run time summed over sessions (seconds).
    pub elapsed_seconds: f64,
    /// Single objective: the best design; NSGA-II: the Pareto archive.
    pub best: Vec<BestDesign>,
    /// Things the caller should print (a checkpoint fallback, say).
    pub warnings: Vec<String>,
    /// Generations bred in this session (0: a resumed run had nothing left to do).
    pub generations_bred: usize,
    /// Designs of the whole run whose simulation hit the step cap before its end criterion.
    pub truncated: usize,
}

impl RunSummary {
    pub(crate) fn from_state(state: &GaState, run_dir: PathBuf, termination: TerminationReason, warnings: Vec<String>) -> Self {
        let names = state.gene_names();
        let best = state
            .best
            .iter()
            .map(|ind| {
                let e = state.evaluation(ind);
                BestDesign {
                    genes: names.iter().cloned().zip(ind.genome.iter().copied()).collect(),
                    objectives: e.objectives.clone(),
                    constraint_violation: e.constraint_violation,
                    truncated: e.is_truncated(),
                }
            })
            .collect();
        RunSummary {
            run_dir,
            termination,
            generation: state.generation,
            evaluations: state.evaluations,
            failures: state.failures.len(),
            elapsed_seconds: state.elapsed_seconds,
            best,
            warnings,
            generations_bred: 0,
            truncated: state.history.iter().map(|h| h.truncated).sum(),
        }
    }

    /// An interrupted run continues from its checkpoint (so can any run, with higher limits).
    pub fn interrupted(&self) -> bool {
        self.termination == TerminationReason::Interrupted
    }

    /// What to tell the user after an interruption (printed once, by the caller).
    pub fn resume_hint(&self) -> Option<String> {
        self.interrupted().then(|| {
            format!(
                "the checkpoint of generation {} is saved in {}; continue with: emvolve resume {}",
                self.generation,
                self.run_dir.display(),
                self.run_dir.display()
            )
        })
    }
}

impl fmt::Display for RunSummary {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        writeln!(
            f,
            "stopped after generation {} ({}): {} designs simulated, {} failed, {:.1} s",
            self.generation, self.termination, self.evaluations, self.failures, self.elapsed_seconds
        )?;
        let show = self.best.len().min(5);
        for b in &self.best[..show] {
            let obj: Vec<String> = b.objectives.iter().map(|o| format!("{o:.6e}")).collect();
            let genes: Vec<String> = b.genes.iter().map(|(n, v)| format!("{n}={v}")).collect();
            write!(f, "  best [{}] {}", obj.join(", "), genes.join(" "))?;
            if b.truncated {
                write!(f, " (truncated at the step cap: fitness uncertain)")?;
            } else if b.constraint_violation > 0.0 {
                write!(f, " (infeasible: violation {:.3e})", b.constraint_violation)?;
            }
            writeln!(f)?;
        }
        if self.best.len() > show {
            writeln!(f, "  ... and {} more on the Pareto front", self.best.len() - show)?;
        }
        if self.truncated > 0 {
            writeln!(
                f,
                "  {} designs hit the step cap before their energy decay target and could not be continued past it (more than one mode still ringing, or the source still on): their fitness is uncertain and they rank behind every converged design (raise the engine's max_steps or max_time to simulate them fully)",
                self.truncated
            )?;
        }
        Ok(())
    }
}
