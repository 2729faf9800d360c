//! Bad input at the command line (issue 35): each ends in an error naming the
//! place and the cause, within seconds, with exit status 1 -- never a hang, an
//! abort, an overwritten run or a raw Debug value.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::cli::{bin, fixture, text};

/// Run `cmd` to its end, killed after `secs` (a hang fails the test, not CI).
fn within(mut cmd: Command, secs: u64) -> Output {
    let mut child = cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().expect("spawns");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            panic!("still running after {secs} s: {cmd:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn edited(dir: &Path, design: &str, from: &str, to: &str) -> String {
    let t = std::fs::read_to_string(design).unwrap();
    assert!(t.contains(from), "test setup: `{from}` not in {design}");
    let p = dir.join(Path::new(design).file_name().unwrap());
    std::fs::write(&p, t.replacen(from, to, 1)).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn mesh_of_a_nan_domain_ends_at_once_with_the_field_path() {
    // It used to loop forever at load.
    let tmp = tempfile::tempdir().unwrap();
    let p = edited(tmp.path(), "designs/patch_2g4.ron", "y: (-40, 40)", "y: (NaN, 40)");
    let mut c = bin();
    c.args(["mesh", &p, "--out", tmp.path().join("m").to_str().unwrap()]);
    let out = within(c, 30);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        format!("error: {p}: domain.y[0]: NaN is not a finite number: NaN and infinities are not allowed in a design file")
    );
}

#[test]
fn huge_padding_and_grids_over_the_address_space_limit_are_errors_not_aborts() {
    let tmp = tempfile::tempdir().unwrap();
    // pml: 100000000 aborted (SIGABRT) in Mesh::from_lines.
    let p = edited(tmp.path(), "designs/patch_2g4.ron", "Fdtd(mesh: Auto())", "Fdtd(mesh: Auto(), pml: 100000000)");
    let mut c = bin();
    c.args(["mesh", &p, "--out", tmp.path().join("m").to_str().unwrap()]);
    let out = within(c, 30);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("engine.pml: 100000000 cells of absorbing padding"), "{}", text(&out));
    // 0.07 mm cells over the patch: ~540 million cells, at least 14 GiB; under
    // a 4 GB address-space limit it must be refused from the count, naming the limit.
    let p = edited(tmp.path(), "tests/fixtures/uniform/patch_2g4.ron", "cell: 0.8", "cell: 0.07");
    let mut c = Command::new("sh");
    c.args(["-c", &format!("ulimit -v 4000000 && exec {} mesh {p} --out {}", env!("CARGO_BIN_EXE_emvolve"), tmp.path().join("u").display())]);
    let out = within(c, 60);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("engine.cell: the grid of") && t.contains("more than what the address-space limit (ulimit -v) leaves ("), "{t}");
    assert!(t.trim_end().ends_with("or raise the limit (ulimit -v)"), "{t}");
}

#[test]
fn resume_without_checkpoints_does_not_overwrite_the_history() {
    // Item 6: with both checkpoints of a finished run deleted, resume started over
    // and overwrote history.csv and best/.
    let tmp = tempfile::tempdir().unwrap();
    let design = fixture(tmp.path(), "gone", "Ga(population: 4, generations: 1, seed: 2)");
    let root = tmp.path().join("runs");
    let run = |args: &[&str]| {
        let mut c = bin();
        c.args(args);
        within(c, 120)
    };
    let out = run(&["run", design.to_str().unwrap(), "--backend", "cpu", "--quiet", "--runs-dir", root.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let dir = root.join("gone");
    let history = std::fs::read_to_string(dir.join("history.csv")).unwrap();
    let best = std::fs::read_to_string(dir.join("best/parameters.ron")).unwrap();
    std::fs::remove_file(dir.join("checkpoint.ron")).unwrap();
    std::fs::remove_file(dir.join("checkpoint.prev.ron")).unwrap();
    let d = dir.to_str().unwrap();
    let out = run(&["resume", d, "--backend", "cpu", "--quiet"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        format!(
            "error: {d} has no usable checkpoint (checkpoint.ron and checkpoint.prev.ron are missing or never completed a generation), \
             but it holds history.csv with 2 generations and a best design in best/: resuming would start the run over and overwrite them. \
             Move them away first, or use --force to start over"
        )
    );
    assert_eq!(std::fs::read_to_string(dir.join("history.csv")).unwrap(), history);
    assert_eq!(std::fs::read_to_string(dir.join("best/parameters.ron")).unwrap(), best);
    // With --force it starts over, and says so.
    let out = run(&["resume", d, "--backend", "cpu", "--quiet", "--force"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("warning: no checkpoint; starting the run over"), "{}", text(&out));
}

#[test]
fn inspect_in_a_read_only_run_directory_names_the_path_once() {
    // Item 7: it said only "Permission denied (os error 13)". Root ignores
    // permissions, so the child drops to `nobody` there.
    let tmp = tempfile::tempdir().unwrap();
    let design = fixture(tmp.path(), "ro", "Ga(population: 4, generations: 0, seed: 2)");
    let root = tmp.path().join("runs");
    let mut c = bin();
    c.args(["run", design.to_str().unwrap(), "--backend", "cpu", "--quiet", "--runs-dir", root.to_str().unwrap()]);
    let out = within(c, 120);
    assert!(out.status.success(), "{}", text(&out));
    let dir = root.join("ro");
    let is_root = euid() == 0;
    use std::os::unix::fs::PermissionsExt;
    for p in [tmp.path(), root.as_path()] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    for e in walk(&dir) {
        let mode = if e.is_dir() { 0o555 } else { 0o444 };
        std::fs::set_permissions(&e, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let mut c = if is_root {
        if Command::new("setpriv").arg("--version").output().is_err() {
            eprintln!("SKIP: running as root without setpriv: cannot make a directory read-only");
            return;
        }
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_emvolve")]);
        c
    } else {
        bin()
    };
    c.args(["inspect", dir.to_str().unwrap(), "--backend", "cpu", "--top", "1"]);
    let out = within(c, 120);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    for e in walk(&dir) {
        let mode = if e.is_dir() { 0o755 } else { 0o644 };
        let _ = std::fs::set_permissions(&e, std::fs::Permissions::from_mode(mode));
    }
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(err.contains(dir.to_str().unwrap()), "the path is missing: {err}");
    assert_eq!(err.matches("Permission denied").count(), 1, "{err}");
}

/// The directory and everything under it.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        if out[i].is_dir() {
            let more: Vec<_> = std::fs::read_dir(&out[i]).unwrap().map(|e| e.unwrap().path()).collect();
            out.extend(more);
        }
        i += 1;
    }
    out
}

fn euid() -> u32 {
    // `id -u` rather than libc: the tests use no unsafe code.
    let out = Command::new("id").arg("-u").output().expect("id runs");
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(1)
}
