//! Shared fixtures for the run tests: a Rastrigin problem that can fail designs
//! or raise the interrupt flag, and helpers to compare runs through their files.
#![allow(dead_code)]

pub mod cli;
pub mod recording;
pub mod skip;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use emvolve::ga::testfns::Rastrigin;
use emvolve::ga::{Evaluation, GaSettings, GaState, GeneSpec, Problem};
use emvolve::run::observe::{csv::{SCHEDULE_COLUMNS, TIMING_COLUMNS}, CsvObserver, Observer, PlotObserver, ProgressObserver};
use emvolve::run::{checkpoint, RunDir, Runner};

/// Rastrigin with 3 reals, 2 integers, a stepped gene and `sum(x) <= 4`.
pub struct TestProblem {
    pub inner: Rastrigin,
    /// Designs for which this is true "fail to simulate".
    pub fail_if: fn(&[f64]) -> bool,
    /// Raise the flag while evaluating this batch (0 = generation 0).
    pub interrupt_at_batch: Option<(usize, Arc<AtomicBool>)>,
}

impl TestProblem {
    pub fn new() -> TestProblem {
        let mut inner = Rastrigin::new(3, 2);
        inner.sum_limit = Some(4.0);
        inner.cells_per_second = Some(3.0e8);
        TestProblem { inner, fail_if: |_| false, interrupt_at_batch: None }
    }
}

impl Problem for TestProblem {
    fn genes(&self) -> Vec<GeneSpec> {
        self.inner.genes()
    }
    fn n_objectives(&self) -> usize {
        1
    }
    fn constraint_violation(&self, x: &[f64]) -> f64 {
        self.inner.constraint_violation(x)
    }
    fn evaluate_batch(&mut self, xs: &[Vec<f64>], progress: &(dyn Fn(usize) + Sync)) -> anyhow::Result<Vec<Evaluation>> {
        if let Some((batch, flag)) = &self.interrupt_at_batch {
            if *batch == self.inner.batches {
                // As if Ctrl-C arrived while the engine was busy.
                flag.store(true, Ordering::SeqCst);
            }
        }
        let mut out = self.inner.evaluate_batch(xs, progress)?;
        for (x, e) in xs.iter().zip(out.iter_mut()) {
            if (self.fail_if)(x) {
                *e = Evaluation::failed("fields went non-finite at step 1234", 1);
            }
        }
        Ok(out)
    }
}

pub fn settings() -> GaSettings {
    GaSettings::from_ron_str(
        "Ga(population: 24, generations: 6, seed: 11, elitism: 2, tournament: 3, \
         crossover: Sbx(probability: 0.9, eta: 15.0), mutation: Polynomial(eta: 20.0))",
    )
    .unwrap()
}

/// Progress (as lines into a sink), CSV and plots.
pub fn observers() -> Vec<Box<dyn Observer>> {
    vec![
        Box::new(ProgressObserver::with_writer(Box::new(std::io::sink()))),
        Box::new(CsvObserver::new()),
        Box::new(PlotObserver::new()),
    ]
}

pub fn runner(dir: &Path, problem: TestProblem, force: bool) -> Runner<TestProblem> {
    runner_with(dir, problem, force, settings())
}

/// [`runner`] with other optimiser settings.
pub fn runner_with(dir: &Path, problem: TestProblem, force: bool, settings: GaSettings) -> Runner<TestProblem> {
    let rd = if force || !dir.exists() { RunDir::create(dir, force).unwrap() } else { RunDir::open(dir).unwrap() };
    Runner::new(problem, settings, rd, observers()).with_design_hash("design-1")
}

/// history.csv without its timing columns.
pub fn history_rows(dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join(RunDir::HISTORY)).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let keep: Vec<usize> = (0..header.len()).filter(|&i| !TIMING_COLUMNS.contains(&header[i]) && !SCHEDULE_COLUMNS.contains(&header[i])).collect();
    std::iter::once(header.join(","))
        .chain(lines.map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            assert_eq!(cells.len(), header.len(), "ragged row {l}");
            keep.iter().map(|&i| cells[i]).collect::<Vec<_>>().join(",")
        }))
        .collect()
}

pub fn state(dir: &Path) -> GaState {
    checkpoint::load(dir).unwrap().state
}
