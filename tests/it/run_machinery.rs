//! The runner through real files: determinism, failures, Ctrl-C, checkpoint
//! fallback, refusals on resume, stop rules, progress output.

use crate::common;

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use common::*;
use emvolve::ga::{GaSettings, Stop, TerminationReason};
use emvolve::run::observe::{Observer, ProgressObserver};
use emvolve::run::{inspect, RunDir, Runner};

#[test]
fn same_seed_gives_the_same_run() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let sa = runner(&a, TestProblem::new(), false).run(None).unwrap();
    let sb = runner(&b, TestProblem::new(), false).run(None).unwrap();
    assert_eq!(sa.termination, TerminationReason::MaxGenerations);
    assert_eq!(sa.generation, 6);
    assert_eq!(history_rows(&a), history_rows(&b));
    assert!(state(&a).without_timings() == state(&b).without_timings());
    assert_eq!(sa.best, sb.best);
    // And another seed gives another run.
    let c = tmp.path().join("c");
    let rd = RunDir::create(&c, false).unwrap();
    let other = GaSettings { seed: 12, ..settings() };
    Runner::new(TestProblem::new(), other, rd, observers()).with_design_hash("design-1").run(None).unwrap();
    assert_ne!(history_rows(&a), history_rows(&c));
}

#[test]
fn failed_designs_are_penalised_recorded_and_the_run_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("f");
    let mut p = TestProblem::new();
    p.fail_if = |x| x[0] > 1.0;
    let s = runner(&d, p, false).run(None).unwrap();
    assert_eq!(s.generation, 6);
    assert!(s.failures > 0);
    let st = state(&d);
    assert_eq!(st.failures.len(), s.failures);
    assert!(st.failures.iter().all(|f| f.genome[0] > 1.0 && f.reason.contains("non-finite")));
    assert!(st.best.iter().all(|b| b.genome[0] <= 1.0));
    // The failures column of history.csv adds up to the same count.
    let rows = history_rows(&d);
    let col = rows[0].split(',').position(|c| c == "failures").unwrap();
    let total: usize = rows[1..].iter().map(|r| r.split(',').nth(col).unwrap().parse::<usize>().unwrap()).sum();
    assert_eq!(total, s.failures);
    // No NaN anywhere: failed designs carry the finite penalty.
    let text = std::fs::read_to_string(d.join(RunDir::CHECKPOINT)).unwrap();
    assert!(!text.contains("NaN") && !text.contains("inf"));
}

#[test]
fn ctrl_c_finishes_the_generation_checkpoints_and_resumes_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let (d, reference) = (tmp.path().join("i"), tmp.path().join("ref"));
    let flag = Arc::new(AtomicBool::new(false));
    let mut p = TestProblem::new();
    p.interrupt_at_batch = Some((2, flag.clone()));
    let s = runner(&d, p, false).with_interrupt(flag.clone()).run(None).unwrap();
    assert_eq!(s.termination, TerminationReason::Interrupted);
    assert_eq!(s.generation, 2, "the generation being evaluated is finished, no further");
    assert!(s.resume_hint().unwrap().contains("generation 2"));
    // The summary leaves the hint to the caller, who prints it once.
    assert!(!s.to_string().contains("emvolve resume"));
    let st = state(&d);
    assert_eq!((st.generation, st.termination), (2, Some(TerminationReason::Interrupted)));
    assert_eq!(history_rows(&d).len(), 1 + 3);

    // Resume in a new session with a fresh flag; compare with a run never interrupted.
    let s = runner(&d, TestProblem::new(), false).resume(None).unwrap();
    assert_eq!(s.termination, TerminationReason::MaxGenerations);
    runner(&reference, TestProblem::new(), false).run(None).unwrap();
    assert_eq!(history_rows(&d), history_rows(&reference));
    assert!(state(&d).without_timings() == state(&reference).without_timings());
}

