//! A run of 6 generations and a run of 3 generations resumed for 3 more are the
//! same run: same history.csv rows (timings aside), same best design, same state.

use crate::common;

use common::*;

#[test]
fn resumed_run_equals_uninterrupted_run() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("straight"), tmp.path().join("resumed"));

    let s6 = runner(&a, TestProblem::new(), false).run(Some(6)).unwrap();
    assert_eq!(s6.generation, 6);

    let s3 = runner(&b, TestProblem::new(), false).run(Some(3)).unwrap();
    assert_eq!(s3.generation, 3);
    assert_eq!(history_rows(&b).len(), 1 + 4);
    // A new process: a fresh problem and runner on the same directory.
    let mut r = runner(&b, TestProblem::new(), false);
    let resumed = r.resume(Some(6)).unwrap();
    assert!(resumed.warnings.is_empty());
    // Only the three missing generations were simulated in the second session.
    let simulated_now = r.problem().inner.evaluated;
    assert_eq!(simulated_now, state(&b).evaluations - state(&b).history[3].evaluations);

    let (ha, hb) = (history_rows(&a), history_rows(&b));
    assert_eq!(ha.len(), 1 + 7, "header + generations 0..=6");
    assert_eq!(ha, hb, "history differs after resume");
    assert_eq!(s6.best, resumed.best);
    assert_eq!(s6.evaluations, resumed.evaluations);
    let (sa, sb) = (state(&a).without_timings(), state(&b).without_timings());
    assert!(sa == sb, "the final states differ (rng, population, cache or archive)");
}

#[test]
fn resume_after_the_limit_does_nothing_and_keeps_history() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("r");
    runner(&d, TestProblem::new(), false).run(Some(2)).unwrap();
    let before = history_rows(&d);
    let mut r = runner(&d, TestProblem::new(), false);
    let s = r.resume(Some(2)).unwrap();
    assert_eq!(s.generation, 2);
    assert_eq!(r.problem().inner.evaluated, 0);
    assert_eq!(history_rows(&d), before, "resume duplicated or dropped rows");
}

/// CMA-ES, SHADE, DE/rand/1/bin and the surrogate
/// search: a run straight equals the same run stopped half-way and resumed,
/// history and state (the methods' own state and the RNG are in the checkpoint).
#[test]
fn every_optimiser_resumes_exactly() {
    for (block, gens) in [
        // 120 generations; on this mixed lattice problem no IPOP restart happens
        // within them (the generation's best keeps moving), so a restart is not covered here.
        ("Cmaes(population: 6, seed: 5, sigma: 0.1, stop: (target: None, stagnation: None))", 120),
        ("De(population: 10, seed: 5, strategy: Shade(memory: 4), stop: (target: None, stagnation: None))", 8),
        ("De(population: 8, seed: 5, strategy: RandOneBin(), stop: (target: None, stagnation: None))", 8),
        ("Surrogate(population: 4, seed: 5, initial: 12, pool: 8, auto_off: false, stop: (target: None, stagnation: None))", 8),
    ] {
        let mut settings = emvolve::ga::GaSettings::from_ron_str(block).unwrap();
        // The limit the straight run had, so resuming records no change of it.
        settings.generations = gens;
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("straight"), tmp.path().join("resumed"));
        runner_with(&a, TestProblem::new(), false, settings.clone()).run(Some(gens)).unwrap();
        runner_with(&b, TestProblem::new(), false, settings.clone()).run(Some(gens / 2)).unwrap();
        let mut r = runner_with(&b, TestProblem::new(), false, settings.clone());
        r.resume(Some(gens)).unwrap();
        let (ha, hb) = (history_rows(&a), history_rows(&b));
        assert_eq!(ha.len(), 1 + gens + 1, "{block}: header + generations 0..={gens}");
        assert_eq!(ha, hb, "{block}: history differs after resume");
        let (sa, sb) = (state(&a).without_timings(), state(&b).without_timings());
        assert!(sa.method.is_some(), "{block}: no method state in the checkpoint");
        assert!(sa == sb, "{block}: the final states differ");
        // The generations did something: the best improved after generation 0.
        assert!(sa.history.iter().skip(1).any(|h| h.improved), "{block}: never improved");
    }
}

/// A run keeps its optimiser: resuming it with another is refused, by name.
#[test]
fn resume_refuses_another_optimiser() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("r");
    let cma = emvolve::ga::GaSettings::from_ron_str("Cmaes(population: 6, seed: 5)").unwrap();
    runner_with(&d, TestProblem::new(), false, cma).run(Some(2)).unwrap();
    let e = runner(&d, TestProblem::new(), false).resume(Some(4)).unwrap_err().to_string();
    assert!(e.contains("Cmaes") && e.contains("Ga"), "{e}");
}
