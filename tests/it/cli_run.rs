//! The command line as a user drives it: simulate writes its files; a run of
//! six generations equals a run of three resumed for three more; a corrupt
//! checkpoint falls back to the previous one; an edited design is refused.

use std::path::Path;
use std::process::Command;

use crate::common::cli::{history, lab};

fn emvolve(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_emvolve")).args(args).output().expect("runs");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

const DESIGN: &str = "designs/wr28_iris_filter.ron";

/// The shipped design with a cap of 30,000 steps instead of its 25 ns: these
/// tests are about the command line, and the time cap lets mistuned random
/// candidates ring up to 5x longer.
fn quick_design(dir: &Path) -> std::path::PathBuf {
    let text = std::fs::read_to_string(DESIGN).unwrap();
    assert!(text.contains("max_time: 25e-9"), "the shipped cap changed");
    let path = dir.join("wr28_iris_filter.ron");
    std::fs::write(&path, text.replace("max_time: 25e-9", "max_steps: 30000")).unwrap();
    path
}

#[test]
fn simulate_writes_touchstone_plot_and_timeseries() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("sim");
    let (ok, text) = emvolve(&["simulate", DESIGN, "--backend", "cpu", "--set", "w1=4", "--out", out.to_str().unwrap()]);
    assert!(ok, "{text}");
    assert!(text.contains("midpoint") && text.contains("fitness"), "{text}");
    let s2p = std::fs::read_to_string(out.join("wr28_iris_filter.s2p")).unwrap();
    let rows: Vec<&str> = s2p.lines().filter(|l| !l.starts_with('!') && !l.starts_with('#')).collect();
    assert_eq!(rows.len(), 241);
    assert_eq!(rows[0].split_whitespace().count(), 9);
    assert!(out.join("sparams.png").exists() && out.join("timeseries_drive_in.csv").exists());
    let (ok, text) = emvolve(&["simulate", DESIGN, "--backend", "cpu", "--set", "w1=9"]);
    assert!(!ok && text.contains("w1") && text.contains("9"), "{text}");
}

#[test]
fn resumed_run_equals_uninterrupted_run_and_bad_checkpoints_are_handled() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_str().unwrap();
    let common = ["--backend", "cpu", "--quiet", "--population", "6", "--seed", "3", "--runs-dir", root];
    let design = quick_design(tmp.path());
    let design = design.to_str().unwrap();
    let mut a = vec!["run", design, "--name", "six", "--generations", "6"];
    a.extend(common);
    let (ok, text) = emvolve(&a);
    assert!(ok, "{text}");
    let mut b = vec!["run", design, "--name", "three", "--generations", "3"];
    b.extend(common);
    let (ok, text) = emvolve(&b);
    assert!(ok, "{text}");
    let three = tmp.path().join("three");
    let (ok, text) = emvolve(&["resume", three.to_str().unwrap(), "--more", "3", "--backend", "cpu", "--quiet"]);
    assert!(ok, "{text}");
    let (h6, h33) = (history(&tmp.path().join("six")), history(&three));
    assert_eq!(h6.len(), 7);
    assert_eq!(h6, h33);
    let best = |d: &Path| std::fs::read_to_string(d.join("best/parameters.ron")).unwrap();
    assert_eq!(best(&tmp.path().join("six")), best(&three));
    // The same name again is refused, and nothing is lost.
    let (ok, text) = emvolve(&b);
    assert!(!ok && text.contains("exists"), "{text}");
    assert_eq!(history(&three), h33);
    // A truncated checkpoint: resume falls back to checkpoint.prev.ron and says so.
    let cp = three.join("checkpoint.ron");
    let bytes = std::fs::read(&cp).unwrap();
    std::fs::write(&cp, &bytes[..bytes.len() / 2]).unwrap();
    let (ok, text) = emvolve(&["resume", three.to_str().unwrap(), "--more", "1", "--backend", "cpu", "--quiet"]);
    assert!(ok, "{text}");
    assert!(text.contains("checkpoint.prev.ron"), "{text}");
    // Inspect reads the run and writes per-design files.
    let (ok, text) = emvolve(&["inspect", three.to_str().unwrap(), "--top", "2", "--backend", "cpu"]);
    assert!(ok, "{text}");
    assert!(text.contains("#1 fitness") && three.join("inspect/rank_01/sparams.png").exists(), "{text}");
    // An edited design.ron is refused without --force.
    let dr = three.join("design.ron");
    let t = std::fs::read_to_string(&dr).unwrap();
    std::fs::write(&dr, t.replace("Three-cavity", "Edited three-cavity")).unwrap();
    let (ok, text) = emvolve(&["resume", three.to_str().unwrap(), "--more", "1", "--backend", "cpu", "--quiet"]);
    assert!(!ok && text.contains("edited"), "{text}");
}

