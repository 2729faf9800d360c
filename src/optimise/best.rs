//! [`BestObserver`]: keeps `best/` (parameters, Touchstone with every port
//! driven, S-parameter CSV, the RF plots, the resonances with their Q and
//! the power balance, the far-field files where the design asks for a far field) and `plots/best_sparams.png` in step
//! with the best design of the run, and a snapshot of the best design's |S|
//! plot per generation in `plots/generations/gen_NNNN.png`, so the run's
//! history can be looked at.
//!
//! The GA drives only the ports its goals need. When a new best appears, its
//! parameters and what is known of its S-parameters are written at once; the
//! port columns it lacks are asked for, and the problem simulates them in the
//! next generation's batch. The Touchstone file follows when they come back
//! (or, at the end of the run, from a simulation of its own).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::Context as _;

use super::{lock, DesignProblem, Shared, Simulator, Wanted};
use crate::analysis::SParams;
use crate::evaluate::{simulate_batch, CandidateFailure, Request};
use crate::ga::genome::genome_key;
use crate::ga::problem::PENALTY;
use crate::ga::state::{GaState, GenStats};
use crate::plot::sparams::masks;
use crate::outputs::{parameter_list, write_sparams_plot, write_touchstone};
use crate::run::observe::{Observer, RunInfo};
use crate::run::RunSummary;
use crate::engine::RunCtx;

/// The best design whose files stand in `best/`.
struct Shown {
    key: String,
    /// The warning its files carry when a simulation was cut off by the step cap.
    truncated: Option<String>,
    /// The generation at which it was first shown (titles and comments say it).
    generation: usize,
    values: BTreeMap<String, f64>,
}

/// Where the per-generation snapshots go, under the run directory.
pub const GENERATIONS_DIR: &str = "plots/generations";

/// Keeps `best/` and `plots/best_sparams.png` in step with the best design.
pub struct BestObserver {
    sim: Arc<Simulator>,
    shared: Arc<Mutex<Shared>>,
    dir: Option<PathBuf>,
    shown: Option<Shown>,
    /// The shown design's S-parameters, drawn again for each generation's snapshot.
    last_sp: Option<SParams>,
}

impl BestObserver {
    /// The observer of `problem`'s run (it shares the problem's S-parameters and batches).
    pub fn new(sim: Arc<Simulator>, problem: &DesignProblem) -> BestObserver {
        BestObserver { sim, shared: problem.shared.clone(), dir: None, shown: None, last_sp: None }
    }

    /// A new best: its parameters and the S-parameters known so far; the
    /// Touchstone file at once if every column is known, else ask for the rest.
    fn show(&mut self, state: &GaState, genome: &[f64]) -> anyhow::Result<()> {
        let Some(dir) = self.dir.clone() else { return Ok(()) };
        let key = genome_key(genome);
        let values = self.sim.values(genome);
        let truncated = state.cache.get(&key).and_then(|e| e.decay).filter(|d| d.truncated).map(|d| {
            format!("WARNING: {d}; the S-parameters miss the tail of the response and are uncertain (raise the engine's max_steps or max_time)")
        });
        // The generation it was found at, which after a resume is before this one.
        let generation = found_at(state, genome);
        let shown = Shown { key: key.clone(), truncated, generation, values: values.clone() };
        let known = lock(&self.shared).sparams.get(&key).cloned();
        let best = dir.join("best");
        std::fs::create_dir_all(&best).with_context(|| format!("creating {}", best.display()))?;
        // Its far field (evaluated in the last batch); an earlier best's files go.
        remove_far_field_files(&best)?;
        if let Some(ff) = lock(&self.shared).far_fields.get(&key).cloned() {
            let title = format!("{} best, generation {generation}", self.sim.design.name());
            crate::outputs::write_far_field(&ff, &best, &title)?;
        }
        let e = state.cache.get(&key);
        let text = ron::ser::to_string_pretty(
            &serde_json::json!({
                "generation": generation,
                "parameters": values,
                "objectives": e.map(|e| e.objectives.clone()),
                "goals": e.map(|e| e.extra.goals.clone()),
            }),
            ron::ser::PrettyConfig::default(),
        )?;
        crate::run::rundir::write_atomic(&best.join("parameters.ron"), text.as_bytes()).with_context(|| format!("writing {}", best.display()))?;
        let missing: Vec<usize> = self.sim.all_ports().into_iter().filter(|&j| !known.as_ref().is_some_and(|sp| has_column(sp, j))).collect();
        // A request for an earlier best is void.
        lock(&self.shared).wanted = None;
        match &known {
            Some(sp) if missing.is_empty() => self.complete(&shown, sp)?,
            _ => {
                // best/ never mixes designs: the earlier best's Touchstone file goes
                // until this one's is complete.
                let stale = crate::analysis::touchstone::path(&best.join(self.sim.design.name()), self.sim.design.port_names().len());
                if stale.exists() {
                    std::fs::remove_file(&stale).with_context(|| format!("removing {}", stale.display()))?;
                }
                if let Some(sp) = &known {
                    self.plots(&shown, sp)?;
                }
                lock(&self.shared).wanted = Some(Wanted { key, values, drives: missing });
            }
        }
        self.shown = Some(shown);
        Ok(())
    }

