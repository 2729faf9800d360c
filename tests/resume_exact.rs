//! A run of 6 generations and a run of 3 generations resumed for 3 more are the
//! same run: same history.csv rows (timings aside), same best design, same state.

mod common;

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
