//! `history.csv`: one row per generation, appended and flushed as the run goes,
//! rewritten from the state when a run starts or resumes so rows never repeat.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use anyhow::Context;

use super::{Observer, RunInfo};
use crate::ga::failure_kind::{self, FailureKind};
use crate::ga::state::{GaState, GenStats};
use crate::run::rundir::{write_atomic, RunDir};

/// Columns whose values depend on the clock, not on the seed.
pub const TIMING_COLUMNS: &[&str] = &["wall_seconds", "evaluation_seconds", "cells_per_second", MODEL_COLUMN];

/// The surrogate model's time per generation; only surrogate-assisted runs have the column.
const MODEL_COLUMN: &str = "model_seconds";

fn has_model(state: &GaState) -> bool {
    matches!(state.settings.method, crate::ga::Method::Surrogate(_))
}

/// Columns whose values depend on which machines simulated, not on the seed:
/// `workers` is "name:count;name:count" of a farm run's workers (blank otherwise).
pub const SCHEDULE_COLUMNS: &[&str] = &["workers"];

/// Writes `history.csv` in the run directory.
#[derive(Default)]
pub struct CsvObserver {
    file: Option<(PathBuf, BufWriter<File>)>,
}

impl CsvObserver {
    pub fn new() -> CsvObserver {
        CsvObserver::default()
    }
}

/// The header: fixed columns, one per objective statistic, one per gene (the best genome), timings.
pub fn header(state: &GaState) -> String {
    let mut cols: Vec<String> =
        ["generation", "evaluations", "new_evaluations", "failures", "truncated", "feasible"].iter().map(|s| s.to_string()).collect();
    let m = state.n_objectives;
    let suffix = |k: usize| if m == 1 { String::new() } else { format!("_f{}", k + 1) };
    for stat in ["best", "mean", "worst"] {
        cols.extend((0..m).map(|k| format!("{stat}{}", suffix(k))));
    }
    cols.push("best_violation".into());
    if m > 1 {
        cols.push("front_size".into());
    }
    cols.extend(state.gene_names());
    cols.extend(TIMING_COLUMNS.iter().filter(|c| **c != MODEL_COLUMN || has_model(state)).map(|s| s.to_string()));
    // Appended last, so that readers of the earlier columns read them where they were.
    cols.extend(FailureKind::ALL.iter().map(|k| k.column()));
    cols.extend(SCHEDULE_COLUMNS.iter().map(|s| s.to_string()));
    cols.iter().map(|c| escape(c)).collect::<Vec<_>>().join(",")
}

/// One row; numbers in Rust's shortest round-trip form, missing values blank.
pub fn row(state: &GaState, s: &GenStats) -> String {
    let opt = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    let mut cols: Vec<String> = vec![
        s.generation.to_string(),
        s.evaluations.to_string(),
        s.new_evaluations.to_string(),
        s.failures.to_string(),
        s.truncated.to_string(),
        s.feasible.to_string(),
    ];
    cols.extend(s.best.iter().map(f64::to_string));
    cols.extend(s.mean.iter().map(|&v| opt(v)));
    cols.extend(s.worst.iter().map(|&v| opt(v)));
    cols.push(s.best_violation.to_string());
    if state.n_objectives > 1 {
        cols.push(s.front_size.to_string());
    }
    cols.extend((0..state.genes.len()).map(|g| opt(s.best_genome.get(g).copied())));
    cols.push(s.wall_seconds.to_string());
    cols.push(s.evaluation_seconds.to_string());
    cols.push(opt(s.cells_per_second));
    if has_model(state) {
        cols.push(opt(s.model_seconds));
    }
    // This generation's failures by kind (they add up to `failures`).
    let kinds = failure_kind::count(state.failures.iter().filter(|f| f.generation == s.generation));
    cols.extend(kinds.iter().map(usize::to_string));
    cols.push(escape(&s.workers.iter().map(|(w, n)| format!("{w}:{n}")).collect::<Vec<_>>().join(";")));
    cols.join(",")
}

fn escape(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

impl Observer for CsvObserver {
    fn on_start(&mut self, state: &GaState, info: &RunInfo) -> anyhow::Result<()> {
        let path = info.dir.join(RunDir::HISTORY);
        let mut text = header(state);
        text.push('\n');
        for s in &state.history {
            text.push_str(&row(state, s));
            text.push('\n');
        }
        write_atomic(&path, text.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
        let f = OpenOptions::new().append(true).open(&path).with_context(|| format!("opening {}", path.display()))?;
        self.file = Some((path, BufWriter::new(f)));
        Ok(())
    }

    fn on_generation(&mut self, state: &GaState, stats: &GenStats) -> anyhow::Result<()> {
        let (path, f) = self.file.as_mut().context("the CSV observer was not started")?;
        writeln!(f, "{}", row(state, stats)).and_then(|_| f.flush()).with_context(|| format!("appending to {}", path.display()))
    }
}