    /// The plot in `plots/`, and the S-parameter CSV and RF plots in `best/`.
    fn plots(&mut self, shown: &Shown, sp: &SParams) -> anyhow::Result<()> {
        self.last_sp = Some(sp.clone());
        let Some(dir) = &self.dir else { return Ok(()) };
        let design = &self.sim.design;
        let title = format!("{} best, generation {}", design.name(), shown.generation);
        let plots = dir.join("plots");
        std::fs::create_dir_all(&plots).with_context(|| format!("creating {}", plots.display()))?;
        write_sparams_plot(design, sp, &plots.join("best_sparams.png"), &title)?;
        let best = dir.join("best");
        std::fs::create_dir_all(&best).with_context(|| format!("creating {}", best.display()))?;
        let csv = best.join("sparams.csv");
        crate::run::rundir::write_atomic(&csv, crate::analysis::sparams_csv::render(sp).as_bytes()).with_context(|| format!("writing {}", csv.display()))?;
        crate::plot::write_rf_plots(&best, sp, &masks(design), &title)?;
        crate::outputs::write_analysis_files(sp, &best)?;
        Ok(())
    }

    /// This generation's snapshot of the best design's |S| plot.
    fn snapshot(&self, generation: usize) -> anyhow::Result<()> {
        let (Some(dir), Some(sp)) = (&self.dir, &self.last_sp) else { return Ok(()) };
        let design = &self.sim.design;
        let gens = dir.join(GENERATIONS_DIR);
        std::fs::create_dir_all(&gens).with_context(|| format!("creating {}", gens.display()))?;
        let title = format!("{} best at generation {generation}", design.name());
        write_sparams_plot(design, sp, &gens.join(format!("gen_{generation:04}.png")), &title)?;
        Ok(())
    }

    /// Every column known: the Touchstone file, and the plots of the whole matrix.
    fn complete(&mut self, shown: &Shown, full: &SParams) -> anyhow::Result<()> {
        let Some(dir) = &self.dir else { return Ok(()) };
        let design = &self.sim.design;
        let mut comment = format!(
            "emvolve best design of {} at generation {}\nparameters: {}",
            design.name(),
            shown.generation,
            parameter_list(&shown.values)
        );
        if let Some(w) = &shown.truncated {
            comment.push_str(&format!("\n{w}"));
        }
        write_touchstone(full, &dir.join("best").join(design.name()), &comment)?;
        self.plots(shown, full)
    }

    /// The columns asked for came back: complete the files if the design is still the one shown.
    fn answered(&mut self, wanted: Wanted, answer: Result<SParams, CandidateFailure>) -> anyhow::Result<()> {
        let Some(shown) = self.shown.take_if(|s| s.key == wanted.key) else { return Ok(()) };
        let r = self.answered_for(&shown, wanted, answer);
        self.shown = Some(shown);
        r
    }

    fn answered_for(&mut self, shown: &Shown, wanted: Wanted, answer: Result<SParams, CandidateFailure>) -> anyhow::Result<()> {
        match answer {
            Ok(columns) => {
                let mut full = lock(&self.shared).sparams.get(&wanted.key).cloned().unwrap_or_else(|| columns.clone());
                merge_columns(&mut full, &columns);
                self.complete(shown, &full)
            }
            Err(reason) => {
                eprintln!("warning: the best design could not be re-simulated for best/: {reason}");
                Ok(())
            }
        }
    }
}

/// The generation at which `genome` became the run's best: the first of the
/// last stretch of history rows that name it (the last generation when none does).
fn found_at(state: &GaState, genome: &[f64]) -> usize {
    let mut g = state.generation;
    for h in state.history.iter().rev() {
        if h.best_genome != genome {
            break;
        }
        g = h.generation;
    }
    g
}

/// Remove the far-field files of `dir` (an earlier best's).
fn remove_far_field_files(dir: &std::path::Path) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name == "farfield.csv" || name == "farfield.json" || (name.starts_with("pattern_") && name.ends_with("GHz.png")) {
            std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
        }
    }
    Ok(())
}

/// Whether column `j` (0-based: port j driven) of `sp` was simulated.
fn has_column(sp: &SParams, j: usize) -> bool {
    sp.s.first().and_then(|row| row.get(j)).is_some_and(Option::is_some)
}

