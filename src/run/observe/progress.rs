//! Progress reporting: indicatif bars on a terminal (a generation bar with ETA
//! and an evaluation bar within the generation), plain log lines otherwise.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{Observer, RunInfo};
use crate::ga::problem::PENALTY;
use crate::ga::state::{GaState, GenStats};
use crate::ga::termination::Termination;
use crate::run::summary::RunSummary;

/// Resolution of the generation bar: it shows termination progress in [0, 1].
const BAR_STEPS: u64 = 1000;

enum Mode {
    Bars { multi: MultiProgress, gens: ProgressBar, evals: ProgressBar },
    Lines(Mutex<Box<dyn Write + Send>>),
}

/// Reports progress to the terminal, or as lines to stdout (or any writer).
pub struct ProgressObserver {
    mode: Mode,
    termination: Termination,
    max_generations: Option<usize>,
}

impl ProgressObserver {
    /// Bars when stdout is a terminal and not `quiet`; log lines to stdout otherwise.
    pub fn new(quiet: bool) -> ProgressObserver {
        if !quiet && std::io::stdout().is_terminal() {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stdout());
            let gens = multi.add(ProgressBar::new(BAR_STEPS));
            gens.set_style(
                ProgressStyle::with_template("{prefix:>12} [{bar:30.cyan/blue}] {percent:>3}% eta {eta:>4} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            let evals = multi.add(ProgressBar::new(0));
            evals.set_style(
                ProgressStyle::with_template("{prefix:>12} [{bar:30.green/white}] {pos}/{len} designs, {per_sec}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            evals.set_prefix("evaluating");
            ProgressObserver { mode: Mode::Bars { multi, gens, evals }, termination: Termination::default(), max_generations: None }
        } else {
            ProgressObserver::with_writer(Box::new(std::io::stdout()))
        }
    }

    /// Log lines to `out` (tests, log files).
    pub fn with_writer(out: Box<dyn Write + Send>) -> ProgressObserver {
        ProgressObserver { mode: Mode::Lines(Mutex::new(out)), termination: Termination::default(), max_generations: None }
    }

    fn say(&self, line: &str) -> anyhow::Result<()> {
        match &self.mode {
            Mode::Bars { multi, .. } => multi.println(line)?,
            Mode::Lines(out) => {
                let mut out = out.lock().unwrap_or_else(|p| p.into_inner());
                writeln!(out, "{line}")?;
                out.flush()?;
            }
        }
        Ok(())
    }

    fn gen_label(&self, generation: usize) -> String {
        match self.max_generations {
            Some(n) => format!("gen {generation}/{n}"),
            None => format!("gen {generation}"),
        }
    }
}

fn num(v: f64) -> String {
    if v >= PENALTY {
        "none".into()
    } else {
        format!("{v:.4e}")
    }
}

/// "best 1.2e-3" or "best (0.1, 0.9)".
fn best_text(state: &GaState, s: &GenStats) -> String {
    if state.is_multi_objective() {
        let mins: Vec<String> = s.best.iter().map(|&v| num(v)).collect();
        format!("front {} (min {})", s.front_size, mins.join(", "))
    } else if s.best_violation > 0.0 {
        format!("best infeasible (violation {:.3e})", s.best_violation)
    } else {
        format!("best {}", num(s.best[0]))
    }
}

impl Observer for ProgressObserver {
    fn on_start(&mut self, state: &GaState, info: &RunInfo) -> anyhow::Result<()> {
        self.termination = info.termination.clone();
        self.max_generations = info.termination.max_generations();
        let what = if state.is_multi_objective() {
            format!("NSGA-II on {} objectives", state.n_objectives)
        } else {
            "elitist GA".to_string()
        };
        let start = if info.resumed {
            format!("resuming after generation {}", state.generation)
        } else {
            "starting".to_string()
        };
        self.say(&format!(
            "{start}: {what}, {} genes, population {}, run directory {}",
            state.genes.len(),
            state.settings.population,
            info.dir.display()
        ))?;
        if let Mode::Bars { gens, .. } = &self.mode {
            gens.set_prefix(if state.started() { self.gen_label(state.generation) } else { "gen 0".into() });
            gens.set_position((self.termination.progress(state) * BAR_STEPS as f64) as u64);
            gens.reset_eta();
        }
        Ok(())
    }

    fn on_evaluation(&self, done: usize, total: usize) {
        if let Mode::Bars { evals, .. } = &self.mode {
            if done == 0 {
                evals.reset();
                evals.set_length(total as u64);
            }
            evals.set_position(done as u64);
        }
    }

    fn on_generation(&mut self, state: &GaState, s: &GenStats) -> anyhow::Result<()> {
        let rate = if s.evaluation_seconds > 0.0 { s.new_evaluations as f64 / s.evaluation_seconds } else { 0.0 };
        let best = best_text(state, s);
        match &self.mode {
            Mode::Bars { gens, .. } => {
                gens.set_prefix(self.gen_label(s.generation));
                gens.set_position((self.termination.progress(state) * BAR_STEPS as f64) as u64);
                gens.set_message(format!("{best}, {rate:.1} evals/s"));
                if s.improved && !state.is_multi_objective() {
                    self.say(&format!("{}: new {best}", self.gen_label(s.generation)))?;
                }
            }
            Mode::Lines(_) => {
                let mean = s.mean[0].map_or("none".into(), num);
                let mut line = format!(
                    "{}: {best}, mean {mean}, feasible {}/{}, {} new designs ({rate:.1}/s), {} evaluated",
                    self.gen_label(s.generation),
                    s.feasible,
                    state.population.len(),
                    s.new_evaluations,
                    s.evaluations
                );
                if s.failures > 0 {
                    line.push_str(&format!(", {} failed", s.failures));
                }
                self.say(&line)?;
            }
        }
        Ok(())
    }

    fn on_finish(&mut self, _state: &GaState, summary: &RunSummary) -> anyhow::Result<()> {
        if let Mode::Bars { gens, evals, .. } = &self.mode {
            evals.finish_and_clear();
            gens.finish_with_message(format!("{}", summary.termination));
        }
        self.say(&format!("stopped after generation {}: {}", summary.generation, summary.termination))?;
        if let Some(h) = summary.resume_hint() {
            self.say(&h)?;
        }
        Ok(())
    }
}

impl Drop for ProgressObserver {
    /// A fatal error skips `on_finish`; leave the terminal clean anyway.
    fn drop(&mut self) {
        if let Mode::Bars { gens, evals, .. } = &self.mode {
            evals.finish_and_clear();
            if !gens.is_finished() {
                gens.abandon();
            }
        }
    }
}
