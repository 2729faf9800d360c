//! The run's best/ Touchstone file has every port driven, although the GA
//! drives only the ports its goals need: the best design's missing column is
//! simulated inside the next generation's batch (never alone during the run,
//! alone at most once at its end), and the file equals a simulation of that
//! design on its own with every port driven.

use std::sync::Arc;

use emvolve::design::Design;
use emvolve::engine::Backend;
use emvolve::optimise::{BestObserver, DesignProblem, Simulator};
use emvolve::run::observe::Observer;
use emvolve::run::{checkpoint, RunDir, Runner};

use crate::common;
use common::recording::Recording;

/// The Touchstone lines that carry numbers (comments name the generation).
fn data_lines(text: &str) -> Vec<String> {
    text.lines().filter(|l| !l.starts_with('!')).map(str::to_string).collect()
}

#[test]
fn best_touchstone_has_every_port_and_its_column_rides_in_the_batches() {
    // The shipped filter on a coarser mesh and a shorter decay: the machinery, not the physics, is tested.
    let text = std::fs::read_to_string("tests/fixtures/uniform/wr28_iris_filter.ron").unwrap().replace("cell: \"a/28\"", "cell: \"a/20\"").replace("decay_db: -50", "decay_db: -30");
    let design = Design::parse(&text, "designs/wr28_iris_filter.ron (coarse)").unwrap();
    // The goals (|S21|, |S11|) drive port 1 only; best/ wants port 2 driven too.
    assert_eq!(design.drives_needed(), vec![0]);
    let mut ga = design.optimiser().clone();
    ga.population = 4;
    ga.generations = 3;
    ga.seed = 5;
    ga.stop.stagnation = None;
    ga.stop.target = None;
    let hash = design.hash();
    let recording = Arc::new(Recording::default());
    let backend: Arc<dyn Backend> = recording.clone();
    let sim = Arc::new(Simulator { design, backend, engine: None });
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let problem = DesignProblem::new(sim.clone());
    let observers: Vec<Box<dyn Observer>> = vec![Box::new(BestObserver::new(sim.clone(), &problem))];
    let mut runner = Runner::new(problem, ga, RunDir::create(&dir, false).unwrap(), observers).with_design_hash(hash);
    runner.run(None).unwrap();

    let batches = recording.batches.lock().unwrap().clone();
    let ga_batches = batches.iter().filter(|b| b.contains(&0)).count();
    // Every batch but the last is a GA batch (port 1 driven); the last may be
    // the final best's column alone.
    for b in &batches[..batches.len() - 1] {
        assert!(b.contains(&0), "a batch without the GA's candidates ran during the run: {batches:?}");
    }
    assert!(ga_batches >= 2, "{batches:?}");
    // The first best's column (known after generation 0) rode in a later GA batch.
    assert!(batches.iter().skip(1).any(|b| b.contains(&0) && b.contains(&1)), "{batches:?}");
    // Each port-2 job is a best design's column, simulated once.
    let state = checkpoint::load(&dir).unwrap().state;
    let improvements = state.history.iter().filter(|h| h.improved).count();
    let columns: usize = batches.iter().map(|b| b.iter().filter(|&&d| d == 1).count()).sum();
    assert!(columns >= 1 && columns <= improvements, "{columns} port-2 jobs for {improvements} new bests");

    // best/ against the best design simulated on its own, both ports driven.
    let best = &state.best[0].genome;
    let alone = sim.simulate(best, &[0, 1]).unwrap().unwrap();
    let expected = emvolve::analysis::touchstone::render(&alone.sparams, "").unwrap();
    let written = std::fs::read_to_string(dir.join("best/wr28_iris_filter.s2p")).unwrap();
    assert_eq!(data_lines(&written), data_lines(&expected));
    assert!(dir.join("best/parameters.ron").exists() && dir.join("best/sparams.png").exists());
}