#[test]
fn resume_falls_back_to_the_previous_checkpoint_with_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("c");
    runner(&d, TestProblem::new(), false).run(Some(3)).unwrap();
    let cp = d.join(RunDir::CHECKPOINT);
    let text = std::fs::read_to_string(&cp).unwrap();
    std::fs::write(&cp, &text[..text.len() - 200]).unwrap();
    let s = runner(&d, TestProblem::new(), false).resume(Some(5)).unwrap();
    assert_eq!(s.generation, 5);
    assert_eq!(s.warnings.len(), 1);
    assert!(s.warnings[0].contains("checkpoint.ron") && s.warnings[0].contains("checkpoint.prev.ron"), "{}", s.warnings[0]);
    // history.csv was rewritten from the state, so its rows run 0..=5 once each.
    let gens: Vec<String> = history_rows(&d)[1..].iter().map(|r| r.split(',').next().unwrap().to_string()).collect();
    assert_eq!(gens, ["0", "1", "2", "3", "4", "5"]);
}

#[test]
fn resume_refuses_another_design_or_other_breeding_settings() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("x");
    runner(&d, TestProblem::new(), false).run(Some(1)).unwrap();
    let e = runner(&d, TestProblem::new(), false).with_design_hash("design-2").resume(None).unwrap_err();
    assert!(format!("{e:#}").contains("design changed"), "{e:#}");
    let rd = RunDir::open(&d).unwrap();
    let e = Runner::new(TestProblem::new(), GaSettings { population: 30, ..settings() }, rd, vec![])
        .with_design_hash("design-1")
        .resume(None)
        .unwrap_err();
    assert!(format!("{e:#}").contains("population"), "{e:#}");
    let mut other = TestProblem::new();
    other.inner = emvolve::ga::testfns::Rastrigin::new(2, 2);
    let e = runner(&d, other, false).resume(None).unwrap_err();
    assert!(format!("{e:#}").contains("gene space"), "{e:#}");
    // Stop rules and the generation limit may change.
    let rd = RunDir::open(&d).unwrap();
    let looser = GaSettings { generations: 3, stop: Stop { stagnation: Some(50), ..Stop::none() }, ..settings() };
    let s = Runner::new(TestProblem::new(), looser, rd, vec![]).with_design_hash("design-1").resume(None).unwrap();
    assert_eq!(s.generation, 3);
}

#[test]
fn stop_rules_end_the_run_with_their_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |name: &str, stop: Stop, gens: usize| {
        let rd = RunDir::create(tmp.path().join(name), false).unwrap();
        let s = GaSettings { generations: gens, stop, ..settings() };
        Runner::new(TestProblem::new(), s, rd, vec![]).run(None).unwrap()
    };
    let s = run("evals", Stop { max_evaluations: Some(60), ..Stop::none() }, 100);
    assert_eq!(s.termination, TerminationReason::MaxEvaluations);
    assert!(s.evaluations >= 60 && s.evaluations < 60 + 24);
    let s = run("target", Stop { target: Some(30.0), ..Stop::none() }, 100);
    assert_eq!(s.termination, TerminationReason::TargetFitness);
    assert!(s.best[0].objectives[0] <= 30.0);
    let s = run("stagnation", Stop { stagnation: Some(3), ..Stop::none() }, 400);
    assert_eq!(s.termination, TerminationReason::Stagnation);
    assert!(s.generation < 400);
    let s = run("wall", Stop { wall_seconds: Some(1e-9), ..Stop::none() }, 100);
    assert_eq!((s.termination, s.generation), (TerminationReason::WallTime, 0));
}

/// Collects what an observer writes, for assertions.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);
impl std::io::Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn progress_lines_and_inspection_of_a_finished_run() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("p");
    let out = Shared::default();
    let obs: Vec<Box<dyn Observer>> = vec![Box::new(ProgressObserver::with_writer(Box::new(out.clone())))];
    let rd = RunDir::create(&d, false).unwrap();
    let mut p = TestProblem::new();
    p.fail_if = |x| x[1] < -4.0;
    let s = Runner::new(p, settings(), rd, obs).run(None).unwrap();
    let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    for g in 0..=6 {
        assert!(text.contains(&format!("gen {g}/6: best ")), "missing generation {g}:\n{text}");
    }
    assert!(s.to_string().starts_with("stopped after generation 6 (reached the generation limit)"), "{s}");
    // The summary is the caller's to print: the progress lines do not repeat it.
    assert!(!text.contains("stopped after"), "{text}");
    let ins = inspect::inspect(&d, 3).unwrap();
    assert_eq!(ins.designs.len(), 3);
    assert_eq!(ins.designs[0].objectives, s.best[0].objectives);
    assert_eq!(ins.failures, s.failures);
    assert!(ins.to_table().contains("best 3 of"));
}