#[test]
fn two_objectives_run_nsga2_and_keep_a_pareto_front() {
    // The iris filter with a second objective: the filter's length.
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(quick_design(tmp.path())).unwrap().replace("constraints: [", "objectives: [Goals, Minimize(\"2*l1 + l2\")],\n    constraints: [");
    let path = tmp.path().join("short_filter.ron");
    std::fs::write(&path, &text).unwrap();
    let root = tmp.path().to_str().unwrap();
    // A fitness target means nothing with two objectives: a value asked for is
    // refused before any file is written (the default, 0, goes unused).
    // The shipped block is a single-objective surrogate: NSGA-II is the GA's.
    let (ok, out) = emvolve(&["run", path.to_str().unwrap(), "--name", "mo", "--optimiser", "ga", "--backend", "cpu", "--runs-dir", root, "--target", "0.5"]);
    assert!(!ok && out.contains("stop.target") && out.contains("short_filter.ron"), "{out}");
    assert!(!tmp.path().join("mo").exists());
    let (ok, text) = emvolve(&[
        "run", path.to_str().unwrap(), "--name", "mo", "--optimiser", "ga", "--generations", "3", "--population", "8", "--backend", "cpu", "--quiet", "--runs-dir", root,
    ]);
    assert!(ok, "{text}");
    assert!(text.contains("NSGA-II"), "{text}");
    let dir = tmp.path().join("mo");
    assert!(dir.join("plots/pareto.png").exists());
    let (ok, text) = emvolve(&["inspect", dir.to_str().unwrap(), "--json", "--no-simulate"]);
    assert!(ok, "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["kind"], "pareto");
    let front: Vec<(f64, f64)> = v["designs"].as_array().unwrap().iter().map(|d| (d["objectives"][0].as_f64().unwrap(), d["objectives"][1].as_f64().unwrap())).collect();
    assert!(!front.is_empty());
    // No member of the reported front dominates another.
    for a in &front {
        for b in &front {
            assert!(!(a.0 <= b.0 && a.1 <= b.1 && (a.0 < b.0 || a.1 < b.1)), "{a:?} dominates {b:?}");
        }
    }
}

#[test]
fn bench_rejects_a_bad_tile_origin_on_every_backend() {
    // The CPU has no tiles, but a malformed --origin is still an error that names the option.
    let (ok, text) = lab(&["bench", "--n", "8", "--population", "0", "--steps", "2", "--origin", "9"]);
    assert!(!ok && text.contains("--origin") && text.contains("expected auto or X,Y"), "{text}");
    let (ok, text) = lab(&["bench", "--design", DESIGN, "--generation", "1", "--origin", "a,1"]);
    assert!(!ok && text.contains("--origin: origin 'a,1'"), "{text}");
    let (ok, text) = lab(&["bench", "--n", "8", "--population", "0", "--steps", "2", "--origin", "0,0", "--origin", "auto"]);
    assert!(ok, "{text}");
}

#[test]
fn the_users_bench_has_the_users_options_and_the_lab_has_the_knobs() {
    // The user's `emvolve bench`: the workloads and where to run them, with
    // every command's defaults; the kernel-tuning knobs and the developer
    // harnesses are emvolve-lab's.
    let (ok, help) = emvolve(&["bench", "--help"]);
    assert!(ok, "{help}");
    for opt in ["--design", "--generation", "--backend", "--gpus", "--steps", "--population", "--engine"] {
        assert!(help.contains(opt), "{opt} missing from emvolve bench --help:\n{help}");
    }
    for knob in ["--tiles", "--origin", "--scheme", "--lean", "--slim", "--zchunks", "--paths", "--tlm-shapes", "--onchip-threads", "--graphs"] {
        assert!(!help.contains(knob), "{knob} in emvolve bench --help:\n{help}");
    }
    assert!(help.contains("[default: auto]") && help.contains("[default: all]"), "{help}");
    let (ok, text) = emvolve(&["bench", "--n", "8", "--population", "0", "--steps", "2", "--tiles", "32x8"]);
    assert!(!ok && text.contains("--tiles"), "{text}");
    let (ok, text) = emvolve(&["dev", "kernel-emu"]);
    assert!(!ok && text.contains("unrecognized subcommand 'dev'"), "{text}");
    let (ok, help) = lab(&["bench", "--help"]);
    assert!(ok && help.contains("--tiles") && help.contains("--origin") && help.contains("--design"), "{help}");
    let (ok, help) = lab(&["--help"]);
    assert!(ok && ["bench", "device-check", "kernel-emu", "tlm-emu"].iter().all(|c| help.contains(c)), "{help}");
}

/// `emvolve` run in directory `cwd`.
fn emvolve_in(cwd: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_emvolve")).current_dir(cwd).args(args).output().expect("runs");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

/// Neither `simulate` nor `plot` replaces earlier results unannounced: a
/// second simulate goes to a numbered directory and says so, an `--out` that
/// holds files is refused without `--force`, and `plot` writes into a
/// directory named after its file, not over the `sparams.png` beside it.
#[test]
fn simulate_and_plot_never_overwrite_silently() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    let design = Path::new(env!("CARGO_MANIFEST_DIR")).join(DESIGN);
    let design = design.to_str().unwrap();
    let (ok, text) = emvolve_in(cwd, &["simulate", design, "--backend", "cpu", "--set", "w1=4"]);
    assert!(ok && text.contains("output: runs/wr28_iris_filter-simulate\n"), "{text}");
    let first = cwd.join("runs/wr28_iris_filter-simulate");
    let s2p = std::fs::read(first.join("wr28_iris_filter.s2p")).unwrap();
    let png = std::fs::read(first.join("sparams.png")).unwrap();
    let (ok, text) = emvolve_in(cwd, &["simulate", design, "--backend", "cpu", "--set", "w1=4.5"]);
    assert!(ok, "{text}");
    assert!(
        text.contains("runs/wr28_iris_filter-simulate holds an earlier result, kept; writing into runs/wr28_iris_filter-simulate-2\n")
            && text.contains("output: runs/wr28_iris_filter-simulate-2\n"),
        "{text}"
    );
    assert_eq!(std::fs::read(first.join("wr28_iris_filter.s2p")).unwrap(), s2p, "the first result was replaced");
    assert_ne!(std::fs::read(cwd.join("runs/wr28_iris_filter-simulate-2/wr28_iris_filter.s2p")).unwrap(), s2p);
    // An --out holding files: refused, nothing written; --force replaces, saying so.
    let (ok, text) = emvolve_in(cwd, &["simulate", design, "--backend", "cpu", "--out", "runs/wr28_iris_filter-simulate"]);
    assert!(
        !ok && text.contains(
            "runs/wr28_iris_filter-simulate already holds files (an earlier result?): name another --out, or add --force to replace them"
        ),
        "{text}"
    );
    assert_eq!(std::fs::read(first.join("wr28_iris_filter.s2p")).unwrap(), s2p);
    // plot: into wr28_iris_filter-plots/ beside the file; the simulate's own plot stays.
    let (ok, text) = emvolve_in(cwd, &["plot", "runs/wr28_iris_filter-simulate/wr28_iris_filter.s2p"]);
    assert!(ok && text.contains("runs/wr28_iris_filter-simulate/wr28_iris_filter-plots/sparams.png"), "{text}");
    // With the file's resonances and the power balance of its two ports.
    for f in ["resonances.json", "loss.png", "loss.csv"] {
        assert!(text.contains(&format!("runs/wr28_iris_filter-simulate/wr28_iris_filter-plots/{f}")), "{f}: {text}");
    }
    assert_eq!(std::fs::read(first.join("sparams.png")).unwrap(), png, "plot drew over the simulate's sparams.png");
    let (ok, text) = emvolve_in(cwd, &["plot", "runs/wr28_iris_filter-simulate/wr28_iris_filter.s2p"]);
    assert!(
        ok && text.contains("redrawing the plots of an earlier `plot` of this file in runs/wr28_iris_filter-simulate/wr28_iris_filter-plots"),
        "{text}"
    );
    let (ok, text) = emvolve_in(cwd, &["plot", "runs/wr28_iris_filter-simulate/wr28_iris_filter.s2p", "--out", "runs/wr28_iris_filter-simulate-2"]);
    assert!(!ok && text.contains("runs/wr28_iris_filter-simulate-2 already holds files"), "{text}");
}