/// Copy the driven columns of `from` into `into` (the same structure, other drives).
fn merge_columns(into: &mut SParams, from: &SParams) {
    if into.ports != from.ports || into.freqs != from.freqs {
        *into = from.clone();
        return;
    }
    for j in (0..from.n_ports()).filter(|&j| has_column(from, j)) {
        for (row_into, row_from) in into.s.iter_mut().zip(&from.s) {
            row_into[j] = row_from[j].clone();
        }
        into.zin[j] = from.zin[j].clone();
    }
}

impl Observer for BestObserver {
    fn on_start(&mut self, _state: &GaState, info: &RunInfo) -> anyhow::Result<()> {
        self.dir = Some(info.dir.to_path_buf());
        Ok(())
    }

    fn on_generation(&mut self, state: &GaState, stats: &GenStats) -> anyhow::Result<()> {
        let valid = !stats.best_genome.is_empty() && !stats.best.first().is_some_and(|b| *b >= PENALTY);
        let current = valid.then(|| genome_key(&stats.best_genome));
        // Columns the batch simulated for a best that is still the best (else void).
        let answered = lock(&self.shared).answered.take();
        if let Some((wanted, answer)) = answered.filter(|(w, _)| current.as_ref() == Some(&w.key)) {
            self.answered(wanted, answer)?;
        }
        if let Some(current) = current {
            if !self.shown.as_ref().is_some_and(|s| s.key == current) {
                self.show(state, &stats.best_genome)?;
            }
        }
        self.snapshot(state.generation)
    }

    /// The last best's columns, if no batch took them: simulated alone.
    fn on_finish(&mut self, _state: &GaState, _summary: &RunSummary) -> anyhow::Result<()> {
        let (answered, wanted) = {
            let mut shared = lock(&self.shared);
            (shared.answered.take(), shared.wanted.take())
        };
        if let Some((w, answer)) = answered {
            self.answered(w, answer)?;
        }
        let Some(w) = wanted else { return Ok(()) };
        let sim = &self.sim;
        let request = Request { values: w.values.clone(), drives: w.drives.clone() };
        let mut r = simulate_batch(&sim.design, std::slice::from_ref(&request), sim.engine, sim.backend.as_ref(), &RunCtx::NONE)?;
        match r.pop() {
            Some(answer) => self.answered(w, answer.map(|s| s.sparams)),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_complex::Complex64;

    fn sp(cols: &[usize], v: f64) -> SParams {
        let col = |j: usize| cols.contains(&j).then(|| vec![Complex64::new(v + j as f64, 0.0); 3]);
        SParams {
            freqs: vec![1e9, 2e9, 3e9],
            ports: vec!["a".into(), "b".into()],
            s: vec![vec![col(0), col(1)], vec![col(0), col(1)]],
            zin: vec![col(0), col(1)],
            zref: vec![vec![Complex64::new(50.0, 0.0); 3]; 2],
        }
    }

    /// After a resume the best found at generation 15 is shown as found at 15,
    /// not at the first generation the resumed run completes.
    #[test]
    fn a_best_is_dated_by_the_generation_that_found_it() {
        use crate::ga::problem::Problem;
        use crate::ga::settings::GaSettings;
        use crate::ga::step::{new_state, step};
        use crate::ga::testfns::Rastrigin;
        let mut p = Rastrigin::new(2, 1);
        let mut st = new_state(p.genes(), 1, GaSettings { population: 8, ..Default::default() }, "").unwrap();
        for _ in 0..12 {
            step(&mut st, &mut p, &|_, _| {}).unwrap();
        }
        let best = st.best[0].genome.clone();
        let first = st.history.iter().find(|h| h.best_genome == best).unwrap().generation;
        assert_eq!(found_at(&st, &best), first);
        // A genome the history never named is new: dated now.
        assert_eq!(found_at(&st, &[9.0, 9.0, 9.0]), st.generation);
    }

    #[test]
    fn columns_merge_into_the_full_matrix() {
        let mut a = sp(&[0], 1.0);
        assert!(has_column(&a, 0) && !has_column(&a, 1) && !has_column(&a, 7));
        merge_columns(&mut a, &sp(&[1], 10.0));
        assert_eq!(a.get(1, 1).unwrap()[0].re, 1.0, "the known column is kept");
        assert_eq!(a.get(2, 2).unwrap()[0].re, 11.0, "the new column is added");
        assert_eq!(a.zin[1].as_ref().unwrap()[2].re, 11.0);
        // Another structure: the answer replaces what was known.
        let mut c = sp(&[0], 1.0);
        let mut other = sp(&[1], 5.0);
        other.freqs[2] = 4e9;
        merge_columns(&mut c, &other);
        assert!(c == other);
    }
}
