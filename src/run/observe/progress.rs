//! Progress reporting: indicatif bars on a terminal (a generation bar with ETA
//! and an evaluation bar within the generation), plain log lines otherwise.
//!
//! The generation bar counts generations out of the generation limit, so its
//! percentage and ETA only move forward; the other stop rules (stagnation,
//! evaluations, wall time) are shown beside it, nearest to ending first, as
//! counts rather than folded into the bar, where they made it jump.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{Observer, RunInfo};
use crate::ga::failure_kind;
use crate::ga::problem::PENALTY;
use crate::ga::state::{GaState, GenStats};
use crate::ga::termination::Termination;
use crate::run::summary::RunSummary;


/// Prints one line above the bars (or to stderr without bars) from any thread:
/// how a signal handler acknowledges a signal at once.
pub type Announcer = Arc<dyn Fn(&str) + Send + Sync>;

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
            let gens = multi.add(ProgressBar::new(1));
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

    /// A way to print a line at once from another thread (a signal handler).
    pub fn announcer(&self) -> Announcer {
        match &self.mode {
            Mode::Bars { multi, .. } => {
                let multi = multi.clone();
                Arc::new(move |line: &str| {
                    let _ = multi.println(line);
                })
            }
            // A closed stderr must not panic a signal handler.
            Mode::Lines(_) => Arc::new(|line: &str| {
                let _ = writeln!(std::io::stderr(), "{line}");
            }),
        }
    }

    /// Generations completed (generation 0 is the first) and the bar's length (the limit's count).
    fn bar_counts(&self, state: &GaState) -> (u64, u64) {
        let done = if state.started() { state.generation as u64 + 1 } else { 0 };
        let len = self.max_generations.map_or(done.max(1), |m| m as u64 + 1);
        (done.min(len), len)
    }

    /// "next: stagnation 4/12" for the stop rule nearest to ending besides the generation limit.
    fn bounds_text(&self, state: &GaState) -> String {
        self.termination.other_bounds(state).first().map(|b| format!(", next stop: {b}")).unwrap_or_default()
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
    } else if state.best_evaluation().is_some_and(|e| e.is_truncated()) {
        format!("best {} (truncated at the step cap: uncertain)", num(s.best[0]))
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
            match &state.settings.method {
                crate::ga::Method::Ga => "elitist GA".to_string(),
                crate::ga::Method::Cmaes(_) => "CMA-ES (IPOP restarts)".to_string(),
                crate::ga::Method::De(p) => match p.strategy {
                    crate::ga::DeStrategy::Shade { .. } => "differential evolution (SHADE)".to_string(),
                    crate::ga::DeStrategy::RandOneBin { .. } => "differential evolution (DE/rand/1/bin)".to_string(),
                },
                crate::ga::Method::Surrogate(_) => "surrogate-assisted DE (Gaussian-process prescreening)".to_string(),
            }
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
            let (done, len) = self.bar_counts(state);
            gens.set_prefix(if state.started() { self.gen_label(state.generation) } else { self.gen_label(0) });
            gens.set_length(len);
            gens.set_position(done);
            gens.set_message(self.bounds_text(state).trim_start_matches(", ").to_string());
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
                let (done, len) = self.bar_counts(state);
                gens.set_prefix(self.gen_label(s.generation));
                gens.set_length(len);
                gens.set_position(done);
                gens.set_message(format!("{best}, {rate:.1} evals/s{}", self.bounds_text(state)));
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
                    line.push_str(&failures_text(state, s));
                }
                if s.truncated > 0 {
                    line.push_str(&format!(", {} truncated at the step cap", s.truncated));
                }
                if let Some(m) = s.model_seconds {
                    line.push_str(&format!(", model {m:.2} s beside {:.2} s simulating", s.evaluation_seconds));
                }
                line.push_str(&self.bounds_text(state));
                self.say(&line)?;
            }
        }
        Ok(())
    }

    /// The bar is left drawn once with the reason; the summary and any resume
    /// hint are the caller's to print (once).
    fn on_finish(&mut self, _state: &GaState, summary: &RunSummary) -> anyhow::Result<()> {
        if let Mode::Bars { multi, gens, evals } = &self.mode {
            evals.finish_and_clear();
            // Left where it got to (an interrupted run is not "100%"), drawn this
            // last time; then nothing more is drawn, so what the caller prints
            // next is not followed by the bar again.
            gens.abandon_with_message(format!("stopped: {}", summary.termination));
            multi.set_draw_target(ProgressDrawTarget::hidden());
            // indicatif leaves the cursor at the end of its last line.
            let _ = writeln!(std::io::stdout());
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

/// ", 9 of them failed (geometry 5, diverged 4); 52 failed in the run": this
/// generation's failures by kind and the run's total, which `inspect` shows.
fn failures_text(state: &GaState, s: &GenStats) -> String {
    let kinds = failure_kind::count(state.failures.iter().filter(|f| f.generation == s.generation));
    format!(
        ", {} of them failed ({}); {} failed in the run (emvolve inspect --failed lists them)",
        s.failures,
        failure_kind::summary(&kinds),
        state.failures.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ga::problem::Problem;
    use crate::ga::settings::{GaSettings, Stop};
    use crate::ga::step::{new_state, step};
    use crate::ga::testfns::Rastrigin;

    /// The bar is generations out of the generation limit: its position only
    /// grows and its length stays put while stagnation rises and falls; the
    /// other rules are named beside it.
    #[test]
    fn the_generation_bar_never_goes_back_and_names_the_nearest_other_rule() {
        let mut p = Rastrigin::new(2, 1);
        let settings = GaSettings {
            population: 8,
            stop: Stop { stagnation: Some(3), max_evaluations: Some(60), ..Stop::none() },
            ..Default::default()
        };
        let mut st = new_state(p.genes(), 1, settings.clone(), "h").unwrap();
        let mut obs = ProgressObserver::with_writer(Box::new(std::io::sink()));
        obs.termination = Termination::from_settings(&settings, 6, None);
        obs.max_generations = Some(6);
        assert_eq!(obs.bar_counts(&st), (0, 7));
        let mut last = 0;
        for g in 0..=6 {
            step(&mut st, &mut p, &|_, _| {}).unwrap();
            let (done, len) = obs.bar_counts(&st);
            assert_eq!((done, len), (g + 1, 7));
            assert!(done > last);
            last = done;
            let text = obs.bounds_text(&st);
            assert!(text.starts_with(", next stop: "), "{text}");
            assert!(text.contains("evaluations") || text.contains("stagnation"), "{text}");
        }
        let ann = obs.announcer();
        ann("an acknowledgement goes to stderr without bars");
    }
}