/// Why designs failed is counted by kind: per generation in the log line and in
/// history.csv's last columns (which add up to its `failures` column), per run in
/// `inspect`, whose count is the run's total (the log's is the generation's).
#[test]
fn failures_are_counted_by_kind_in_the_log_history_and_inspect() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("k");
    let out = Shared::default();
    let obs: Vec<Box<dyn Observer>> =
        vec![Box::new(ProgressObserver::with_writer(Box::new(out.clone()))), Box::new(emvolve::run::observe::CsvObserver::new())];
    let rd = RunDir::create(&d, false).unwrap();
    let mut p = TestProblem::new();
    p.fail_if = |x| x[1] < -4.0;
    let s = Runner::new(p, settings(), rd, obs).run(None).unwrap();
    assert!(s.failures > 0);
    let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    let first = text.lines().find(|l| l.contains("of them failed")).expect("a generation with failures");
    // "..., 3 of them failed (diverged 3); 7 failed in the run (...)"
    let before = first.split(" of them failed").next().unwrap();
    let n: usize = before.rsplit(", ").next().unwrap().parse().unwrap();
    let total: usize = first.split("; ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!(n > 0 && total >= n);
    assert!(
        first.contains(&format!(", {n} of them failed (diverged {n}); {total} failed in the run (emvolve inspect --failed lists them)")),
        "{first}"
    );
    // history.csv: the kinds are five columns after the timings (the farm's `workers`
    // column follows them), and add up to `failures` row by row.
    let csv = std::fs::read_to_string(d.join(RunDir::HISTORY)).unwrap();
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let k0 = head.iter().position(|c| *c == "failed_geometry").expect("a failed_geometry column");
    assert_eq!(head[k0..k0 + 5], ["failed_geometry", "failed_diverged", "failed_simulation", "failed_fitness", "failed_other"]);
    assert!(head[..k0].contains(&"cells_per_second"), "the kinds come after the timing columns: {head:?}");
    let col = |name: &str| head.iter().position(|c| *c == name).unwrap();
    let mut sum = 0;
    for l in lines {
        let c: Vec<&str> = l.split(',').collect();
        let kinds: Vec<usize> = c[k0..k0 + 5].iter().map(|v| v.parse().unwrap()).collect();
        assert_eq!(kinds.iter().sum::<usize>(), c[col("failures")].parse::<usize>().unwrap(), "{l}");
        assert_eq!(kinds[1], c[col("failures")].parse::<usize>().unwrap());
        sum += kinds[1];
    }
    assert_eq!(sum, s.failures);
    // inspect: the run's total, by kind, and every failed design with its reason and parameters.
    let ins = inspect::inspect(&d, 3).unwrap();
    assert_eq!(ins.failure_kinds.get("diverged"), Some(&s.failures));
    let table = ins.to_table();
    assert!(table.contains(&format!("designs simulated, {} of them failed (diverged {})", s.failures, s.failures)), "{table}");
    let failed = inspect::failed_designs(&state(&d));
    assert_eq!(failed.len(), s.failures);
    assert!(failed.iter().all(|f| f.kind == "diverged" && f.genes["x1"].as_f64().unwrap() < -4.0));
    let listed = inspect::failed_table(&failed);
    assert_eq!(listed.lines().filter(|l| l.contains("fields went non-finite at step 1234")).count(), s.failures, "{listed}");
    assert!(listed.starts_with(&format!("generation {} diverged: [", failed[0].generation)) && listed.contains("x1=-"), "{listed}");
}
