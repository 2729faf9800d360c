//! Stop rules changed on resume, and simulations cut off by the step cap, through
//! the binary on the tiny fixture design.

use crate::common;

use common::cli::*;
use emvolve::ga::TerminationReason;
use emvolve::run::checkpoint;

/// A stagnated run continues with `resume --more`, counting stagnation afresh;
/// a run at its evaluation limit says which option lifts it, and does when
/// given; each change is recorded and shown by `inspect`.
#[test]
fn resume_changes_stop_rules_and_continues_finished_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_str().unwrap();
    let design = fixture(tmp.path(), "limits", "Ga(population: 6, generations: 30, seed: 8, stop: (target: None, stagnation: 1))");
    let design = design.to_str().unwrap();

    let (ok, text) = emvolve(&["run", design, "--backend", "cpu", "--quiet", "--runs-dir", root, "--name", "stag"]);
    assert!(ok && text.contains("(the best stopped improving)"), "{text}");
    let dir = tmp.path().join("stag");
    let st = checkpoint::load(&dir).unwrap().state;
    let g = st.generation;
    // The fixture's simulations all reach their decay target: recorded, not flagged.
    assert!(st.cache.values().all(|e| e.decay.is_some_and(|d| !d.truncated && d.reached_db <= d.target_db)));
    let (ok, text) = emvolve(&["resume", dir.to_str().unwrap(), "--more", "3", "--stagnation", "5", "--backend", "cpu", "--quiet"]);
    assert!(ok, "{text}");
    let st = checkpoint::load(&dir).unwrap().state;
    assert_eq!(st.generation, g + 3, "{text}");
    assert_eq!(st.termination, Some(TerminationReason::MaxGenerations));
    let changes: Vec<&str> = st.changes.iter().map(|c| c.change.as_str()).collect();
    assert_eq!(changes, [format!("generations 30 -> {}", g + 3), "stop.stagnation 1 -> 5".into(), format!("stagnation counted afresh from generation {g}")]);
    assert!(st.changes.iter().all(|c| c.generation == g));
    // Stagnation alone, unchanged: still goes on (counted afresh), as far as the new limit.
    let (ok, text) = emvolve(&["run", design, "--backend", "cpu", "--quiet", "--runs-dir", root, "--name", "stag2"]);
    assert!(ok, "{text}");
    let dir2 = tmp.path().join("stag2");
    let (ok, text) = emvolve(&["resume", dir2.to_str().unwrap(), "--more", "2", "--backend", "cpu", "--quiet"]);
    assert!(ok && !text.contains("nothing was bred"), "{text}");
    assert!(history(&dir2).len() > g + 1, "{text}");

    // At the evaluation limit, `--more` alone cannot breed: an error naming the option.
    let (ok, text) = emvolve(&["run", design, "--backend", "cpu", "--quiet", "--runs-dir", root, "--name", "evals", "--max-evaluations", "10", "--stagnation", "none"]);
    assert!(ok && text.contains("(reached the evaluation limit)"), "{text}");
    let dir3 = tmp.path().join("evals");
    let before = history(&dir3);
    let (ok, text) = emvolve(&["resume", dir3.to_str().unwrap(), "--more", "2", "--backend", "cpu", "--quiet"]);
    assert!(!ok && text.contains("nothing was bred") && text.contains("--max-evaluations none"), "{text}");
    assert_eq!(history(&dir3), before, "a refused resume changed the history");
    assert!(checkpoint::load(&dir3).unwrap().state.changes.is_empty(), "a refused resume recorded a change");
    let (ok, text) = emvolve(&["resume", dir3.to_str().unwrap(), "--more", "2", "--max-evaluations", "none", "--backend", "cpu", "--quiet"]);
    assert!(ok, "{text}");
    assert_eq!(history(&dir3).len(), before.len() + 2);
    let (ok, text) = emvolve(&["inspect", dir3.to_str().unwrap(), "--no-simulate"]);
    assert!(ok && text.contains("stop.max_evaluations 10 -> none"), "{text}");
    // Bad values are named.
    let (ok, text) = emvolve(&["resume", dir3.to_str().unwrap(), "--stagnation", "soon"]);
    assert!(!ok && text.contains("`soon` is neither a number nor `none`"), "{text}");
    let (ok, text) = emvolve(&["resume", dir3.to_str().unwrap(), "--stagnation", "0", "--backend", "cpu"]);
    assert!(!ok && text.contains("stop.stagnation"), "{text}");
}

/// A step cap below what the designs need: every simulation is truncated. It is
/// said on the console, in the Touchstone file, fitness.json, history.csv,
/// the summary and inspect; the run goes on.
#[test]
fn truncated_simulations_are_flagged_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_str().unwrap();
    let design = fixture(tmp.path(), "capped", "Ga(population: 6, generations: 2, seed: 3, stop: (target: None, stagnation: None))");
    let text = std::fs::read_to_string(&design).unwrap().replace("max_steps: 6000", "max_steps: 300");
    std::fs::write(&design, text).unwrap();
    let design = design.to_str().unwrap();

    let out = tmp.path().join("sim");
    let (ok, text) = emvolve(&["simulate", design, "--backend", "cpu", "--out", out.to_str().unwrap()]);
    assert!(ok, "{text}");
    assert!(text.contains("WARNING: truncated: step cap reached with the energy at") && text.contains("raise the engine's max_steps"), "{text}");
    let s2p = std::fs::read_to_string(out.join("capped.s2p")).unwrap();
    assert!(s2p.lines().any(|l| l.starts_with("! WARNING: truncated")), "{s2p}");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("fitness.json")).unwrap()).unwrap();
    assert_eq!(json["decay"]["truncated"], true);
    assert_eq!(json["decay"]["target_db"], -30.0);
    assert!(json["decay"]["reached_db"].as_f64().unwrap() > -30.0);

    let (ok, text) = emvolve(&["run", design, "--backend", "cpu", "--quiet", "--runs-dir", root]);
    assert!(ok, "{text}");
    assert!(text.contains("truncated at the step cap") && text.contains("designs hit the step cap"), "{text}");
    let dir = tmp.path().join("capped");
    let csv = std::fs::read_to_string(dir.join("history.csv")).unwrap();
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let (t, n) = (head.iter().position(|c| *c == "truncated").unwrap(), head.iter().position(|c| *c == "new_evaluations").unwrap());
    for row in csv.lines().skip(1) {
        let c: Vec<&str> = row.split(',').collect();
        assert_eq!(c[t], c[n], "every new design was truncated: {row}");
    }
    let st = checkpoint::load(&dir).unwrap().state;
    assert!(st.cache.values().all(|e| e.is_truncated() && e.decay.unwrap().reached_db > -30.0));
    let (ok, text) = emvolve(&["inspect", dir.to_str().unwrap(), "--top", "1", "--backend", "cpu"]);
    assert!(ok && text.contains("WARNING: truncated: step cap reached"), "{text}");
    let s2p = std::fs::read_to_string(dir.join("inspect/rank_01/capped.s2p")).unwrap();
    assert!(s2p.contains("! WARNING: truncated"), "{s2p}");
    let (ok, text) = emvolve(&["inspect", dir.to_str().unwrap(), "--top", "1", "--json", "--no-simulate"]);
    assert!(ok, "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["designs"][0]["decay"]["truncated"], true);
}
